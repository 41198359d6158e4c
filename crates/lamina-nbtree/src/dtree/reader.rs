//! An open, finished d-tree. Opening reads the footer, the Bloom filter and every internal
//! node (the paper caches non-leaf nodes and Bloom filters in memory, section 6.2) and keeps
//! the leaves' first keys and places, so a point lookup is a Bloom check, a binary search in
//! memory and exactly one leaf read (through a read-only map of the file when the backend
//! offers one), its checksum checked.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lamina_core::codec::{Decode, DecodeError, Reader};
use lamina_core::{Error, Result};
use lamina_storage::backend::io_error_kind;
use lamina_storage::bloom::Bloom;
use lamina_storage::{OpenMode, ReadMap, Storage, StorageFile};

use super::cursor::DTreeCursor;
use super::format::{
    FOOTER_BYTES, Footer, NODE_HEADER_BYTES, NodeHeader, NodeKind, file_name, open_node,
};
use super::node::{children, leaf_entries};
use super::writer::leaf_pages_max;
use crate::entry::Slot;

/// The leaves' first keys and places, in key order. The first leaf's key is kept empty (below
/// every key): a key below the d-tree's first key is looked for in the first leaf.
#[derive(Debug, Default)]
pub(crate) struct LeafIndex {
    keys: Vec<u8>,
    key_ends: Vec<usize>,
    places: Vec<(u64, u64)>,
}

impl LeafIndex {
    /// Appends the next leaf.
    pub(crate) fn push(&mut self, first_key: &[u8], page: u64, pages: u64) {
        if !self.places.is_empty() {
            self.keys.extend_from_slice(first_key);
        }
        self.key_ends.push(self.keys.len());
        self.places.push((page, pages));
    }

    /// Leaves.
    pub(crate) fn len(&self) -> usize {
        self.places.len()
    }

    /// The first key of leaf `i` (empty for leaf 0).
    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.key_ends[i - 1] };
        &self.keys[start..self.key_ends[i]]
    }

    /// Leaf `i`'s first page and pages.
    pub(crate) fn place(&self, i: usize) -> (u64, u64) {
        self.places[i]
    }

    /// The leaf that holds `key` if any does: the last one whose first key is at most `key`.
    pub(crate) fn find(&self, key: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.checked_sub(1)
    }

    fn memory_bytes(&self) -> u64 {
        (self.keys.capacity() + self.key_ends.capacity() * 8 + self.places.capacity() * 16) as u64
    }
}

/// An open, finished d-tree.
pub struct DTree {
    storage: Arc<dyn Storage>,
    file: Arc<dyn StorageFile>,
    path: PathBuf,
    map: Option<ReadMap>,
    pub(super) footer: Footer,
    pub(super) bloom: Bloom,
    pub(super) leaves: LeafIndex,
    remove_when_unused: AtomicBool,
}

impl fmt::Debug for DTree {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DTree")
            .field("path", &self.path)
            .field("entries", &self.footer.entries)
            .field("leaves", &self.footer.leaves)
            .field("height", &self.footer.height)
            .field("mapped", &self.map.is_some())
            .finish_non_exhaustive()
    }
}

/// Missing files and reads past the end are damage to the d-tree: [`Error::Corruption`].
fn missing_is_corruption(path: &Path, offset: u64, err: Error) -> Error {
    match io_error_kind(&err) {
        Some(std::io::ErrorKind::NotFound | std::io::ErrorKind::UnexpectedEof) => {
            Error::corruption(path, offset, format!("d-tree file missing or short: {err}"))
        }
        _ => err,
    }
}

