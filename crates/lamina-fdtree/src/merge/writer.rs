//! Writes one new level during merge-execute: blocks are filled greedily in key order and
//! written sequentially as soon as they are full (the paper's m-insert buffers one block per
//! level in memory).
//!
//! FD+FC (section 4.4.2): the level is readable while it is written (`visible`). A block is
//! started before the fence to it is added to the level above (bottom-up), so starting it
//! needs no latch; every later append to it takes its exclusive latch, and the latch is
//! released before the level above is written. Lookups read the block being filled (the
//! tail) from memory under its shared latch, until it is written to disk and retired.

use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::StorageFile;

use crate::entry::{BlockPtr, Entry};
use crate::latch::LevelShared;
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
    shared: Arc<LevelShared>,
    /// Readable while written (FD+FC): maintain the tail and take latches.
    visible: bool,
    scratch: Vec<u8>,
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
            shared: LevelShared::with_blocks(0),
            visible: false,
            scratch: Vec::new(),
        }
    }

    /// Makes the level readable while it is written (FD+FC).
    #[must_use]
    pub fn visible(mut self) -> Self {
        self.visible = true;
        self
    }

    /// The level as lookups see it while it is written (FD+FC): `blocks` is 0 and the
    /// shared state tells how many blocks are started.
    pub fn in_progress_level(&self) -> DiskLevel {
        DiskLevel {
            label: self.label,
            file_id: self.file_id,
            file: self.file.clone(),
            blocks: 0,
            stats: LevelStats::default(),
            shared: self.shared.clone(),
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
        let index = self.blocks - 1;
        if self.visible {
            // Not reachable yet: no fence points to it before the caller adds one above.
            let mut payload = Vec::with_capacity(self.payload_bytes);
            payload.extend_from_slice(&0u32.to_le_bytes());
            self.shared.start_tail(index, payload);
        } else {
            self.shared.start_tail(index, 0u32.to_le_bytes().to_vec());
        }
        if let Some(e) = leading {
            self.push_entry(e, true);
        }
        Ok(BlockPtr { file: self.file_id, index })
    }

    /// Appends an entry to the current block (the caller checked it fits).
    pub fn push(&mut self, e: Entry) {
        self.push_entry(e, false);
    }

    /// Appends the entries of one key to the current block under one exclusive latch.
    pub fn push_group(&mut self, entries: impl IntoIterator<Item = Entry>) {
        let index = self.blocks - 1;
        let latch = self.visible.then(|| self.shared.write(index).expect("the tail's latch"));
        for e in entries {
            self.push_entry(e, false);
        }
        drop(latch); // released before the level above is written (section 4.4.2)
    }

    fn push_entry(&mut self, e: Entry, leading: bool) {
        assert!(self.started(), "push before the first block");
        let n = e.encoded_len();
        assert!(self.current_bytes + n <= self.payload_bytes, "block overflow in merge");
        debug_assert!(self.current.last().is_none_or(|p| p.order(&e).is_lt()), "unsorted");
        if self.visible {
            self.scratch.clear();
            e.encode_to(&mut self.scratch);
            self.shared.append_to_tail(self.blocks - 1, &self.scratch);
        }
        self.stats.add(&e, leading);
        self.current_bytes += n;
        self.current.push(e);
    }

    fn flush(&mut self, store: &BlockStore) -> Result<()> {
        if self.started() {
            let index = self.blocks - 1;
            store.write(&*self.file, self.file_id, index, &self.current)?;
            // On disk now: lookups read it from there (the exclusive latch waits for the
            // ones reading the in-memory copy).
            let latch = self.visible.then(|| self.shared.write(index).expect("the tail's latch"));
            self.shared.retire_tail(index);
            drop(latch);
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
            shared: self.shared,
        })
    }

    /// The level file's id.
    pub fn file_id(&self) -> u32 {
        self.file_id
    }

    /// Makes the blocks written so far durable (FD+FC progress commits, Remark A.6).
    pub fn sync(&self, store: &BlockStore) -> Result<()> {
        store.sync(&*self.file)
    }

    /// The level's progress: blocks written (all but the tail), sizes, the tail's entries.
    pub fn progress(&self) -> crate::fc::NewLevelProgress {
        crate::fc::NewLevelProgress {
            label: self.label as u64,
            file_id: self.file_id,
            flushed_blocks: self.blocks.saturating_sub(1),
            stats: self.stats,
            tail: self.started().then(|| self.current.clone()),
        }
    }

    /// A visible writer that continues a level from its committed progress (recovery of an
    /// FD+FC merge): blocks after the written ones are cut off, the tail is restored in
    /// memory.
    pub fn restore(
        store: &BlockStore,
        file: Arc<dyn StorageFile>,
        progress: &crate::fc::NewLevelProgress,
        payload_bytes: u32,
    ) -> Result<Self> {
        let flushed = progress.flushed_blocks;
        file.set_len(u64::from(flushed) * store.block_bytes() as u64)?;
        let label = usize::try_from(progress.label).unwrap_or(usize::MAX);
        let mut w = LevelWriter::new(label, progress.file_id, file, payload_bytes).visible();
        w.shared = LevelShared::with_blocks(flushed);
        w.blocks = flushed;
        w.stats = progress.stats;
        if let Some(entries) = &progress.tail {
            let bytes: usize = entries.iter().map(Entry::encoded_len).sum();
            if bytes > w.payload_bytes {
                return Err(store.corruption(&*w.file, flushed, "merge progress tail too big"));
            }
            w.blocks += 1;
            w.shared.start_tail(flushed, crate::block::encode_entries(entries));
            w.current.clone_from(entries);
            w.current_bytes = bytes;
        }
        Ok(w)
    }
}
