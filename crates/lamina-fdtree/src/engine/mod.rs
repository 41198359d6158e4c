//! [`FdTree`]: the FD+tree as a `lamina_core::OrderedIndex`, with the concurrency schemes of
//! sections 3 and 4 (FD+XM, FD+DS, FD+FC).
//!
//! - `inner.rs`: the shared state and the order of its locks;
//! - `write.rs`: modifications (blind puts, deletes and CAS that look up first, batches);
//! - `read.rs`: lookups and scans;
//! - `background.rs`: the flush thread, the commit thread and the merge thread (FD+XM runs
//!   their work inline);
//! - `commit.rs`: commits, and what an FD+FC merge needs from the engine (`fc::FcHost`);
//! - `control.rs`: wake-ups, stopping, failures (sticky, or a full disk that is waited out);
//! - `pacing.rs`: runs and writers paced to the merge's progress;
//! - `flush_rate.rs`: writers spaced to the flush's rate while a run is written;
//! - `flush_stage.rs`: where the flush thread spends its time, for the waits for room;
//! - `schedule.rs`: the slots both slow-downs hand out.

mod background;
mod commit;
pub(crate) mod control;
mod flush_rate;
mod flush_stage;
mod inner;
mod pacing;
mod schedule;
pub use pacing::{RUNS_PACE_FLOOR, RUNS_PACE_SPAN, runs_allowed};
mod read;
mod write;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use lamina_core::{
    CasOutcome, Durability, Entry, Error, KeyRange, OpenIntent, OrderedIndex, Result, Stats,
    WriteBatch,
};
use lamina_storage::log::{LogOptions, RecordOp, SegmentLog, SegmentLogOptions};
use lamina_storage::{FileOptions, FileStorage, MemoryStorage, Storage};
use parking_lot::{Mutex, RwLock};

use control::Control;

/// How many times closing retries its checkpoint on a full disk, [`control::RETRY_INTERVAL`]
/// apart.
const CLOSE_NO_SPACE_ATTEMPTS: u32 = 40;
use inner::{Inner, STRIPES};

use crate::flush::write_run;
use crate::format::entry::EntryRef;
use crate::options::{FcMode, FdTreeOptions};
use crate::persist::LOG_FILE_PREFIX;
use crate::store::BlockStore;
use crate::tree::Tree;

/// Bytes of one log segment; segments wholly older than the last commit are removed (the
/// newest is kept: it carries the log's sequence numbers across restarts). Small segments
/// keep the log's disk use near what recovery needs, at the cost of a file creation per
/// 2 MiB of log.
const LOG_SEGMENT_BYTES: u64 = 2 << 20;
/// The log's write buffer. Writers wait only when a whole buffer has filled while the previous
/// chunk is still being written and synced, and a merge's writeback can hold a sync for tens
/// of milliseconds: 4 MiB is about 100 ms of appends at 300,000 puts/s of 136 bytes (the
/// 1 MiB default, 25 ms, stalled writers for up to 50 ms in `lamina bench --experiment scale`).
/// Segments are then at least one largest chunk (8 MiB).
const LOG_BUFFER_BYTES: usize = 4 << 20;
/// How long a `Sync` write's record may wait in the log buffer for others to join it.
const LOG_LINGER: Duration = Duration::from_millis(2);