impl DTree {
    /// Opens d-tree `id`; a missing, short or damaged file is `Corruption` naming it.
    pub fn open(storage: Arc<dyn Storage>, id: u64) -> Result<Arc<DTree>> {
        let name = file_name(id);
        let path = storage.path_of(&name);
        let file = storage
            .open(&name, OpenMode::Existing)
            .map_err(|e| missing_is_corruption(&path, 0, e))?;
        let len = file.len()?;
        if len < FOOTER_BYTES as u64 {
            return Err(Error::corruption(&path, 0, format!("{len} bytes: no room for a footer")));
        }
        let footer_at = len - FOOTER_BYTES as u64;
        let mut bytes = [0u8; FOOTER_BYTES];
        file.read_exact_at(footer_at, &mut bytes)
            .map_err(|e| missing_is_corruption(&path, footer_at, e))?;
        let footer = Footer::decode(&bytes).map_err(|e| e.at(&path, footer_at))?;
        if footer.dtree_id != id {
            return Err(Error::corruption(
                &path,
                footer_at,
                format!("footer of d-tree {:016x}", footer.dtree_id),
            ));
        }
        if footer.file_bytes() != len {
            return Err(Error::corruption(
                &path,
                footer_at,
                format!("file of {len} bytes, its footer says {}", footer.file_bytes()),
            ));
        }
        // A map is only a faster way to read: without one (or if mapping fails) reads go
        // through the file, which reports whatever the failure is.
        let map = file.map_read(len).ok().flatten();
        let mut tree = DTree {
            storage,
            file,
            path,
            map,
            footer,
            bloom: Bloom::new(0, 0),
            leaves: LeafIndex::default(),
            remove_when_unused: AtomicBool::new(false),
        };
        tree.bloom = tree.read_bloom()?;
        tree.leaves = tree.read_index()?;
        Ok(Arc::new(tree))
    }

    /// The d-tree a writer just finished (nothing read back).
    pub(super) fn from_written(
        storage: Arc<dyn Storage>,
        file: Arc<dyn StorageFile>,
        path: PathBuf,
        footer: Footer,
        bloom: Bloom,
        leaves: LeafIndex,
    ) -> Arc<DTree> {
        assert_eq!(leaves.len() as u64, footer.leaves);
        let map = file.map_read(footer.file_bytes()).ok().flatten();
        let remove_when_unused = AtomicBool::new(false);
        Arc::new(DTree { storage, file, path, map, footer, bloom, leaves, remove_when_unused })
    }

    /// Its id.
    pub fn id(&self) -> u64 {
        self.footer.dtree_id
    }

    /// Entries.
    pub fn entries(&self) -> u64 {
        self.footer.entries
    }

    /// Delete entries among them.
    pub fn deletes(&self) -> u64 {
        self.footer.deletes
    }

    /// Sum of the entries' `entry_bytes`.
    pub fn bytes(&self) -> u64 {
        self.footer.entry_bytes
    }

    /// The file's length.
    pub fn file_bytes(&self) -> u64 {
        self.footer.file_bytes()
    }

    /// Levels of nodes (0: empty, 1: the root is a leaf).
    pub fn height(&self) -> u32 {
        self.footer.height
    }

    /// Memory held for lookups: the Bloom filter and the leaves' first keys and places.
    pub fn memory_bytes(&self) -> u64 {
        self.bloom.memory_bytes() + self.leaves.memory_bytes()
    }

