//! [`LaTreeEngine`]: open (volatile, or persistent with recovery and replay), close, the
//! test hooks, and the `OrderedIndex` implementation.

use std::path::Path;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use lamina_core::{
    CasOutcome, Durability, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch,
};
use lamina_storage::log::{LogOptions, Record, RecordOp, SegmentLog, SegmentLogOptions};
use lamina_storage::{FileOptions, FileStorage, MemoryStorage, Storage};
use parking_lot::{Condvar, Mutex, RwLock};

use super::checkpoint::background;
use super::durable::{self, LOG_FILE_PREFIX};
use super::inner::{Counters, Inner, State, Wake};
use super::options::LaTreeEngineOptions;
use super::write::apply_ops;
use crate::node::NodeLayout;
use crate::tree::{LaTree, TreeStats};

/// The log's write buffer (also its largest record).
const LOG_BUFFER_BYTES: usize = 4 << 20;
/// Bytes of one log segment (at least one largest chunk); segments wholly older than the
/// last checkpoint are removed.
const LOG_SEGMENT_BYTES: u64 = 8 << 20;
/// How long a `Sync` write's record may wait in the log buffer for others to join it.
const LOG_LINGER: Duration = Duration::from_millis(2);

/// The `latree` engine (and `latree-btree`, the same with `buffered = false`).
#[derive(Debug)]
pub struct LaTreeEngine {
    inner: Arc<Inner>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Drop for LaTreeEngine {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

impl LaTreeEngine {
    /// A volatile tree over a fresh memory storage (nothing survives `close`; the tree
    /// rewrites nodes in place, `crash_consistent = false`).
    pub fn volatile(options: &LaTreeEngineOptions) -> Result<LaTreeEngine> {
        options.validate()?;
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let mut tree_options = options.tree.clone();
        tree_options.crash_consistent = false;
        let tree = LaTree::create(&*storage, tree_options)?;
        Self::start(options, storage, None, None, State { tree, applied_seq: 0, logged_bytes: 0 })
    }

    /// Opens (or creates, per `options.intent`) the persistent tree in `storage`: the
    /// checkpoint the superblock names, then the log replayed after it.
    pub fn open(storage: Arc<dyn Storage>, options: &LaTreeEngineOptions) -> Result<LaTreeEngine> {
        options.validate()?;
        let mut tree_options = options.tree.clone();
        tree_options.crash_consistent = true;
        let recovered = durable::recover(&storage, &tree_options, options.intent.must_exist())?;
        let mut durable = recovered.durable;
        let applied_seq = recovered.applied_seq;
        let log_options = SegmentLogOptions {
            segment_bytes: LOG_SEGMENT_BYTES.max(
                LogOptions { buffer_bytes: LOG_BUFFER_BYTES, ..LogOptions::default() }
                    .chunk_bytes_max()
                    .next_multiple_of(4096),
            ),
            log: LogOptions {
                buffer_bytes: LOG_BUFFER_BYTES,
                // The engine waits for syncs itself, after releasing the tree lock.
                durability: match options.durability {
                    Durability::Sync => Durability::Buffered { max_delay: LOG_LINGER },
                    other => other,
                },
                file_prefix: LOG_FILE_PREFIX.into(),
                ..LogOptions::default()
            },
        };
        let (tree, log, records) = match recovered.tree {
            Some(tree) => {
                let mut records = Vec::new();
                // Validates the log (a log ending before `applied_seq` is corruption) before
                // anything is changed.
                let log =
                    SegmentLog::open_committed(storage.clone(), log_options, applied_seq, |r| {
                        records.push(r);
                    })?;
                remove_files(&storage, &recovered.cleanup)?;
                (tree, log, records)
            }
            None => {
                // A new store (or an interrupted creation, whose files are removed first).
                remove_files(&storage, &recovered.cleanup)?;
                let tree = durable::create(
                    &storage,
                    &tree_options,
                    &mut durable,
                    options.checkpoint_inline_bytes_max,
                )?;
                let log = SegmentLog::open_committed(storage.clone(), log_options, 0, |_| {
                    unreachable!("a new store's log is empty (recovery refuses log segments)")
                })?;
                (tree, log, Vec::new())
            }
        };
        let mut state = State { tree, applied_seq, logged_bytes: 0 };
        let replayed = replay(&mut state, records)?;
        let engine = Self::start(options, storage, Some(log), Some(durable), state)?;
        engine.inner.counters.replayed_records.store(replayed, Ordering::Relaxed);
        Ok(engine)
    }

    /// Opens the persistent tree in directory `path` with the file backend.
    pub fn open_dir(path: impl AsRef<Path>, options: &LaTreeEngineOptions) -> Result<LaTreeEngine> {
        let storage = FileStorage::open_dir(path, FileOptions::default())?;
        Self::open(Arc::new(storage), options)
    }

    fn start(
        options: &LaTreeEngineOptions,
        storage: Arc<dyn Storage>,
        log: Option<SegmentLog>,
        durable: Option<durable::Durable>,
        state: State,
    ) -> Result<LaTreeEngine> {
        let layout = NodeLayout::new(
            options.tree.node_bytes,
            options.tree.key_bytes_max,
            options.tree.value_bytes_max,
        )?;
        let persistent = log.is_some();
        let logged_bytes = state.logged_bytes;
        let node_cache = state.tree.node_cache_handle();
        let inner = Arc::new(Inner {
            options: options.clone(),
            layout,
            storage,
            log,
            state: RwLock::new(Some(state)),
            node_cache,
            durable: Mutex::new(durable),
            checkpointing: Mutex::new(()),
            wake: Mutex::new(Wake::default()),
            wake_cv: Condvar::new(),
            counters: Counters::default(),
            closed: AtomicBool::new(false),
            failure: OnceLock::new(),
        });
        let thread = if persistent {
            let inner = inner.clone();
            Some(
                std::thread::Builder::new()
                    .name("latree-checkpoint".into())
                    .spawn(move || background(&inner))
                    .map_err(|e| Error::io("starting the latree checkpoint thread", e))?,
            )
        } else {
            None
        };
        inner.maybe_want_checkpoint(logged_bytes); // a long replay is checkpointed soon
        Ok(LaTreeEngine { inner, thread: Mutex::new(thread) })
    }

    /// Takes a checkpoint now (persistent trees; tests and tools).
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.check_open()?;
        self.inner.checkpoint(false)
    }

    /// Checks every invariant of the tree (`LaTree::verify`).
    pub fn verify(&self) -> Result<TreeStats> {
        let state = self.inner.lock_tree()?;
        state.tree.verify()
    }

    /// Runs `f` on the tree under the exclusive tree lock (inspection, tests).
    pub fn with_tree<R>(&self, f: impl FnOnce(&mut LaTree) -> R) -> Result<R> {
        let mut state = self.inner.lock_tree()?;
        Ok(f(&mut state.tree))
    }

    /// The storage below the tree (its I/O counters).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.inner.storage
    }

