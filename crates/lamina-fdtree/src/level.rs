//! A materialized disk level `L_i` (i > 0): a run of blocks in one level file, with the size
//! bookkeeping that merge-prepare (eq. 1) and merge-finalize (eq. 3) need, and a cursor that
//! reads the level in key order.

use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::StorageFile;

use crate::block::Block;
use crate::entry::{BlockPtr, Entry};
use crate::latch::LevelShared;
use crate::options::Params;
use crate::store::BlockStore;

/// Byte and entry counts of one level, kept exact by the merge that wrote it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelStats {
    /// Encoded bytes of data entries.
    pub data_bytes: u64,
    /// Encoded bytes of all fences.
    pub fence_bytes: u64,
    /// Encoded bytes of the fences that start a block (I2), excluded from the level's size.
    pub leading_fence_bytes: u64,
    /// Insert entries.
    pub inserts: u64,
    /// Delete entries.
    pub deletes: u64,
}

impl LevelStats {
    /// Adds one entry; `leading` when it is the first entry of its block.
    pub fn add(&mut self, e: &Entry, leading: bool) {
        let n = e.encoded_len() as u64;
        match e {
            Entry::Fence { .. } => {
                self.fence_bytes += n;
                if leading {
                    self.leading_fence_bytes += n;
                }
            }
            Entry::Delete { .. } => {
                self.data_bytes += n;
                self.deletes += 1;
            }
            Entry::Insert { .. } => {
                self.data_bytes += n;
                self.inserts += 1;
            }
        }
    }

    /// Appends the five counts, 8 bytes each, little-endian (the manifest's and the merge
    /// progress record's layout).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        for v in [
            self.data_bytes,
            self.fence_bytes,
            self.leading_fence_bytes,
            self.inserts,
            self.deletes,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// Reads what [`LevelStats::encode_to`] wrote.
    pub fn decode_from(
        r: &mut lamina_core::codec::Reader<'_>,
    ) -> Result<Self, lamina_core::codec::DecodeError> {
        Ok(LevelStats {
            data_bytes: r.u64()?,
            fence_bytes: r.u64()?,
            leading_fence_bytes: r.u64()?,
            inserts: r.u64()?,
            deletes: r.u64()?,
        })
    }

    /// Bytes that count toward the level's size `B(L_i)` (see `options`).
    pub fn sized_bytes(&self) -> u64 {
        self.data_bytes + self.fence_bytes - self.leading_fence_bytes
    }
}

/// A materialized level below `L_0`.
#[derive(Debug, Clone)]
pub struct DiskLevel {
    /// Level number `i` (levels between two materialized ones are skipped).
    pub label: usize,
    /// Level file id.
    pub file_id: u32,
    /// Open handle of the level file.
    pub file: Arc<dyn StorageFile>,
    /// Number of blocks (physical).
    pub blocks: u32,
    /// Sizes.
    pub stats: LevelStats,
    /// Block latches, reclaimed head and the tail being filled (`latch.rs`).
    pub shared: Arc<LevelShared>,
}

impl DiskLevel {
    /// `B(L_i)` in blocks.
    pub fn size_blocks(&self, params: &Params) -> u64 {
        params.blocks_of(self.stats.sized_bytes())
    }

    /// Pointer to block `index` of this level.
    pub fn ptr(&self, index: u32) -> BlockPtr {
        BlockPtr { file: self.file_id, index }
    }

    /// Blocks started: the finished ones, or during an FD+FC merge also the tail.
    pub fn block_count(&self) -> u32 {
        self.blocks.max(self.shared.published())
    }

    /// Probes block `ptr` (which a fence claims is in this level) for `key`: the in-memory
    /// payload if it is the tail of a level being written (FD+FC), else through the store.
    /// The caller holds the block's latch.
    pub fn probe(
        &self,
        store: &BlockStore,
        ptr: BlockPtr,
        key: &[u8],
    ) -> Result<crate::probe::Probe> {
        self.check_ptr(store, ptr)?;
        let (kmax, vmax) = store.params_limits();
        if let Some(probe) = self
            .shared
            .with_tail_payload(ptr.index, |payload| crate::probe::probe(payload, key, kmax, vmax))
        {
            return probe
                .map_err(|e| store.corruption(&*self.file, ptr.index, format!("tail: {e}")));
        }
        store.probe(&*self.file, self.file_id, ptr.index, key)
    }