    /// The file's path (errors name it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the Bloom filter lets `key` be present.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.bloom.may_contain(key)
    }

    /// The entry of `key`: `Some(Some(v))` a put, `Some(None)` a delete, `None` absent.
    pub fn get(&self, key: &[u8]) -> Result<Option<Slot>> {
        if !self.bloom.may_contain(key) {
            return Ok(None);
        }
        let Some(leaf) = self.leaves.find(key) else {
            return Ok(None);
        };
        let (page, pages) = self.leaves.place(leaf);
        self.with_node(page, pages, |header, payload| {
            expect_kind(&header, NodeKind::Leaf, 0)?;
            for entry in leaf_entries(payload, header.entries) {
                let entry = entry.map_err(|e| shift(e, NODE_HEADER_BYTES))?;
                match entry.key.cmp(key) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Equal => return Ok(Some(entry.value.map(<[u8]>::to_vec))),
                    std::cmp::Ordering::Greater => break,
                }
            }
            Ok(None)
        })
    }

    /// Entries with keys at or after `from` (all: `None`), in key order.
    pub fn cursor(self: &Arc<Self>, from: Option<&[u8]>) -> Result<DTreeCursor> {
        Ok(DTreeCursor::new(Arc::clone(self), from))
    }

    /// Remove the file once the last reference to this d-tree is dropped.
    pub fn remove_when_unused(&self) {
        self.remove_when_unused.store(true, Ordering::Release);
    }

    /// The page size.
    pub(super) fn page_bytes(&self) -> u64 {
        u64::from(self.footer.page_bytes)
    }

    /// The map of the whole file, if the backend offers one.
    pub(super) fn map(&self) -> Option<&ReadMap> {
        self.map.as_ref()
    }

    /// Reads `len` bytes at `offset` (missing bytes are corruption).
    pub(super) fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.file
            .read_exact_at(offset, buf)
            .map_err(|e| missing_is_corruption(&self.path, offset, e))
    }

    /// Calls `f` with the checked node of `pages` pages at `page` (from the map, or read into
    /// a buffer); decode errors become corruption at the node's offset.
    pub(super) fn with_node<R>(
        &self,
        page: u64,
        pages: u64,
        f: impl FnOnce(NodeHeader, &[u8]) -> Result<R, DecodeError>,
    ) -> Result<R> {
        let offset = page * self.page_bytes();
        let len = usize::try_from(pages * self.page_bytes()).expect("nodes are small");
        let check = |bytes: &[u8]| {
            open_node(bytes, page, self.id()).and_then(|(header, payload)| {
                if header.pages(self.footer.page_bytes) != pages {
                    return Err(DecodeError::new(12, format!("node is not {pages} pages long")));
                }
                f(header, payload)
            })
        };
        let result = match self.map.as_ref().and_then(|m| m.get(offset, len)) {
            Some(bytes) => check(bytes),
            None => {
                let mut buf = vec![0u8; len];
                self.read_at(offset, &mut buf)?;
                check(&buf)
            }
        };
        result.map_err(|e| e.at(&self.path, offset))
    }

    fn read_bloom(&self) -> Result<Bloom> {
        let offset = self.footer.bloom_page * self.page_bytes();
        let len = usize::try_from(self.footer.bloom_bytes).map_err(|_| {
            Error::corruption(&self.path, offset, "Bloom filter larger than memory")
        })?;
        let mut buf = vec![0u8; len];
        self.read_at(offset, &mut buf)?;
        if lamina_core::checksum::masked_crc32c(&buf) != self.footer.bloom_crc {
            return Err(Error::corruption(&self.path, offset, "Bloom filter checksum mismatch"));
        }
        let mut r = Reader::new(&buf);
        let bloom = Bloom::decode_from(&mut r)
            .and_then(|b| r.finish().map(|()| b))
            .map_err(|e| e.at(&self.path, offset))?;
        Ok(bloom)
    }

    /// Reads the internal nodes level by level from the root, checking that each level's
    /// children ascend by key and by place and lie before their parent, and collects the
    /// leaves.
    fn read_index(&self) -> Result<LeafIndex> {
        let mut index = LeafIndex::default();
        let f = &self.footer;
        let leaf_pages = leaf_pages_max(f.page_bytes);
        match f.height {
            0 => return Ok(index),
            1 => {
                if f.root_pages > leaf_pages {
                    return Err(self.footer_error(format!("leaf of {} pages", f.root_pages)));
                }
                index.push(&[], f.root_page, f.root_pages);
                return Ok(index);
            }
            _ => {}
        }
        // The nodes of the level being read: (page, pages, first key its parent gives; none
        // for the root, which has no parent: the empty key is a key like any other).
        let mut level_nodes: Vec<(u64, u64, Option<Vec<u8>>)> =
            vec![(f.root_page, f.root_pages, None)];
        let mut internal_nodes = 0u64;
        for level in (1..f.height).rev() {
            let mut next = Vec::new();
            // Children of the whole level ascend by key and by place.
            let mut last_key: Vec<u8> = Vec::new();
            let mut end_page = 0u64;
            for (node_no, (page, pages, parent_key)) in level_nodes.iter().enumerate() {
                internal_nodes += 1;
                if internal_nodes > f.internal_nodes {
                    return Err(self.footer_error("more internal nodes than the footer says"));
                }
                self.with_node(*page, *pages, |header, payload| {
                    expect_kind(&header, NodeKind::Internal, level as u8)?;
                    for (i, child) in children(payload, header.entries).enumerate() {
                        let at = NODE_HEADER_BYTES;
                        let child = child.map_err(|e| shift(e, at))?;
                        let bad = |reason: String| Err(DecodeError::new(at, reason));
                        // The root has no parent key; every other node's first key is the
                        // one its parent holds for it.
                        if i == 0 && parent_key.as_deref().is_some_and(|p| child.first_key != p) {
                            return bad("first key differs from the parent's".into());
                        }
                        if (node_no > 0 || i > 0) && child.first_key <= &last_key[..] {
                            return bad("child keys do not ascend".into());
                        }
                        let child_end = child.page.checked_add(child.pages);
                        if child.page < end_page || child_end.is_none_or(|e| e > *page) {
                            return bad(format!("child at page {} out of place", child.page));
                        }
                        end_page = child.page + child.pages;
                        last_key.clear();
                        last_key.extend_from_slice(child.first_key);
                        if level == 1 {
                            if child.pages > leaf_pages {
                                return bad(format!("leaf of {} pages", child.pages));
                            }
                            index.push(child.first_key, child.page, child.pages);
                        } else {
                            next.push((child.page, child.pages, Some(child.first_key.to_vec())));
                        }
                    }
                    Ok(())
                })?;
            }
            level_nodes = next;
        }
        if internal_nodes != f.internal_nodes || index.len() as u64 != f.leaves {
            return Err(self.footer_error(format!(
                "{internal_nodes} internal nodes and {} leaves reachable",
                index.len()
            )));
        }
        Ok(index)
    }

    pub(super) fn footer_error(&self, reason: impl fmt::Display) -> Error {
        Error::corruption(
            &self.path,
            self.file_bytes() - FOOTER_BYTES as u64,
            format!("footer: {reason}"),
        )
    }
}

