//! Writes one new level (or an `L_0` run) during merge-execute: blocks are filled greedily in
//! key order and written sequentially (the paper's m-insert buffers one block per level in
//! memory), then indexed; the Bloom filter gets each data key as it is appended, at the
//! latest when the key's block is indexed (inserts are pipelined: `bloom_pipe`).
//!
//! FD+FC (section 4.4.2) lets lookups read a level while it is written:
//! - a written block is indexed only after its write, and a lookup reaches only indexed
//!   blocks, or the tail of a fence-only level;
//! - the data level (the one receiving the merged data entries) is never read beyond its
//!   written blocks: the merge moves the wavefront only up to the last key written
//!   (`fc/run.rs`), so lookups behind the wavefront find everything they need on disk and
//!   the data level's tail needs no latch at all;
//! - a fence-only level's tail (the block being filled) is shared with lookups through
//!   [`TailFences`]: each fence is added under its mutex (the paper's exclusive latch of the
//!   block being written), released before the level above is written.
//!
//! Finished blocks of the data level are written in batches of [`WRITE_BATCH_BLOCKS`].

use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::StorageFile;
use parking_lot::{Mutex, RwLock};

use super::disk::{DiskLevel, IndexRef, TailFences};
use super::latches::BlockLatches;
use crate::format::block::{BlockBuilder, SegmentInfo};
use crate::format::bloom::{Bloom, key_hash};
use crate::format::entry::{BlockPtr, EntryRef};
use crate::format::index::LevelIndex;
use crate::format::stats::LevelStats;
use crate::level_map::LevelMap;
use crate::store::{BlockStore, FileKind};
use lamina_storage::bloom::PipelinedInserts;

mod resume;

/// Bytes of a level file written between two [`StorageFile::start_writeback`] hints: the
/// level reaches the device as a steady stream while it is written, not as one burst at its
/// final `sync_data`, which would hold up the log's syncs behind it (issue 22's insert
/// tail; RocksDB's `bytes_per_sync` does the same).
pub const WRITEBACK_BYTES: u64 = 1 << 20;

/// Finished blocks written with one call (256 KiB with the default 32 KiB blocks). The
/// FD+FC wavefront lags the merge by at most this much of the data level (`fc/run.rs`).
pub const WRITE_BATCH_BLOCKS: usize = 8;

/// What to do when a write of the level fails: `true` retries it (the policy waits first),
/// `false` returns the error. An FD+FC merge cannot be undone once it has reclaimed old
/// blocks, so it waits out a full disk this way instead of failing (`engine/background.rs`).
#[derive(Clone)]
pub struct RetryPolicy(pub Arc<dyn Fn(&lamina_core::Error) -> bool + Send + Sync>);

impl RetryPolicy {
    /// Runs `op` until it succeeds or fails with an error the policy does not retry.
    pub fn run<T>(&self, mut op: impl FnMut() -> lamina_core::Result<T>) -> lamina_core::Result<T> {
        loop {
            match op() {
                Err(e) if (self.0)(&e) => {}
                done => return done,
            }
        }
    }
}

impl std::fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RetryPolicy")
    }
}

/// How the level is used while it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visibility {
    /// Nobody reads it before it is finished (FD+XM, FD+DS, runs).
    Private,
    /// FD+FC's data level: read up to its written blocks.
    Data,
    /// FD+FC's fence-only levels: read up to its tail.
    Fences,
}

/// The directory of a finished block: its segments and its fences.
type BlockDirectory = (Vec<SegmentInfo>, Vec<(Vec<u8>, BlockPtr)>);

/// A finished block not yet written.
#[derive(Debug)]
struct Pending {
    first: u32,
    bytes: Vec<u8>,
    blocks: Vec<BlockDirectory>,
    /// Last key of the last pending block.
    last_key: Option<Vec<u8>>,
    /// Counts of every entry up to the end of the last pending block.
    stats: LevelStats,
}

