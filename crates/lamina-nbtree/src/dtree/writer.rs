//! Writing a d-tree: a bottom-up bulk load that streams (paper section 4.1: nodes written
//! sequentially, leaves in key order). A leaf is written as soon as the next entry does not
//! fit it, an internal node as soon as the next child does not fit it (each internal node
//! right after the child that filled it, so after its children), so a push writes a bounded
//! number of pages. After the last push, [`DTreeWriter::finish_step`] writes the rest (the
//! last leaf, the right spine of internal nodes, the Bloom filter, the footer) a bounded
//! number of pages per call: the deamortized flush of section 5.1 spreads a d-tree's writing
//! over many inserts.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::Encode;
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_core::{Error, Result};
use lamina_storage::bloom::Bloom;
use lamina_storage::{OpenMode, Storage, StorageFile};

use super::format::{
    DTreeParams, FOOTER_BYTES, Footer, NODE_ENTRIES_MAX, NODE_HEADER_BYTES, NodeHeader, NodeKind,
    file_name, node_pages, seal_node,
};
use super::node::{ChildRef, LEAF_ENTRY_BYTES_MAX, LeafEntry};
use super::reader::{DTree, LeafIndex};
use crate::entry::entry_bytes;
use crate::options::{BLOOM_BITS_PER_KEY_MAX, PAGE_BYTES_MAX, PAGE_BYTES_MIN};

/// Longest encoded child of an internal node (largest key, two 10-byte varints).
const CHILD_BYTES_MAX: usize = 2 + KEY_BYTES_MAX + 10 + 10;
/// Bytes after which the written part of a d-tree is handed to writeback (1 MiB).
const WRITEBACK_BYTES: u64 = 1 << 20;

/// Most pages of a leaf with `page_bytes` pages: one page, or the pages of a leaf holding
/// the largest entry alone.
pub fn leaf_pages_max(page_bytes: u32) -> u64 {
    node_pages(LEAF_ENTRY_BYTES_MAX, page_bytes).max(1)
}

/// Most pages of an internal node: one page, or two of the largest children (a node is
/// closed only once it has at least two children, so the tree narrows at every level).
pub fn internal_pages_max(page_bytes: u32) -> u64 {
    node_pages(2 * CHILD_BYTES_MAX, page_bytes).max(1)
}

/// A node being filled: its payload, record count and first key.
#[derive(Debug, Default)]
struct NodeBuilder {
    payload: Vec<u8>,
    entries: u32,
    first_key: Vec<u8>,
    /// The first child's place (page, pages): the root when it stays the only child.
    first_child: (u64, u64),
}

impl NodeBuilder {
    /// Whether a record of `len` bytes must go to a new node: this one holds enough records
    /// (`min_entries`) and would outgrow a page.
    fn is_full_for(&self, len: usize, min_entries: u32, page_bytes: u32) -> bool {
        self.entries >= min_entries
            && (NODE_HEADER_BYTES + self.payload.len() + len > page_bytes as usize
                || self.entries >= NODE_ENTRIES_MAX)
    }
}

/// What [`DTreeWriter::finish_step`] does next once the pending pages are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Entries may still be pushed.
    Pushing,
    /// Write the last leaf.
    LastLeaf,
    /// Close the internal node of this index (level index + 1) on the right spine.
    Spine(usize),
    /// Write the Bloom section.
    Bloom,
    /// Write the footer page.
    Footer,
    /// Sync the file.
    Sync,
    /// All written and synced.
    Done,
}

