//! [`NbTree`]: the `OrderedIndex` over the NB-tree.
//!
//! - `inner.rs`: the shared state and its locks (lock order documented there).
//! - `write.rs`: modifications (delta records into the root's d-tree, section 3.2.2).
//! - `read.rs`: point queries with Bloom checks (sections 3.2.3, 5.2) and scans.
//! - `work.rs`: the deamortized flush job: freeze, schedule, steps, commits (section 5.1).
//! - this file: open and recovery, the background thread, close, verify, stats.

mod inner;
mod read;
mod work;
mod write;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use lamina_core::{CasOutcome, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch};
use lamina_storage::log::{LogOptions, RecordOp, SegmentLog, SegmentLogOptions};
use lamina_storage::{FileOptions, FileStorage, MemoryStorage, Storage};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::dtree::DTreeParams;
use crate::flush::WriterContext;
use crate::memtable::Memtable;
use crate::options::{Deamortization, NbTreeOptions};
use crate::persist::{self, LOG_FILE_PREFIX};
use crate::stree::STree;
pub use inner::STRIPES;
use inner::{Counters, Inner, Published, Version, Work};
pub use work::{
    BACKGROUND_STEP_PAGES, BACKGROUND_WRITE_BATCH_PAGES, HELP_SLACK_PAGES, LOG_CHECKPOINT_SIGMAS,
    OVERFLOW_SIGMA_DIVISOR,
};

/// Write buffer of the log.
const LOG_BUFFER_BYTES: usize = 1 << 20;
/// Size of a log segment.
const LOG_SEGMENT_BYTES: u64 = 64 << 20;
/// How long the background thread sleeps when there is no work (it is woken at once when
/// a job starts; the timeout only bounds a missed wake-up).
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// The `nbtree` engine.
#[derive(Debug)]
pub struct NbTree {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for NbTree {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

impl NbTree {
    /// A volatile tree over a fresh memory storage: nothing survives `close`.
    pub fn volatile(options: &NbTreeOptions) -> Result<NbTree> {
        Self::start(Arc::new(MemoryStorage::new()), options, false)
    }

    /// Opens (or creates, per `options.intent`) the persistent tree stored in `storage`,
    /// recovering it from its superblock, manifest and log. `fanout` and `sigma_bytes` are
    /// those the tree was created with (the options' apply to a new tree).
    pub fn open(storage: Arc<dyn Storage>, options: &NbTreeOptions) -> Result<NbTree> {
        Self::start(storage, options, true)
    }

    /// Opens the persistent tree in directory `path` with the file backend.
    pub fn open_dir(path: impl AsRef<Path>, options: &NbTreeOptions) -> Result<NbTree> {
        let storage = FileStorage::open_dir(path, FileOptions::default())?;
        Self::open(Arc::new(storage), options)
    }