/// A new level being written.
#[derive(Debug)]
pub struct LevelWriter {
    label: usize,
    file_id: u32,
    file: Arc<dyn StorageFile>,
    store: BlockStore,
    segment_bytes: usize,
    visibility: Visibility,
    builder: Option<BlockBuilder>,
    /// Fences of the block being built.
    block_fences: Vec<(Vec<u8>, BlockPtr)>,
    /// Key of the last entry appended.
    last_key: Option<Vec<u8>>,
    /// Blocks started (written, pending, and the one being built).
    started: u32,
    /// Blocks written and indexed.
    written: u32,
    /// Key of the last entry of the last written block.
    written_last_key: Option<Vec<u8>>,
    pending: Pending,
    stats: LevelStats,
    /// Counts of the written blocks' entries (`stats` less the pending and current blocks'):
    /// what an index of the written blocks records ([`LevelWriter::save_written_index`]).
    written_stats: LevelStats,
    index: Arc<RwLock<LevelIndex>>,
    bloom: Arc<Bloom>,
    /// Data keys appended whose filter bits are not set yet: drained before any block is
    /// indexed (`write_pending`), so no reader sees a key its filter lacks.
    bloom_pipe: PipelinedInserts,
    tail: Option<Arc<Mutex<TailFences>>>,
    latches: Arc<BlockLatches>,
    holds_data: bool,
    retry: Option<RetryPolicy>,
    /// The written blocks were indexed from an index a pause saved, not checked by this
    /// process (`writer/resume.rs`).
    written_blocks_unchecked: bool,
    /// Bytes of the file from which writeback was not started yet.
    writeback_from: u64,
    /// The map lookups read the written blocks through while the level is written, and
    /// the finished level's (`level_map.rs`); `None`: no map until the level is finished.
    map: Option<(Arc<LevelMap>, u64)>,
}

impl LevelWriter {
    /// A writer for level `label` (0: an `L_0` run) in the new, empty file `file_id`,
    /// whose filter is sized for `keys_max` data keys.
    pub fn new(
        store: &BlockStore,
        params: &crate::options::Params,
        label: usize,
        file_id: u32,
        file: Arc<dyn StorageFile>,
        keys_max: u64,
        visibility: Visibility,
    ) -> Self {
        let index = LevelIndex::new(keys_max, params.bloom_bits_per_key_of(label));
        let bloom = index.bloom().clone();
        LevelWriter {
            label,
            file_id,
            file,
            store: store.clone(),
            segment_bytes: params.segment_bytes as usize,
            visibility,
            builder: None,
            block_fences: Vec::new(),
            last_key: None,
            started: 0,
            written: 0,
            written_last_key: None,
            pending: Pending {
                first: 0,
                bytes: Vec::new(),
                blocks: Vec::new(),
                last_key: None,
                stats: LevelStats::default(),
            },
            stats: LevelStats::default(),
            written_stats: LevelStats::default(),
            index: Arc::new(RwLock::new(index)),
            bloom,
            bloom_pipe: PipelinedInserts::default(),
            tail: (visibility == Visibility::Fences).then(Default::default),
            latches: Arc::new(BlockLatches::default()),
            holds_data: visibility != Visibility::Fences,
            retry: None,
            written_blocks_unchecked: false,
            writeback_from: 0,
            map: None,
        }
    }

    /// Lets lookups read the level's written blocks in place while it is written, through
    /// a map of `bytes_bound` bytes made past the file's end (`level_map.rs`): the bound on
    /// the level's final size. Blocks past it are read through the segment cache.
    pub fn map_ahead(&mut self, bytes_bound: u64) {
        let bound = bytes_bound.next_multiple_of(self.store.block_bytes() as u64);
        let map = if self.written_blocks_unchecked {
            LevelMap::ahead_unchecked(bound)
        } else {
            LevelMap::ahead(bound)
        };
        self.map = Some((Arc::new(map), bound));
    }

    /// Retries failed writes as `policy` says (default: never).
    pub fn set_retry(&mut self, policy: RetryPolicy) {
        self.retry = Some(policy);
    }

    /// Runs `op`, retrying while it fails and the retry policy says so.
    fn io<T>(&self, mut op: impl FnMut() -> Result<T>) -> Result<T> {
        match &self.retry {
            Some(policy) => policy.run(op),
            None => op(),
        }
    }

    /// The level number.
    pub fn label(&self) -> usize {
        self.label
    }

    /// The level file's id.
    pub fn file_id(&self) -> u32 {
        self.file_id
    }

    /// Whether a block has been started.
    pub fn started(&self) -> bool {
        self.builder.is_some()
    }