/// The `fdtree` engine.
#[derive(Debug)]
pub struct FdTree {
    inner: Arc<Inner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for FdTree {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

impl FdTree {
    /// A volatile tree over a fresh [`MemoryStorage`]: nothing survives `close`.
    pub fn volatile(options: &FdTreeOptions) -> Result<FdTree> {
        Self::with_storage(Arc::new(MemoryStorage::new()), options, false)
    }

    /// Opens (or creates) the persistent tree stored in `storage`, recovering it from its
    /// superblock and log.
    pub fn open(storage: Arc<dyn Storage>, options: &FdTreeOptions) -> Result<FdTree> {
        Self::open_with_intent(storage, options, OpenIntent::CreateIfMissing)
    }

    /// Opens the persistent tree stored in `storage`; with [`OpenIntent::MustExist`] (the
    /// caller knows a database was created there) a missing or empty superblock is
    /// [`Error::Corruption`], never a new empty tree.
    pub fn open_with_intent(
        storage: Arc<dyn Storage>,
        options: &FdTreeOptions,
        intent: OpenIntent,
    ) -> Result<FdTree> {
        Self::start(storage, options, true, intent.must_exist())
    }

    /// Opens (or creates) the persistent tree in directory `path` with the file backend.
    pub fn open_dir(path: impl AsRef<Path>, options: &FdTreeOptions) -> Result<FdTree> {
        let storage = FileStorage::open_dir(path, FileOptions::default())?;
        Self::open(Arc::new(storage), options)
    }

    /// A tree over `storage`: persistent (superblock + log) or volatile (nothing written but
    /// level files).
    pub fn with_storage(
        storage: Arc<dyn Storage>,
        options: &FdTreeOptions,
        persistent: bool,
    ) -> Result<FdTree> {
        Self::start(storage, options, persistent, false)
    }

    fn start(
        storage: Arc<dyn Storage>,
        options: &FdTreeOptions,
        persistent: bool,
        must_exist: bool,
    ) -> Result<FdTree> {
        let params = match persistent.then(|| crate::persist::stored_segment_bytes(&storage)) {
            Some(Some(stored)) if stored != options.segment_bytes => {
                FdTreeOptions { segment_bytes: stored, ..options.clone() }.params()?
            }
            _ => options.params()?,
        };
        let store = BlockStore::new(storage.clone(), &params);
        let (tree, persist, log, records) = if persistent {
            let (tree, persist, cleanup) = Tree::recover(params.clone(), store.clone(), must_exist)
                .map_err(|e| store.blame_older_commit(e))?;
            let log_buffer = LogOptions { buffer_bytes: LOG_BUFFER_BYTES, ..LogOptions::default() };
            let log_options = SegmentLogOptions {
                segment_bytes: LOG_SEGMENT_BYTES
                    .max(log_buffer.chunk_bytes_max().next_multiple_of(4096)),
                log: LogOptions {
                    buffer_bytes: LOG_BUFFER_BYTES,
                    // The engine waits for syncs itself, after releasing its locks.
                    durability: match options.durability {
                        Durability::Sync => Durability::Buffered { max_delay: LOG_LINGER },
                        other => other,
                    },
                    file_prefix: LOG_FILE_PREFIX.into(),
                    ..LogOptions::default()
                },
            };
            let mut records = Vec::new();
            // The commit synced the log through `applied_seq` before the superblock: a log
            // that ends earlier is damaged, refused before the log changes anything.
            let log =
                SegmentLog::open_committed(storage.clone(), log_options, tree.applied_seq, |r| {
                    records.push(r);
                })
                .map_err(|e| store.blame_older_commit(e))?;
            // Everything is validated: recovery's own changes are made before anything is
            // written (replay may write runs, with ids of removed files).
            cleanup.apply(&storage)?;
            debug_assert!(log.stats().next_seq > tree.applied_seq);
            (tree, Some(persist), Some(Arc::new(log)), records)
        } else {
            (Tree::new(params.clone(), store.clone()), None, None, Vec::new())
        };
        let mode = params.mode;
        let mem_slot = tree.top.slot.clone();
        let inner = Arc::new_cyclic(|me| Inner {
            tree: RwLock::new(Some(tree)),
            store,
            params,
            storage,
            log,
            durability: options.durability,
            mode,
            persist: Mutex::new(persist),
            persistent,
            write_gate: RwLock::new(()),
            mem_slot,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            xm: RwLock::new(()),
            control: Control::default(),
            user_bytes_written: AtomicU64::new(0),
            logged_bytes: AtomicU64::new(0),
            runs_uncommitted: std::sync::atomic::AtomicU32::new(0),
            pacer: pacing::Pacer::default(),
            flush_rate: flush_rate::FlushRate::default(),
            flush_stages: flush_stage::FlushStages::default(),
            cpu_turn: Mutex::new(()),
            scan_restarts: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            me: me.clone(),
        });
        // FD+XM has no background threads: its work is in the writer's call already.
        inner.control.set_lockstep(mode != FcMode::Xm && inner.storage.lockstep());
        inner.replay(records).map_err(|e| inner.store.blame_older_commit(e))?;
        if mode != FcMode::Fc && inner.read(|t| Ok(t.fc_resume.is_some()))? {
            // An FD+FC merge in progress, opened with another scheme (the format is
            // shared): it is finished here, before anything else runs.
            inner.merge_now()?;
        }
        let mut threads = Vec::new();
        if mode == FcMode::Xm {
            let _x = inner.xm.write();
            inner.flush_now()?;
            inner.merge_now()?;
        } else {
            // Asked before the threads start, so that their first turns do not depend on
            // how fast they start (lockstep: the flush goes first).
            inner.control.want_flush();
            inner.control.want_merge();
            let mut workers = vec![
                ("fdtree-flush", Inner::flush_thread as fn(&Inner)),
                ("fdtree-merge", Inner::merge_thread as fn(&Inner)),
            ];
            if !inner.control.lockstep() {
                // In lockstep the flush thread commits its own runs (`background.rs`).
                workers.push(("fdtree-commit", Inner::commit_thread as fn(&Inner)));
            }
            for (name, work) in workers {
                let inner = inner.clone();
                threads.push(
                    std::thread::Builder::new()
                        .name(name.into())
                        .spawn(move || work(&inner))
                        .map_err(|e| Error::io("starting an fdtree background thread", e))?,
                );
            }
            if inner.control.lockstep() {
                // The work recovery left due runs before the caller's first call; a failure
                // of it reaches the calls that modify.
                let _ = inner.control.wait_idle();
            }
        }
        Ok(FdTree { inner, threads: Mutex::new(threads) })
    }

    /// The concurrency scheme.
    pub fn mode(&self) -> FcMode {
        self.inner.mode
    }

    /// Waits until no background work is running or due, and returns a failure if one is
    /// recorded (tests, benchmarks).
    pub fn wait_for_merges(&self) -> Result<()> {
        if self.inner.mode == FcMode::Xm {
            return self.inner.control.check();
        }
        loop {
            self.inner.control.wait_idle()?;
            if self.inner.control.held() {
                return self.inner.control.check(); // a test holds the merge thread
            }
            let due = self.inner.read(|t| {
                Ok(t.merge_due().is_some() || t.merge_in_progress() || t.top.frozen.is_some())
            })?;
            if !due || self.inner.control.stopping() {
                return self.inner.control.check();
            }
            if self.inner.control.lockstep()
                && let Some(e) = self.inner.control.no_space()
            {
                // Stuck on a full disk until a writer kicks it: waiting here would wait
                // forever (without lockstep the retries run on a timer).
                return Err(e);
            }
            self.inner.control.want_flush();
            self.inner.control.want_merge();
            std::thread::sleep(control::RETRY_INTERVAL / 10);
        }
    }

    /// Writes the active memtable out as a run now (tests, benchmarks); FD+XM also runs
    /// the merges that makes due.
    pub fn flush(&self) -> Result<()> {
        let _x = (self.inner.mode == FcMode::Xm).then(|| self.inner.xm.write());
        self.inner.force_freeze()?;
        if self.inner.mode == FcMode::Xm {
            self.inner.flush_now()?;
            return self.inner.merge_now();
        }
        loop {
            self.inner.control.check()?;
            let epoch = self.inner.control.room_epoch();
            if self.inner.read(|t| Ok(t.top.frozen.is_none()))? {
                self.inner.control.want_merge();
                return Ok(());
            }
            self.inner.control.want_flush();
            let lockstep = self.inner.control.lockstep();
            if lockstep {
                // The flush runs to its end (its commit included) before this returns.
                self.inner.control.wait_idle()?;
            }
            if let Some(e) = self.inner.control.no_space() {
                return Err(e);
            }
            if !lockstep {
                self.inner.control.wait_room(epoch);
            }
        }
    }

    /// Test hook: writers waiting for room in `L_0` now.
    #[doc(hidden)]
    pub fn room_waiters(&self) -> u32 {
        self.inner.control.room_waiters()
    }

    /// Test hook: the bytes in the active memtable and in the frozen one (0: none).
    #[doc(hidden)]
    pub fn memtables_bytes(&self) -> (u64, u64) {
        let slot = self.inner.mem_slot.read();
        (slot.active.bytes(), slot.frozen_bytes)
    }

    /// Test hook: how long a writer waiting for room sleeps before it looks again (default
    /// 50 ms); a long one shows that writers are woken when room is made.
    #[doc(hidden)]
    pub fn set_room_recheck(&self, recheck: Duration) {
        self.inner.control.set_room_recheck(recheck);
    }

    /// Test hook: hold the merge thread (FD+DS: after merge-execute, before the switch;
    /// FD+FC: after each stage); `false` releases it.
    #[doc(hidden)]
    pub fn hold_merges(&self, hold: bool) {
        self.inner.control.set_hold(hold);
    }

    /// Test hook: lets the held merge thread run to its next hold point.
    #[doc(hidden)]
    pub fn step_merge(&self) {
        self.inner.control.step();
    }

    /// Test hook: waits until the merge thread is held.
    #[doc(hidden)]
    pub fn wait_merge_held(&self) {
        self.inner.control.wait_held();
    }

    /// The storage below the tree (for I/O counters in tests and benchmarks).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.inner.storage
    }

    /// A scan that runs `pause` once, when every cursor of its first view holds its first
    /// segment (tests: a held merge can be stepped there, reclaiming blocks the scan reads
    /// next).
    #[doc(hidden)]
    pub fn scan_with_pause(
        &self,
        range: &KeyRange,
        limit: usize,
        pause: impl FnOnce(),
    ) -> Result<Vec<Entry>> {
        self.inner.scan_paused(range, limit, Some(Box::new(pause)))
    }

    /// Runs `f` on the tree under the shared tree lock (inspection, tests).
    pub fn with_tree<R>(&self, f: impl FnOnce(&Tree) -> R) -> Result<R> {
        self.inner.read(|t| Ok(f(t)))
    }

    /// Checks every invariant of the tree (`verify.rs`), after waiting for background work.
    pub fn verify(&self) -> Result<()> {
        self.wait_for_merges()?;
        let _x = (self.inner.mode == FcMode::Xm).then(|| self.inner.xm.read());
        self.inner.read(Tree::verify)
    }

    /// Checks the tree as it stands, for a tree about to be closed (`lamina verify`, over a
    /// read-only overlay that keeps every write in memory): an FD+FC merge in progress (one
    /// `close` paused, or a crash interrupted) is not run to its end, which could write the
    /// whole bottom level into that memory. The merge thread is held at its next stage
    /// boundary (and stays held), and a merge in progress is checked there as (I7) and
    /// Remark A.5 say (`Tree::verify_wavefront`); with none, as [`FdTree::verify`]. The
    /// caller's full scan against point reads checks the content either way.
    pub fn verify_as_it_stands(&self) -> Result<()> {
        if self.inner.mode != FcMode::Fc {
            return self.verify();
        }
        self.inner.control.set_hold(true);
        self.inner.control.wait_idle()?;
        self.inner.read(|t| if t.merge_in_progress() { t.verify_wavefront() } else { t.verify() })
    }

    fn stop_threads(&self) {
        let threads = std::mem::take(&mut *self.threads.lock());
        if threads.is_empty() {
            return;
        }
        self.inner.control.stop();
        for t in threads {
            // A panic of a background thread already recorded itself as a failure.
            let _ = t.join();
        }
    }
}

impl Inner {
    /// Replays the log records recovery returned (those after the committed state) into the
    /// memtable, writing it out as runs whenever it fills, and commits if it wrote any.
    fn replay(&self, records: Vec<lamina_storage::log::Record>) -> Result<()> {
        let applied = self.read(|t| Ok(t.applied_seq))?;
        let mut wrote = false;
        for record in records {
            if record.seq <= applied {
                continue;
            }
            let mem = self.read(|t| Ok(t.top.active.clone()))?;
            match &record.op {
                RecordOp::Put { key, value } => {
                    mem.apply(EntryRef::Insert { key, value }, record.seq);
                }
                RecordOp::Delete { key } => {
                    mem.apply(EntryRef::Delete { key, cancelled_len: 0 }, record.seq);
                }
                RecordOp::Batch(ops) | RecordOp::BatchPart(ops) => mem.apply_batch(ops, record.seq),
            }
            if mem.bytes() >= self.params.memtable_freeze_bytes() {
                self.write_out_active(record.seq)?;
                wrote = true;
            }
        }
        if wrote {
            self.commit_after(&mut || Ok(()))?;
        }
        Ok(())
    }