    /// Reads block `ptr`, which a fence claims is in this level (the tail from memory).
    pub fn read(&self, store: &BlockStore, ptr: BlockPtr) -> Result<Block> {
        self.check_ptr(store, ptr)?;
        self.read_index(store, ptr.index)
    }

    /// Reads block `index` of this level (the tail from memory).
    pub fn read_index(&self, store: &BlockStore, index: u32) -> Result<Block> {
        let (kmax, vmax) = store.params_limits();
        if let Some(block) = self
            .shared
            .with_tail_payload(index, |payload| Block::decode_payload(payload, kmax, vmax))
        {
            return block.map_err(|e| store.corruption(&*self.file, index, format!("tail: {e}")));
        }
        if index < self.shared.head() {
            return Err(store.corruption(&*self.file, index, "read of a reclaimed block"));
        }
        store.read(&*self.file, self.file_id, index)
    }

    fn check_ptr(&self, store: &BlockStore, ptr: BlockPtr) -> Result<()> {
        let count = self.block_count();
        if ptr.file != self.file_id || ptr.index >= count {
            return Err(store.corruption(
                &*self.file,
                ptr.index,
                format!(
                    "fence points to block {}:{} but level {} is file {} with {} blocks",
                    ptr.file, ptr.index, self.label, self.file_id, count
                ),
            ));
        }
        if ptr.index < self.shared.head() {
            return Err(store.corruption(
                &*self.file,
                ptr.index,
                format!("fence points to reclaimed block {} of level {}", ptr.index, self.label),
            ));
        }
        Ok(())
    }
}

/// Reads a level in key order from a given block, one block read at a time.
#[derive(Debug)]
pub struct LevelCursor<'a> {
    level: &'a DiskLevel,
    store: &'a BlockStore,
    next_block: u32,
    block_index: u32,
    entries: std::vec::IntoIter<Entry>,
    peeked: Option<Entry>,
}

impl<'a> LevelCursor<'a> {
    /// A cursor at the first entry of block `start` (which may already be decoded).
    pub fn new(
        level: &'a DiskLevel,
        store: &'a BlockStore,
        start: u32,
        first_block: Option<Block>,
    ) -> Self {
        let (entries, next_block) = match first_block {
            Some(b) => (b.entries.into_iter(), start + 1),
            None => (Vec::new().into_iter(), start),
        };
        LevelCursor { level, store, next_block, block_index: start, entries, peeked: None }
    }

    /// The level being read.
    pub fn level(&self) -> &DiskLevel {
        self.level
    }

    /// Index of the block the next entry comes from.
    pub fn block_index(&self) -> u32 {
        self.block_index
    }

    /// The next entry without consuming it.
    pub fn peek(&mut self) -> Result<Option<&Entry>> {
        if self.peeked.is_none() {
            self.peeked = self.pull()?;
        }
        Ok(self.peeked.as_ref())
    }

    /// Whether entries of the current block remain (FD+FC's m-stage stops before a level
    /// needs its next block).
    pub fn has_buffered(&self) -> bool {
        self.peeked.is_some() || !self.entries.as_slice().is_empty()
    }

    /// Whether no block remains to be read after the buffered entries.
    pub fn read_all_blocks(&self) -> bool {
        self.next_block >= self.level.block_count()
    }

    /// Consumes the next entry.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        if let Some(e) = self.peeked.take() {
            return Ok(Some(e));
        }
        self.pull()
    }

    fn pull(&mut self) -> Result<Option<Entry>> {
        loop {
            if let Some(e) = self.entries.next() {
                return Ok(Some(e));
            }
            if self.next_block >= self.level.block_count() {
                return Ok(None);
            }
            let block = self.level.read_index(self.store, self.next_block)?;
            self.block_index = self.next_block;
            self.next_block += 1;
            self.entries = block.entries.into_iter();
        }
    }
}