    /// Whether entries of these sizes fit in the current block.
    pub fn fits(&self, sizes: impl IntoIterator<Item = usize>) -> bool {
        self.builder.as_ref().is_some_and(|b| b.fits(sizes))
    }

    /// Key of the last entry of the last written block: every entry up to it is on disk and
    /// indexed (FD+FC moves the wavefront no further, see the module documentation).
    pub fn written_through(&self) -> Option<&[u8]> {
        self.written_last_key.as_deref()
    }

    /// Blocks written and indexed.
    pub fn written_blocks(&self) -> u32 {
        self.written
    }

    /// Counts of everything appended so far.
    pub fn stats(&self) -> &LevelStats {
        &self.stats
    }

    /// The level as lookups see it while it is written (FD+FC).
    pub fn view(&self) -> DiskLevel {
        DiskLevel {
            label: self.label,
            file_id: self.file_id,
            file: self.file.clone(),
            blocks: 0,
            stats: LevelStats::default(),
            index: IndexRef::Growing(self.index.clone()),
            latches: self.latches.clone(),
            tail: self.tail.clone(),
            holds_data: self.holds_data,
            map: self.map.as_ref().map(|(m, _)| m.clone()),
        }
    }

    /// Ends the current block (if any) and begins a new one with `leading` as its first
    /// entry (I2). Returns the new block's address.
    pub fn start_block(&mut self, leading: Option<EntryRef<'_>>) -> Result<BlockPtr> {
        self.end_block()?;
        let index = self.started;
        self.started = index.checked_add(1).ok_or_else(|| lamina_core::Error::Unsupported {
            what: "a level of more than 2^32 blocks".into(),
        })?;
        let block_bytes = self.store.block_bytes();
        self.builder =
            Some(BlockBuilder::new(block_bytes, self.segment_bytes, self.file_id, index));
        if let Some(tail) = &self.tail {
            let mut t = tail.lock();
            t.block = Some(index);
            t.fences.clear();
        }
        if let Some(e) = leading {
            self.push_entry(e, true);
        }
        Ok(BlockPtr { file: self.file_id, index })
    }

    /// Appends an entry to the current block (the caller checked that it fits).
    pub fn push(&mut self, e: EntryRef<'_>) {
        self.push_entry(e, false);
    }

    fn push_entry(&mut self, e: EntryRef<'_>, leading: bool) {
        let builder = self.builder.as_mut().expect("push before the first block");
        debug_assert!(
            self.last_key.as_deref().is_none_or(|k| k < e.key() || (k == e.key() && e.is_data())),
            "entries come in level order"
        );
        builder.push(e);
        self.stats.add(&e, leading);
        match e {
            EntryRef::Fence { key, ptr } => {
                self.block_fences.push((key.to_vec(), ptr));
                if let Some(tail) = &self.tail {
                    tail.lock().fences.push((key.into(), ptr));
                }
            }
            _ => {
                assert!(self.holds_data, "a fence-only level gets no data entry");
                self.bloom_pipe.insert_hash(&self.bloom, key_hash(e.key()));
            }
        }
        let last = self.last_key.get_or_insert_with(Vec::new);
        last.clear();
        last.extend_from_slice(e.key());
    }

    /// Moves the block being built to the pending writes (writing them if the batch is
    /// full or the level's tail is shared).
    fn end_block(&mut self) -> Result<()> {
        let Some(builder) = self.builder.take() else { return Ok(()) };
        let index = builder.index();
        let (bytes, segments) = builder.finish();
        if self.pending.blocks.is_empty() {
            self.pending.first = index;
        }
        debug_assert_eq!(self.pending.first + self.pending.blocks.len() as u32, index);
        self.pending.bytes.extend_from_slice(&bytes);
        self.pending.blocks.push((segments, std::mem::take(&mut self.block_fences)));
        self.pending.last_key.clone_from(&self.last_key);
        // The next block's first entry is pushed after this (`start_block`).
        self.pending.stats = self.stats;
        if self.visibility == Visibility::Fences || self.pending.blocks.len() >= WRITE_BATCH_BLOCKS
        {
            self.write_pending()?;
        }
        Ok(())
    }