    /// Freezes the active memtable (through log record `through`) and writes it out as a
    /// run synchronously (recovery, close).
    fn write_out_active(&self, through: u64) -> Result<()> {
        let Some(frozen) = self.write(|t| Ok(t.freeze(through)))? else { return Ok(()) };
        let (id, union) = self.write(|t| Ok((t.alloc_file_id()?, t.filter_for_run(&frozen))))?;
        let (run, unsynced) =
            write_run(&self.store, &self.params, id, &frozen, union.as_deref(), None)?;
        self.install(run, union, unsynced)
    }

    /// Freezes the active memtable even if it is not full (if nothing else is frozen).
    fn force_freeze(&self) -> Result<()> {
        self.write_gated(|t| {
            let through = match &self.log {
                Some(log) => log.next_seq().saturating_sub(1),
                None => 0,
            };
            Ok(t.freeze(through).map(drop))
        })?;
        self.logged_bytes.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// The last checkpoint of `close`: every memtable written out, the state committed.
    fn final_checkpoint(&self) -> Result<()> {
        if !self.persistent {
            return Ok(());
        }
        self.control.check()?;
        // A full disk is waited out for a while: the background threads are stopped, so
        // the retry policy no longer waits. Giving up loses nothing (the log holds every
        // acknowledged write); the error says the checkpoint did not happen.
        let mut attempts = 0;
        loop {
            match self.checkpoint_once() {
                Err(Error::NoSpace { .. }) if attempts < CLOSE_NO_SPACE_ATTEMPTS => {
                    attempts += 1;
                    std::thread::sleep(control::RETRY_INTERVAL);
                }
                done => return done,
            }
        }
    }

    /// Writes the memtables as runs and commits.
    fn checkpoint_once(&self) -> Result<()> {
        loop {
            let frozen = self.read(|t| Ok(t.top.frozen.clone()))?;
            if frozen.is_none() {
                self.force_freeze()?;
            }
            let Some(frozen) = self.read(|t| Ok(t.top.frozen.clone()))? else { break };
            let (id, union) =
                self.write(|t| Ok((t.alloc_file_id()?, t.filter_for_run(&frozen))))?;
            let (run, unsynced) =
                write_run(&self.store, &self.params, id, &frozen, union.as_deref(), None)?;
            self.install(run, union, unsynced)?;
        }
        self.commit_after(&mut || Ok(()))
    }
}

impl OrderedIndex for FdTree {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.inner.put(key, value)
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.inner.delete(key)
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.inner.compare_and_swap(key, expected, new)
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        self.inner.scan(range, limit)
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        self.inner.write_batch(batch)
    }