/// Writes one d-tree sequentially.
pub struct DTreeWriter {
    storage: Arc<dyn Storage>,
    file: Arc<dyn StorageFile>,
    id: u64,
    path: PathBuf,
    params: DTreeParams,
    leaf: NodeBuilder,
    /// `internal[i]`: the node of level `i + 1` being filled.
    internal: Vec<NodeBuilder>,
    last_key: Vec<u8>,
    entries: u64,
    deletes: u64,
    bytes: u64,
    leaves: u64,
    internal_nodes: u64,
    bloom: Bloom,
    leaf_index: LeafIndex,
    /// Page-aligned bytes not written yet; they start at page `pages_written`.
    pending: Vec<u8>,
    /// How much of `pending` is written.
    pending_written: usize,
    pages_written: u64,
    /// Pages written or pending: the next node's page.
    next_page: u64,
    stage: Stage,
    /// (page, pages, height) of the root once known; height 0: empty.
    root: Option<(u64, u64, u32)>,
    bloom_section: Option<(u64, u64, u32)>,
    footer: Option<Footer>,
    /// An I/O error happened: the file is in an unknown state, nothing more is written.
    failed: bool,
    /// A push writes the pending pages once this many have gathered (1: each node as soon
    /// as it is closed).
    write_batch_pages: u64,
}

