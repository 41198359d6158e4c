//! A forward cursor over a d-tree: the leaves in file order (which is key order, section 4.1),
//! found through the in-memory leaf index, so internal nodes are never read. Without a map of
//! the file, leaves are read in chunks that grow from one leaf to [`CURSOR_READ_BYTES_MAX`]
//! (a short scan reads little, a flush's merge reads sequentially in large pieces).

use std::sync::Arc;

use lamina_core::Result;
use lamina_core::codec::{DecodeError, Reader};

use super::format::{NODE_HEADER_BYTES, NodeKind, open_node};
use super::node::LeafEntry;
use super::reader::{DTree, expect_kind};
use crate::entry::Slot;

/// Largest read of a cursor without a map (several leaves, and the internal nodes between
/// them, in one call).
pub const CURSOR_READ_BYTES_MAX: u64 = 256 << 10;

/// A forward cursor over a d-tree.
#[derive(Debug)]
pub struct DTreeCursor {
    tree: Arc<DTree>,
    /// Entries below this key are skipped (it is dropped once passed).
    from: Option<Vec<u8>>,
    next_leaf: usize,
    /// Bytes of pages `chunk_page..chunk_page + chunk_pages` (unused with a map).
    chunk: Vec<u8>,
    chunk_page: u64,
    chunk_pages: u64,
    /// Size of the next chunk read.
    readahead_bytes: u64,
    /// The current leaf's payload: byte range in the chunk or the map, and the file offset of
    /// its node (for errors).
    payload_end: usize,
    pos: usize,
    entries_left: u32,
    node_offset: u64,
    payload_start: usize,
    done: bool,
}

impl DTreeCursor {
    pub(super) fn new(tree: Arc<DTree>, from: Option<&[u8]>) -> DTreeCursor {
        let next_leaf = from.and_then(|k| tree.leaves.find(k)).unwrap_or(0);
        let done = tree.leaves.len() == 0;
        let readahead_bytes = tree.page_bytes();
        DTreeCursor {
            tree,
            from: from.map(<[u8]>::to_vec),
            next_leaf,
            chunk: Vec::new(),
            chunk_page: 0,
            chunk_pages: 0,
            readahead_bytes,
            payload_end: 0,
            pos: 0,
            entries_left: 0,
            node_offset: 0,
            payload_start: 0,
            done,
        }
    }

    /// The next entry.
    pub fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Slot)>> {
        self.next_with(|e| (e.key.to_vec(), e.value.map(<[u8]>::to_vec)))
    }

    /// The next entry, copied into `key` and `value` (reusing their allocations): `Some(true)`
    /// a put, `Some(false)` a delete (`value` left empty), `None` at the end.
    pub fn next_into(&mut self, key: &mut Vec<u8>, value: &mut Vec<u8>) -> Result<Option<bool>> {
        self.next_with(|e| {
            key.clear();
            key.extend_from_slice(e.key);
            value.clear();
            if let Some(v) = e.value {
                value.extend_from_slice(v);
            }
            e.value.is_some()
        })
    }

    /// The next entry, passed to `f` in place.
    fn next_with<R>(&mut self, f: impl FnOnce(LeafEntry<'_>) -> R) -> Result<Option<R>> {
        loop {
            if self.done {
                return Ok(None);
            }
            if self.entries_left == 0 {
                if self.pos != self.payload_end {
                    let at = (self.pos - self.payload_start + NODE_HEADER_BYTES) as u64;
                    return Err(DecodeError::new(0, "bytes after the leaf's last entry")
                        .at(self.tree.path(), self.node_offset + at));
                }
                if self.next_leaf == self.tree.leaves.len() {
                    self.done = true;
                    return Ok(None);
                }
                self.load_leaf(self.next_leaf)?;
                self.next_leaf += 1;
                continue;
            }
            let bytes: &[u8] = match self.tree.map() {
                Some(map) => map,
                None => &self.chunk,
            };
            let mut r = Reader::new(&bytes[self.pos..self.payload_end]);
            let entry = LeafEntry::decode_from(&mut r).map_err(|e| {
                let at = (self.pos - self.payload_start + NODE_HEADER_BYTES) as u64;
                e.at(self.tree.path(), self.node_offset + at)
            })?;
            self.pos += r.position();
            self.entries_left -= 1;
            if let Some(from) = &self.from {
                if entry.key < &from[..] {
                    continue;
                }
                self.from = None;
            }
            return Ok(Some(f(entry)));
        }
    }

    /// Makes leaf `i` the current one: from the map, or from the chunk (read if needed).
    fn load_leaf(&mut self, i: usize) -> Result<()> {
        let (page, pages) = self.tree.leaves.place(i);
        let page_bytes = self.tree.page_bytes();
        let offset = page * page_bytes;
        let len = usize::try_from(pages * page_bytes).expect("leaves are small");
        let mapped = self.tree.map().is_some_and(|m| m.get(offset, len).is_some());
        let inside = page >= self.chunk_page && page + pages <= self.chunk_page + self.chunk_pages;
        if !mapped && !inside {
            self.fill_chunk(i)?;
        }
        let tree = &self.tree;
        let (bytes, base) = match tree.map() {
            Some(map) if mapped => (&map[..], offset as usize),
            _ => (&self.chunk[..], ((page - self.chunk_page) * page_bytes) as usize),
        };
        let (header, payload) = open_node(&bytes[base..base + len], page, tree.id())
            .and_then(|(header, payload)| {
                expect_kind(&header, NodeKind::Leaf, 0)?;
                if header.pages(tree.page_bytes() as u32) != pages {
                    return Err(DecodeError::new(12, format!("leaf is not {pages} pages long")));
                }
                Ok((header, payload))
            })
            .map_err(|e| e.at(tree.path(), offset))?;
        self.payload_start = base + NODE_HEADER_BYTES;
        self.payload_end = self.payload_start + payload.len();
        self.pos = self.payload_start;
        self.entries_left = header.entries;
        self.node_offset = offset;
        Ok(())
    }

    /// Reads the pages from leaf `i` on: as many whole leaves as fit the read-ahead (at
    /// least leaf `i`), which then doubles.
    fn fill_chunk(&mut self, i: usize) -> Result<()> {
        let leaves = &self.tree.leaves;
        let page_bytes = self.tree.page_bytes();
        let (first_page, pages) = leaves.place(i);
        let mut end_page = first_page + pages;
        for j in i + 1..leaves.len() {
            let (page, pages) = leaves.place(j);
            if (page + pages - first_page) * page_bytes > self.readahead_bytes {
                break;
            }
            end_page = page + pages;
        }
        let len = usize::try_from((end_page - first_page) * page_bytes).expect("chunks are small");
        self.chunk.resize(len, 0);
        self.chunk_page = first_page;
        self.chunk_pages = 0;
        self.tree.read_at(first_page * page_bytes, &mut self.chunk)?;
        self.chunk_pages = end_page - first_page;
        self.readahead_bytes = (self.readahead_bytes * 2).min(CURSOR_READ_BYTES_MAX);
        Ok(())
    }
}