    #[allow(
        clippy::too_many_lines,
        reason = "open is one sequence: recover, replay, assemble, start"
    )]
    fn start(
        storage: Arc<dyn Storage>,
        options: &NbTreeOptions,
        persistent: bool,
    ) -> Result<NbTree> {
        options.validate()?;
        let mut log_synced_seq = 0;
        let (tree, persist, fanout, sigma_bytes, flushed_seq, next_dtree_id, unnamed_files) =
            if persistent {
                let r = persist::recover(
                    &storage,
                    options.intent.must_exist(),
                    options.fanout,
                    options.sigma_bytes,
                )?;
                let m = &r.manifest;
                log_synced_seq = m.log_synced_seq;
                (
                    r.tree,
                    Some(r.persist),
                    m.fanout as usize,
                    m.sigma_bytes,
                    m.flushed_seq,
                    m.next_dtree_id,
                    r.unnamed_files,
                )
            } else {
                (STree::new(), None, options.fanout as usize, options.sigma_bytes, 0, 1, Vec::new())
            };
        // A crash in the middle of a flush job recovers the state its last step committed.
        let recovered_mid_job =
            persistent && crate::verify::sizes_hold(&tree, fanout, sigma_bytes).is_err();
        let active = Memtable::new(sigma_bytes);
        let log = if persistent {
            let log_options = SegmentLogOptions {
                segment_bytes: LOG_SEGMENT_BYTES,
                log: LogOptions {
                    durability: options.durability,
                    buffer_bytes: LOG_BUFFER_BYTES,
                    file_prefix: LOG_FILE_PREFIX.to_string(),
                    ..LogOptions::default()
                },
            };
            let log_synced_seq = log_synced_seq.max(flushed_seq);
            Some(SegmentLog::open_committed_through(
                storage.clone(),
                log_options,
                flushed_seq,
                log_synced_seq,
                |record| {
                    if record.seq <= flushed_seq {
                        return;
                    }
                    match record.op {
                        RecordOp::Put { key, value } => active.apply(&key, Some(&value)),
                        RecordOp::Delete { key } => active.apply(&key, None),
                        RecordOp::Batch(ops) | RecordOp::BatchPart(ops) => {
                            for op in ops {
                                match op {
                                    lamina_core::BatchOp::Put { key, value } => {
                                        active.apply(&key, Some(&value));
                                    }
                                    lamina_core::BatchOp::Delete { key } => {
                                        active.apply(&key, None);
                                    }
                                }
                            }
                        }
                    }
                },
            )?)
        } else {
            None
        };
        // Everything is validated (the log included): recovery's removals are made now,
        // before anything is written.
        persist::remove_files(&storage, &unnamed_files)?;
        let context = WriterContext {
            storage: storage.clone(),
            params: DTreeParams {
                page_bytes: options.page_bytes,
                bloom_bits_per_key: options.bloom_bits_per_key,
            },
            next_id: Arc::new(AtomicU64::new(next_dtree_id)),
            pages_written: Arc::new(AtomicU64::new(0)),
            write_batch_pages: match options.deamortization {
                Deamortization::Foreground => 1,
                Deamortization::Background => BACKGROUND_WRITE_BATCH_PAGES,
            },
        };
        let replayed = active.bytes();
        let version = Arc::new(Version { stree: Arc::new(tree.clone()), frozen: None });
        let inner = Arc::new(Inner {
            options: options.clone(),
            fanout,
            sigma_bytes,
            storage,
            log,
            published: RwLock::new(Published { active: Arc::new(active), version }),
            write_gate: RwLock::new(()),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            work: Mutex::new(Work {
                tree,
                job: None,
                restart: None,
                persist,
                flushed_seq,
                frozen_seq: flushed_seq,
            }),
            work_ready: Condvar::new(),
            context,
            counters: Counters::default(),
            pause_slot: lamina_storage::pause::SpinSlot::default(),
            closed: std::sync::atomic::AtomicBool::new(false),
            stop: std::sync::atomic::AtomicBool::new(false),
            failure: std::sync::OnceLock::new(),
            recovered_mid_job: std::sync::atomic::AtomicBool::new(recovered_mid_job),
        });
        inner.counters.logged_bytes.store(replayed, Ordering::Relaxed);
        {
            let mut work = inner.work.lock();
            inner.repair(&mut work)?;
            inner.rotate(&mut work)?; // a replayed log may fill the root already
        }
        let thread = (options.deamortization == Deamortization::Background).then(|| {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name("nbtree-flush".into())
                .spawn(move || background(&inner))
                .expect("spawning the flush thread")
        });
        Ok(NbTree { inner, thread: Mutex::new(thread) })
    }

    /// Waits until the flush job in progress (if any) is done.
    pub fn wait_for_flushes(&self) -> Result<()> {
        self.inner.check_open()?;
        let mut work = self.inner.work.lock();
        self.inner.finish(&mut work)
    }

    /// Freezes the active memtable (if not empty) and runs its whole flush job now.
    pub fn flush_now(&self) -> Result<()> {
        self.inner.check_open()?;
        let mut work = self.inner.work.lock();
        self.inner.finish(&mut work)?;
        self.inner.check_open()?;
        self.inner.freeze(&mut work);
        self.inner.finish(&mut work)
    }

    /// Checks every invariant of the published tree (`verify.rs`): the s-tree's structure,
    /// the cross-s-node linkage property, lazy-removal pointers, live sizes, each d-tree's
    /// own checks and Bloom filter, and that the storage holds no d-tree file the tree does
    /// not name (beyond those of a job in progress).
    pub fn verify(&self) -> Result<()> {
        self.inner.check_open()?;
        let work = self.inner.work.lock();
        let version = self.inner.published.read().version.clone();
        let mid_job = work.job.is_some() || self.inner.recovered_mid_job.load(Ordering::Acquire);
        let slack = usize::from(mid_job);
        crate::verify::verify_tree(
            &version.stree,
            self.inner.fanout,
            self.inner.sigma_bytes,
            slack,
        )?;
        if work.job.is_none() && self.inner.log.is_some() {
            crate::verify::verify_files(&self.inner.storage, &version.stree)?;
        }
        Ok(())
    }

    /// Whether the tree still holds the state a crash left in the middle of a flush job:
    /// the between-jobs size limits (section 5.1) do not hold yet. The open resumes the
    /// interrupted cascade as a job of its own; this turns false when a job ends with the
    /// limits holding.
    pub fn recovered_mid_job(&self) -> bool {
        self.inner.recovered_mid_job.load(Ordering::Acquire)
    }

    /// Whether the between-jobs size limits of section 5.1 hold on the tree as published
    /// now (they may not in the middle of a job; for tests and tools).
    pub fn between_jobs_sizes_hold(&self) -> bool {
        let tree = self.stree();
        crate::verify::sizes_hold(&tree, self.inner.fanout, self.inner.sigma_bytes).is_ok()
    }

    /// Whether the children of some s-node of the tree as published now hold more than the
    /// between-jobs limit `f (sigma + e) + sigma` (for tests and tools).
    pub fn has_oversized_s_node(&self) -> bool {
        let tree = self.stree();
        crate::verify::oversized_path(&tree, self.inner.fanout, self.inner.sigma_bytes).is_some()
    }