    /// Writes the pending blocks, then indexes them.
    fn write_pending(&mut self) -> Result<()> {
        // Every key appended so far reaches the filter before its block is indexed (and
        // before `finish` encodes the filter).
        self.bloom_pipe.drain(&self.bloom);
        if self.pending.blocks.is_empty() {
            return Ok(());
        }
        self.io(|| self.store.write_blocks(&*self.file, self.pending.first, &self.pending.bytes))?;
        let mut index = self.index.write();
        for (i, (segments, fences)) in self.pending.blocks.drain(..).enumerate() {
            let block = self.pending.first + i as u32;
            index.add_block(block, &segments, fences.iter().map(|(k, p)| (k.as_slice(), *p)));
        }
        drop(index);
        self.written =
            self.pending.first + (self.pending.bytes.len() / self.store.block_bytes()) as u32;
        let written_bytes = u64::from(self.written) * self.store.block_bytes() as u64;
        if written_bytes >= self.writeback_from + WRITEBACK_BYTES {
            // A hint: if it fails, the final sync writes the range and reports any error.
            let _ =
                self.file.start_writeback(self.writeback_from, written_bytes - self.writeback_from);
            self.writeback_from = written_bytes;
        }
        self.pending.bytes.clear();
        self.written_last_key = self.pending.last_key.take();
        self.written_stats = self.pending.stats;
        Ok(())
    }

    /// Writes every finished block and the current one's predecessors (not the current
    /// one) and syncs the file (FD+FC progress commits, Remark A.6).
    pub fn sync_written(&mut self) -> Result<()> {
        self.write_pending()?;
        self.io(|| self.file.sync_data())
    }

    /// The entries of the block being built, encoded back to back (progress records).
    pub fn tail_entries(&self) -> Vec<crate::format::entry::Entry> {
        let Some(b) = &self.builder else { return Vec::new() };
        let (kmax, vmax) = self.store.limits();
        b.in_progress()
            .runs()
            .flat_map(|run| {
                run.iter(kmax, vmax)
                    .map(|e| e.expect("the builder's own entries decode").to_owned_entry())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Writes the last block, syncs the level file, writes and syncs its index file, and
    /// returns the finished level.
    pub fn finish(self) -> Result<DiskLevel> {
        self.finish_with(true).map(|(level, _)| level)
    }

    /// [`LevelWriter::finish`] without the syncs: returns the finished level and its two
    /// files (level, index), written but not synced. The caller must have them synced
    /// before any commit names the level (`Tree::unsynced_files`); until then only this
    /// process reads them, from the page cache.
    pub fn finish_unsynced(self) -> Result<(DiskLevel, Vec<Arc<dyn StorageFile>>)> {
        self.finish_with(false)
    }

    fn finish_with(mut self, sync: bool) -> Result<(DiskLevel, Vec<Arc<dyn StorageFile>>)> {
        self.end_block()?;
        self.write_pending()?;
        debug_assert!(self.bloom_pipe.is_empty(), "the filter holds every key");
        if sync {
            self.io(|| self.file.sync_data())?;
        }
        // A copy: FD+FC lookups may still read the growing index until the tree switches to
        // the finished level (the filter is shared, not copied).
        let index = self.index.read().clone();
        let encoded = index.encode(self.file_id, &self.stats);
        // `write_file` leaves no partial file behind, so the retry can create it anew.
        let mut unsynced = Vec::new();
        if sync {
            self.io(|| self.store.write_file(self.file_id, FileKind::Index, &encoded))?;
        } else {
            let index_file = self
                .io(|| self.store.write_file_unsynced(self.file_id, FileKind::Index, &encoded))?;
            unsynced.extend([self.file.clone(), index_file]);
        }
        // The map lookups used while the level was written, if it covers the whole level;
        // else a map of the finished length. Either counts the segments written here as
        // checked (`level_map.rs`), unless some were written before a pause and not
        // checked since: then each is checked at its first read, as after an open.
        let written_bytes = u64::from(self.written) * self.store.block_bytes() as u64;
        let map = match self.map {
            Some((map, bound)) if bound >= written_bytes => map,
            _ if self.written_blocks_unchecked => Arc::new(LevelMap::default()),
            _ => Arc::new(LevelMap::written_here()),
        };
        let level = DiskLevel {
            label: self.label,
            file_id: self.file_id,
            file: self.file,
            blocks: self.written,
            stats: self.stats,
            index: IndexRef::Fixed(Arc::new(index)),
            latches: self.latches,
            tail: None,
            holds_data: true,
            map: Some(map),
        };
        Ok((level, unsynced))
    }
}