/// A payload decode error, moved to be relative to the node's start.
pub(super) fn shift(e: DecodeError, by: usize) -> DecodeError {
    DecodeError::new(e.offset + by, e.reason)
}

/// Refuses a node of another kind or level than its parent (or the footer) says.
pub(super) fn expect_kind(
    header: &NodeHeader,
    kind: NodeKind,
    level: u8,
) -> Result<(), DecodeError> {
    if header.kind != kind || header.level != level {
        return Err(DecodeError::new(
            4,
            format!(
                "{:?} node at level {}, expected {kind:?} at level {level}",
                header.kind, header.level
            ),
        ));
    }
    Ok(())
}

impl Drop for DTree {
    fn drop(&mut self) {
        if self.remove_when_unused.load(Ordering::Acquire) {
            self.map = None;
            // A failed removal leaves an unreferenced file, which the engine's recovery
            // removes (no s-node names it); nothing else can be done from a destructor.
            let _ = self.storage.remove(&file_name(self.id()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_are_shared_and_writers_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<DTree>();
        send::<super::super::DTreeWriter>();
        send::<DTreeCursor>();
    }

    #[test]
    fn the_leaf_index_finds_the_last_leaf_at_or_below_a_key() {
        let mut index = LeafIndex::default();
        assert_eq!(index.find(b"a"), None);
        index.push(b"c", 0, 1);
        index.push(b"f", 1, 2);
        index.push(b"k", 4, 1);
        assert_eq!((index.key(0), index.key(1), index.place(1)), (&b""[..], &b"f"[..], (1, 2)));
        let found: Vec<_> =
            [&b"a"[..], b"c", b"e", b"f", b"g", b"k", b"z"].iter().map(|k| index.find(k)).collect();
        assert_eq!(found, [Some(0), Some(0), Some(0), Some(1), Some(1), Some(2), Some(2)]);
    }
}