    /// The s-tree as published now (for tests and tools).
    pub fn stree(&self) -> Arc<STree> {
        self.inner.published.read().version.stree.clone()
    }

    /// D-tree pages written since open (deterministic; tests assert on it).
    pub fn dtree_pages_written(&self) -> u64 {
        self.inner.context.pages_written.load(Ordering::Relaxed)
    }

    /// The page bound of the job in progress (0: none).
    pub fn job_bound_pages(&self) -> u64 {
        if self.inner.counters.job_active.load(Ordering::Acquire) {
            self.inner.counters.job_bound_pages.load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// Simulates a crash for tests: stops the flush thread and the log without flushing
    /// anything; the handle refuses every call afterwards.
    pub fn crash(&self) {
        self.stop_thread();
        self.inner.closed.store(true, Ordering::Release);
        if let Some(log) = &self.inner.log {
            log.abandon();
        }
    }

    fn stop_thread(&self) {
        self.inner.stop.store(true, Ordering::Release);
        {
            let _work = self.inner.work.lock();
            self.inner.work_ready.notify_all();
        }
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

/// The background thread (`Deamortization::Background`): steps the job while there is one.
fn background(inner: &Inner) {
    let mut work = inner.work.lock();
    while !inner.stop.load(Ordering::Acquire) {
        if work.job.is_none() {
            inner.work_ready.wait_for(&mut work, IDLE_WAIT);
            continue;
        }
        let result = {
            let _span = tracing::trace_span!("nbtree_flush_step").entered();
            inner.run(&mut work, BACKGROUND_STEP_PAGES)
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "nbtree background flush failed");
            // Recorded by `run` (a full disk is retried by the next write); wait for it.
            inner.work_ready.wait_for(&mut work, IDLE_WAIT);
        }
        // Let writers that want to help or freeze in between steps.
        parking_lot::MutexGuard::bump(&mut work);
    }
}

impl OrderedIndex for NbTree {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        lamina_core::limits::check_key(key)?;
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
        self.inner.check_open()?;
        match &self.inner.log {
            Some(log) => log.sync(),
            None => Ok(()),
        }
    }

    fn stats(&self) -> Stats {
        let inner = &self.inner;
        let c = &inner.counters;
        let mut stats = Stats::new("nbtree");
        stats.user_bytes_written = c.user_bytes_written.load(Ordering::Relaxed);
        stats.io = inner.storage.io_stats();
        let (active, version) = inner.snapshot();
        let frozen = version.frozen.as_ref().map_or(0, |f| f.memory_bytes());
        let tree = &version.stree;
        // The memtables, and what each d-tree holds in memory (Bloom filter, leaf index).
        let dtrees: u64 = tree.dtrees().map(|d| d.memory_bytes()).sum();
        stats.memory_bytes = active.memory_bytes() + frozen + dtrees;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        stats.extra = vec![
            ("s_tree_height", tree.height() as u64),
            ("s_nodes", tree.nodes.len() as u64),
            ("d_trees", tree.dtrees().count() as u64),
            ("live_bytes_on_disk", tree.live_bytes()),
            ("memtable_bytes", active.bytes()),
            ("dtree_pages_written", load(&inner.context.pages_written)),
            ("flush_jobs", load(&c.jobs)),
            ("flush_stalls", load(&c.stalls)),
            ("helped_pages", load(&c.helped_pages)),
            ("commits", load(&c.commits)),
        ];
        stats
    }

    fn close(&self) -> Result<()> {
        let inner = &self.inner;
        {
            let _gate = inner.write_gate.write();
            if inner.closed.swap(true, Ordering::AcqRel) {
                return Ok(());
            }
        }
        self.stop_thread();
        let mut work = inner.work.lock();
        if let Some(job) = work.job.take() {
            job.abandon(); // the log still holds the frozen memtable: replayed at open
        }
        let Some(log) = &inner.log else { return Ok(()) };
        // Writes are shut out: every record is appended, and `close` syncs them all.
        let appended_seq = log.next_seq() - 1;
        log.close()?;
        // Record the log's end in the committed state (the last commit's tree and
        // `flushed_seq`), so a log cut or lost after a clean close is refused at open rather
        // than taken for a crash's torn tail. Not after a failure: nothing more is written.
        let flushed_seq = work.flushed_seq;
        if inner.failure.get().is_none()
            && let Some(persist) = work.persist.as_mut()
        {
            let version = inner.published.read().version.clone();
            let manifest = persist::manifest_of(
                &version.stree,
                inner.fanout as u32,
                inner.sigma_bytes,
                inner.context.next_id.load(Ordering::Relaxed),
                flushed_seq,
            );
            persist.log_synced_through(appended_seq);
            persist.commit(None, &manifest)?;
        }
        Ok(())
    }
}

impl NbTree {
    /// The error every call gets after a failure, if any.
    pub fn failure(&self) -> Option<Error> {
        self.inner.check_open().err()
    }
}
