//! Writes one new level during merge-execute: blocks are filled greedily in key order and
//! written sequentially as soon as they are full (the paper's m-insert buffers one block per
//! level in memory).

use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::StorageFile;

use crate::entry::{BlockPtr, Entry};
use crate::level::{DiskLevel, LevelStats};
use crate::store::BlockStore;

/// A new level being written.
#[derive(Debug)]
pub struct LevelWriter {
    label: usize,
    file_id: u32,
    file: Arc<dyn StorageFile>,
    payload_bytes: usize,
    blocks: u32,
    current: Vec<Entry>,
    current_bytes: usize,
    stats: LevelStats,
}

impl LevelWriter {
    /// A writer for level `label` in the new, empty file `file_id`.
    pub fn new(label: usize, file_id: u32, file: Arc<dyn StorageFile>, payload_bytes: u32) -> Self {
        LevelWriter {
            label,
            file_id,
            file,
            payload_bytes: payload_bytes as usize,
            blocks: 0,
            current: Vec::new(),
            current_bytes: 0,
            stats: LevelStats::default(),
        }
    }

    /// Whether a block has been started.
    pub fn started(&self) -> bool {
        self.blocks > 0
    }

    /// Whether `bytes` more fit in the current block.
    pub fn fits(&self, bytes: usize) -> bool {
        self.started() && self.current_bytes + bytes <= self.payload_bytes
    }

    /// Writes the current block (if any) and begins a new one with `leading` as its first
    /// entry (I2). Returns the new block's address.
    pub fn start_block(&mut self, store: &BlockStore, leading: Option<Entry>) -> Result<BlockPtr> {
        self.flush(store)?;
        self.blocks = self.blocks.checked_add(1).expect("a level of 2^32 blocks");
        if let Some(e) = leading {
            self.push_entry(e, true);
        }
        Ok(BlockPtr { file: self.file_id, index: self.blocks - 1 })
    }

    /// Appends an entry to the current block (the caller checked it fits).
    pub fn push(&mut self, e: Entry) {
        self.push_entry(e, false);
    }

    fn push_entry(&mut self, e: Entry, leading: bool) {
        assert!(self.started(), "push before the first block");
        let n = e.encoded_len();
        assert!(self.current_bytes + n <= self.payload_bytes, "block overflow in merge");
        debug_assert!(self.current.last().is_none_or(|p| p.order(&e).is_lt()), "unsorted");
        self.stats.add(&e, leading);
        self.current_bytes += n;
        self.current.push(e);
    }

    fn flush(&mut self, store: &BlockStore) -> Result<()> {
        if self.started() {
            store.write(&*self.file, self.file_id, self.blocks - 1, &self.current)?;
        }
        self.current.clear();
        self.current_bytes = 0;
        Ok(())
    }

    /// Writes the last block, syncs the file and returns the finished level.
    pub fn finish(mut self, store: &BlockStore) -> Result<DiskLevel> {
        self.flush(store)?;
        store.sync(&*self.file)?;
        Ok(DiskLevel {
            label: self.label,
            file_id: self.file_id,
            file: self.file,
            blocks: self.blocks,
            stats: self.stats,
        })
    }
}

impl LevelWriter {
    /// The level file's id.
    pub fn file_id(&self) -> u32 {
        self.file_id
    }
}