    /// The error every call gets after a failure, if any.
    pub fn failure(&self) -> Option<Error> {
        self.inner.check_failed().err()
    }

    /// Simulates a crash for tests: stops the checkpointer and the log without flushing
    /// anything; the handle refuses every call afterwards.
    pub fn crash(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.stop_thread();
        if let Some(log) = &self.inner.log {
            log.abandon();
        }
    }

    fn stop_thread(&self) {
        {
            let mut wake = self.inner.wake.lock();
            wake.stop = true;
            self.inner.wake_cv.notify_all();
        }
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join(); // a panic there already poisoned nothing we hold
        }
    }
}

/// Applies the log records after the checkpoint; returns how many.
fn replay(state: &mut State, records: Vec<Record>) -> Result<u64> {
    let mut replayed = 0;
    for record in records {
        if record.seq <= state.applied_seq {
            continue;
        }
        let bytes = match &record.op {
            RecordOp::Put { key, value } => {
                state.tree.put(key, value)?;
                lamina_storage::log::put_record_bytes(key.len(), value.len())
            }
            RecordOp::Delete { key } => {
                state.tree.delete(key)?;
                lamina_storage::log::put_record_bytes(key.len(), 0)
            }
            RecordOp::Batch(ops) | RecordOp::BatchPart(ops) => {
                apply_ops(&mut state.tree, ops)?;
                ops.iter().map(|op| (op.key().len() + 16) as u64).sum()
            }
        };
        state.applied_seq = record.seq;
        state.logged_bytes += bytes;
        replayed += 1;
    }
    Ok(replayed)
}

/// Removes recovery's leftovers (after everything was validated).
fn remove_files(storage: &Arc<dyn Storage>, names: &[String]) -> Result<()> {
    for name in names {
        if storage.exists(name)? {
            storage.remove(name)?;
        }
    }
    Ok(())
}

impl OrderedIndex for LaTreeEngine {
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
        self.inner.check_open()?;
        match &self.inner.log {
            Some(log) => log.sync().map_err(|e| self.inner.record_failure(e)),
            None => Ok(()),
        }
    }

    fn stats(&self) -> Stats {
        let inner = &self.inner;
        let mut stats = Stats::new(inner.options.engine_name());
        stats.user_bytes_written = inner.counters.user_bytes_written.load(Ordering::Relaxed);
        stats.io = inner.storage.io_stats();
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        if let Some(state) = inner.state.read().as_ref() {
            let tree = &state.tree;
            let c = tree.counters();
            let cache = tree.node_cache().stats();
            let pool = tree.buffer_pool().stats();
            stats.memory_bytes = cache.cached_bytes.saturating_add(pool.bytes_in_memory);
            stats.extra = vec![
                ("root_level", u64::from(tree.root_level())),
                ("emptyings", c.emptyings),
                ("splits", c.splits),
                ("merges", c.merges),
                ("grows", c.grows),
                ("buffers_redistributed", c.buffers_redistributed),
                ("logged_bytes_since_checkpoint", state.logged_bytes),
                ("node_cache_hits", cache.hits),
                ("node_cache_misses", cache.misses),
                ("buffers", pool.buffers),
                ("reclamations", c.reclaim.reclamations),
                ("reclamations_deferred", c.reclaim.deferred),
                ("reclaim_nodes_copied", c.reclaim.nodes_copied),
                ("reclaim_bytes_erased", c.reclaim.bytes_erased),
            ];
        }
        stats.extra.push(("checkpoints", load(&inner.counters.checkpoints)));
        stats.extra.push(("replayed_records", load(&inner.counters.replayed_records)));
        stats
    }

    fn close(&self) -> Result<()> {
        {
            // Under the tree lock: no operation is in flight, and every later one is refused.
            let _state = self.inner.state.write();
            if self.inner.closed.swap(true, Ordering::AcqRel) {
                return Ok(());
            }
        }
        self.stop_thread();
        let _one = self.inner.checkpointing.lock();
        let mut guard = self.inner.state.write();
        let result = match guard.as_mut() {
            Some(state) if self.inner.log.is_some() => {
                self.inner.check_failed().and_then(|()| self.inner.checkpoint_locked(state))
            }
            _ => Ok(()),
        };
        *guard = None;
        drop(guard);
        let log_result = self.inner.log.as_ref().map_or(Ok(()), SegmentLog::close);
        result.and(log_result)
    }
}