    fn sync(&self) -> Result<()> {
        self.inner.read(|_| Ok(()))?;
        self.inner.control.check()?;
        match &self.inner.log {
            Some(log) => log.sync(),
            None => Ok(()),
        }
    }

    fn stats(&self) -> Stats {
        let mut stats = Stats::new("fdtree");
        stats.user_bytes_written = self.inner.user_bytes_written.load(Ordering::Relaxed);
        stats.io = self.inner.storage.io_stats();
        if let Some(t) = self.inner.tree.read().as_ref() {
            let c = t.counters();
            let m = t.merge_counts();
            stats.keys = Some(c.live_keys());
            stats.memory_bytes = t.memory_bytes();
            stats.extra = vec![
                ("mode_xm0_ds1_fc2", self.inner.mode as u64),
                ("height", t.height() as u64),
                ("materialized_levels", t.materialized_labels().len() as u64),
                ("l0_runs", t.run_count() as u64),
                ("n_insert_entries", c.inserts),
                ("n_delete_entries", c.deletes),
                ("merges_overflow", m.overflow),
                ("merges_underflow", m.underflow),
                ("merges_full", m.full),
                ("merges_grew", m.grew),
                ("merges_shrank", m.shrank),
                ("levels_skipped", m.levels_skipped),
                ("levels_tightened", m.levels_tightened),
                ("runs_written", m.runs_written),
            ];
            stats.extra.push(("mapped_segment_reads", t.mapped_reads()));
            stats.extra.push(("scan_restarts", self.inner.scan_restarts.load(Ordering::Relaxed)));
            let pacer = &self.inner.pacer;
            stats.extra.push(("runs_paced", pacer.runs_paced.load(Ordering::Relaxed)));
            stats.extra.push(("run_pacing_us", pacer.paced_us.load(Ordering::Relaxed)));
            stats.extra.push(("puts_slowed", pacer.schedule.slowed_puts.load(Ordering::Relaxed)));
            stats.extra.push(("put_slowdown_us", pacer.schedule.slowed_us.load(Ordering::Relaxed)));
            stats.extra.push((
                "put_slowdown_us_max",
                pacer.schedule.slowed_us_max.load(Ordering::Relaxed),
            ));
            let flush_rate = &self.inner.flush_rate;
            stats
                .extra
                .push(("puts_spaced", flush_rate.schedule.slowed_puts.load(Ordering::Relaxed)));
            stats
                .extra
                .push(("put_spacing_us", flush_rate.schedule.slowed_us.load(Ordering::Relaxed)));
            stats.extra.push((
                "put_spacing_us_max",
                flush_rate.schedule.slowed_us_max.load(Ordering::Relaxed),
            ));
            stats.extra.push(("room_waits", flush_rate.room_waits.load(Ordering::Relaxed)));
            stats.extra.push(("room_wait_us", flush_rate.room_wait_us.load(Ordering::Relaxed)));
            stats.extra.extend(self.inner.flush_stages.stats());
            if let Some(log) = &self.inner.log {
                // The writer's counters: `stats()` would wait for a chunk's sync, here
                // under the tree lock.
                let log = log.writer_stats();
                stats.extra.push(("log_chunks_written", log.chunks_written));
                stats.extra.push(("log_buffers_queued", log.buffers_queued));
                stats.extra.push(("log_queued_buffers_peak", log.queued_buffers_peak));
            }
            if let Some(cache) = t.cache_stats() {
                stats.extra.push(("cache_hits", cache.hits));
                stats.extra.push(("cache_misses", cache.misses));
            }
        }
        stats
    }

    fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.stop_threads();
        let _x = (self.inner.mode == FcMode::Xm).then(|| self.inner.xm.write());
        let result = self.inner.final_checkpoint();
        let log_result = self.inner.log.as_ref().map_or(Ok(()), |log| log.close());
        *self.inner.tree.write() = None;
        result.and(log_result)
    }
}