impl fmt::Debug for DTreeWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DTreeWriter")
            .field("path", &self.path)
            .field("stage", &self.stage)
            .field("entries", &self.entries)
            .field("pages_written", &self.pages_written)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl DTreeWriter {
    /// Creates the file of d-tree `id` for at most `keys_max` entries.
    pub fn create(
        storage: Arc<dyn Storage>,
        id: u64,
        params: DTreeParams,
        keys_max: u64,
    ) -> Result<DTreeWriter> {
        let page = params.page_bytes;
        if !(PAGE_BYTES_MIN..=PAGE_BYTES_MAX).contains(&page) || !page.is_power_of_two() {
            return Err(Error::option(
                "page_bytes",
                format!("{page} is not a power of two in {PAGE_BYTES_MIN}..={PAGE_BYTES_MAX}"),
            ));
        }
        if params.bloom_bits_per_key > BLOOM_BITS_PER_KEY_MAX {
            return Err(Error::option(
                "bloom_bits_per_key",
                format!("{} is over {BLOOM_BITS_PER_KEY_MAX}", params.bloom_bits_per_key),
            ));
        }
        let name = file_name(id);
        let file = storage.open(&name, OpenMode::CreateNew)?;
        Ok(DTreeWriter {
            path: storage.path_of(&name),
            storage,
            file,
            id,
            params,
            leaf: NodeBuilder::default(),
            internal: Vec::new(),
            last_key: Vec::new(),
            entries: 0,
            deletes: 0,
            bytes: 0,
            leaves: 0,
            internal_nodes: 0,
            bloom: Bloom::new(keys_max, params.bloom_bits_per_key),
            leaf_index: LeafIndex::default(),
            pending: Vec::new(),
            pending_written: 0,
            pages_written: 0,
            next_page: 0,
            stage: Stage::Pushing,
            root: None,
            bloom_section: None,
            footer: None,
            failed: false,
            write_batch_pages: 1,
        })
    }

    /// Lets pushes gather up to `pages` pending pages before writing them in one call
    /// (default 1: every node is written as soon as it is closed, which the per-insert page
    /// bound of `Deamortization::Foreground` counts on). The background flush thread batches:
    /// at 10M inserts one `pwrite` per 4 KiB leaf was a fifth of its time, most of it the
    /// cost of the call rather than of the copy. [`DTreeWriter::finish_step`] writes what is
    /// left; [`DTreeWriter::push_pages_max`] counts the batch.
    #[must_use]
    pub fn with_write_batch_pages(mut self, pages: u64) -> DTreeWriter {
        assert!(pages >= 1, "a batch is at least one page");
        self.write_batch_pages = pages;
        self
    }

    /// Appends an entry (keys strictly ascending); full nodes are written at once.
    pub fn push(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        assert_eq!(self.stage, Stage::Pushing, "push after finish_step");
        assert!(key.len() <= KEY_BYTES_MAX, "key of {} bytes", key.len());
        assert!(value.is_none_or(|v| v.len() <= VALUE_BYTES_MAX), "value over the limit");
        assert!(self.entries == 0 || key > &self.last_key[..], "d-tree keys must ascend");
        self.check_not_failed()?;
        let entry = LeafEntry { key, value };
        let len = entry.encoded_len();
        if self.leaf.is_full_for(len, 1, self.params.page_bytes) {
            self.close_leaf();
        }
        if self.leaf.entries == 0 {
            self.leaf.first_key.clear();
            self.leaf.first_key.extend_from_slice(key);
        }
        entry.encode_to(&mut self.leaf.payload);
        self.leaf.entries += 1;
        self.bloom.insert(key);
        self.entries += 1;
        self.deletes += u64::from(value.is_none());
        self.bytes += entry_bytes(key.len(), value.map(<[u8]>::len));
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        let pending_pages =
            (self.pending.len() - self.pending_written) as u64 / u64::from(self.params.page_bytes);
        if pending_pages >= self.write_batch_pages {
            self.write_pending(u64::MAX)?;
        }
        Ok(())
    }

    /// Pages written so far.
    pub fn pages_written(&self) -> u64 {
        self.pages_written
    }

    /// Entries pushed.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Sum of the pushed entries' `entry_bytes`.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Most pages the next [`DTreeWriter::push`] may write: a leaf, and an internal node on
    /// each level the closing of the leaf below fills (at most one per level; the tree grows
    /// by at most one level per push), and the pages a batch held back before them.
    pub fn push_pages_max(&self) -> u64 {
        let page = self.params.page_bytes;
        (self.write_batch_pages - 1)
            + leaf_pages_max(page)
            + self.internal.len() as u64 * internal_pages_max(page)
    }

    /// An upper bound on the pages [`DTreeWriter::finish_step`] still has to write (the
    /// engine can size its steps with it): the pending pages, the last leaf, two nodes per
    /// level of the right spine (closing a level's node may fill its parent's), the Bloom
    /// section and the footer page.
    pub fn finish_pages_max(&self) -> u64 {
        let page = self.params.page_bytes;
        let pending = ((self.pending.len() - self.pending_written) / page as usize) as u64;
        let before_spine_ends =
            matches!(self.stage, Stage::Pushing | Stage::LastLeaf | Stage::Spine(_));
        let leaf =
            if matches!(self.stage, Stage::Pushing | Stage::LastLeaf) && self.leaf.entries > 0 {
                node_pages(self.leaf.payload.len(), page)
            } else {
                0
            };
        let spine = if before_spine_ends {
            2 * (self.internal.len() as u64 + 1) * internal_pages_max(page)
        } else {
            0
        };
        let bloom = if before_spine_ends || self.stage == Stage::Bloom {
            (self.bloom.encoded_len() as u64).div_ceil(u64::from(page))
        } else {
            0
        };
        let footer = u64::from(!matches!(self.stage, Stage::Sync | Stage::Done));
        pending + leaf + spine + bloom + footer
    }

    /// After the last push: writes at most `pages_max` pages of what remains; true once all
    /// is written and synced.
    pub fn finish_step(&mut self, pages_max: u64) -> Result<bool> {
        assert!(pages_max >= 1, "finish_step must be allowed to write a page");
        self.check_not_failed()?;
        if self.stage == Stage::Pushing {
            self.stage = Stage::LastLeaf;
        }
        let mut budget = pages_max;
        loop {
            if self.pending_written < self.pending.len() {
                if budget == 0 {
                    return Ok(false);
                }
                budget -= self.write_pending(budget)?;
                continue;
            }
            match self.stage {
                Stage::Pushing => unreachable!("finish_step left the pushing stage"),
                Stage::LastLeaf => {
                    self.close_leaf();
                    self.stage = Stage::Spine(0);
                }
                Stage::Spine(level) => self.spine_step(level),
                Stage::Bloom => self.emit_bloom(),
                Stage::Footer => self.emit_footer(),
                Stage::Sync => {
                    let synced = self.file.sync_data();
                    self.failed = synced.is_err();
                    synced?;
                    self.stage = Stage::Done;
                }
                Stage::Done => return Ok(true),
            }
        }
    }

    /// The finished d-tree, open for reading.
    pub fn into_dtree(self) -> Result<Arc<DTree>> {
        assert_eq!(self.stage, Stage::Done, "into_dtree before finish_step returned true");
        let footer = self.footer.expect("a finished writer has its footer");
        Ok(DTree::from_written(
            self.storage,
            self.file,
            self.path,
            footer,
            self.bloom,
            self.leaf_index,
        ))
    }

    /// Removes the unfinished file.
    pub fn abandon(self) -> Result<()> {
        self.storage.remove(&file_name(self.id))
    }

    fn check_not_failed(&self) -> Result<()> {
        if self.failed {
            return Err(Error::io(
                format!("writing {} after an earlier failure", self.path.display()),
                std::io::Error::other("the d-tree writer failed earlier"),
            ));
        }
        Ok(())
    }

    /// Writes up to `pages_max` pending pages; returns how many.
    fn write_pending(&mut self, pages_max: u64) -> Result<u64> {
        let page = self.params.page_bytes as usize;
        let left = self.pending.len() - self.pending_written;
        if left == 0 {
            return Ok(0);
        }
        debug_assert_eq!(left % page, 0);
        let pages = ((left / page) as u64).min(pages_max);
        let end = self.pending_written + pages as usize * page;
        let offset = self.pages_written * u64::from(self.params.page_bytes);
        let written = self.file.write_all_at(offset, &self.pending[self.pending_written..end]);
        self.failed = written.is_err();
        written?;
        // Start writeback of every whole MiB written (RocksDB's `bytes_per_sync`), so the
        // sync that ends the d-tree does not wait for the whole file at once.
        let page_bytes = u64::from(self.params.page_bytes);
        let before = offset / WRITEBACK_BYTES;
        let after = (offset + pages * page_bytes) / WRITEBACK_BYTES;
        if after > before {
            self.file
                .start_writeback(before * WRITEBACK_BYTES, (after - before) * WRITEBACK_BYTES)?;
        }
        self.pages_written += pages;
        self.pending_written = end;
        if self.pending_written == self.pending.len() {
            self.pending.clear();
            self.pending_written = 0;
        }
        Ok(pages)
    }

    /// Appends `bytes` to the pending pages, zero-padded to whole pages; returns its first
    /// page and its pages.
    fn emit(&mut self, bytes: &[u8]) -> (u64, u64) {
        let page_bytes = self.params.page_bytes as usize;
        let pages = bytes.len().div_ceil(page_bytes).max(1);
        let page = self.next_page;
        self.pending.extend_from_slice(bytes);
        self.pending.resize(self.pending.len() + pages * page_bytes - bytes.len(), 0);
        self.next_page += pages as u64;
        (page, pages as u64)
    }

    /// Appends a node (header, payload) to the pending pages.
    fn emit_node(&mut self, kind: NodeKind, level: u8, node: &NodeBuilder) -> (u64, u64) {
        let header = NodeHeader {
            kind,
            level,
            entries: node.entries,
            payload_bytes: u32::try_from(node.payload.len()).expect("a node is small"),
            page: self.next_page,
            dtree_id: self.id,
        };
        let mut bytes = Vec::with_capacity(NODE_HEADER_BYTES + node.payload.len());
        header.encode_to(&mut bytes);
        bytes.extend_from_slice(&node.payload);
        seal_node(&mut bytes);
        let place = self.emit(&bytes);
        assert_eq!(place.1, header.pages(self.params.page_bytes));
        place
    }

    /// Writes the leaf being filled (if it has entries) and adds it to its parent.
    fn close_leaf(&mut self) {
        if self.leaf.entries == 0 {
            return;
        }
        let mut leaf = std::mem::take(&mut self.leaf);
        let (page, pages) = self.emit_node(NodeKind::Leaf, 0, &leaf);
        assert!(pages <= leaf_pages_max(self.params.page_bytes));
        self.leaves += 1;
        self.leaf_index.push(&leaf.first_key, page, pages);
        self.add_child(0, &leaf.first_key, page, pages);
        // Keep the buffers' capacity for the next leaf.
        leaf.payload.clear();
        leaf.entries = 0;
        self.leaf = leaf;
    }

    /// Adds a child to the node of `internal[index]`, first closing that node if the child
    /// does not fit it.
    fn add_child(&mut self, index: usize, first_key: &[u8], page: u64, pages: u64) {
        if index == self.internal.len() {
            self.internal.push(NodeBuilder::default());
        }
        let child = ChildRef { first_key, page, pages };
        let len = child.encoded_len();
        if self.internal[index].is_full_for(len, 2, self.params.page_bytes) {
            self.close_internal(index);
        }
        let node = &mut self.internal[index];
        if node.entries == 0 {
            node.first_key.clear();
            node.first_key.extend_from_slice(first_key);
            node.first_child = (page, pages);
        }
        child.encode_to(&mut node.payload);
        node.entries += 1;
    }

    /// Writes the node of `internal[index]` and adds it to its parent.
    fn close_internal(&mut self, index: usize) {
        let node = std::mem::take(&mut self.internal[index]);
        assert!(node.entries >= 1, "an internal node being closed has children");
        let level = u8::try_from(index + 1).expect("d-trees are shallow");
        let (page, pages) = self.emit_node(NodeKind::Internal, level, &node);
        assert!(pages <= internal_pages_max(self.params.page_bytes));
        self.internal_nodes += 1;
        self.add_child(index + 1, &node.first_key, page, pages);
    }

    /// One step of the right spine: close `internal[index]`, or find the root there.
    fn spine_step(&mut self, index: usize) {
        let top = self.internal.len();
        if top == 0 {
            // At most one leaf: it is the root.
            assert!(self.leaves <= 1);
            let root = if self.leaves == 1 {
                let (page, pages) = self.leaf_index.place(0);
                (page, pages, 1)
            } else {
                (0, 0, 0)
            };
            self.root = Some(root);
            self.stage = Stage::Bloom;
            return;
        }
        assert!(index < top, "the spine ends at the top level");
        let node = &self.internal[index];
        assert!(node.entries >= 1, "every level of the spine has a child");
        if index + 1 == top && node.entries == 1 {
            // The only child of the top level is the root; it was the last node written.
            let (page, pages) = node.first_child;
            assert_eq!(page + pages, self.next_page, "the root is the last node");
            self.root = Some((page, pages, index as u32 + 1));
            self.stage = Stage::Bloom;
        } else {
            self.close_internal(index);
            self.stage = Stage::Spine(index + 1);
        }
    }

    fn emit_bloom(&mut self) {
        let mut bytes = Vec::with_capacity(self.bloom.encoded_len());
        self.bloom.encode_to(&mut bytes);
        let crc = masked_crc32c(&bytes);
        let (page, _) = self.emit(&bytes);
        self.bloom_section = Some((page, bytes.len() as u64, crc));
        self.stage = Stage::Footer;
    }

    fn emit_footer(&mut self) {
        let (root_page, root_pages, height) = self.root.expect("the spine found the root");
        let (bloom_page, bloom_bytes, bloom_crc) = self.bloom_section.expect("Bloom written");
        let footer = Footer {
            dtree_id: self.id,
            page_bytes: self.params.page_bytes,
            height,
            entries: self.entries,
            deletes: self.deletes,
            entry_bytes: self.bytes,
            leaves: self.leaves,
            internal_nodes: self.internal_nodes,
            node_pages: bloom_page,
            root_page,
            root_pages,
            bloom_page,
            bloom_bytes,
            bloom_crc,
            file_pages: self.next_page + 1,
        };
        let mut page = vec![0u8; self.params.page_bytes as usize - FOOTER_BYTES];
        footer.encode_to(&mut page);
        self.emit(&page);
        assert_eq!(self.next_page, footer.file_pages);
        self.footer = Some(footer);
        self.stage = Stage::Sync;
    }
}
