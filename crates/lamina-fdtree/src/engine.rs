//! [`FdTree`]: the FD+tree as a `lamina_core::OrderedIndex`, with the FD+XM concurrency
//! scheme of section 3: one readers-writer lock over the whole tree. Lookups and scans take
//! it shared; a modification takes it exclusively, and a merge it triggers runs before the
//! lock is released.
//!
//! Persistent trees log every modification under the write lock (log order = apply order),
//! then, under `Durability::Sync`, wait for the log sync after releasing the lock, so
//! concurrent writers share one sync (group commit). See `persist.rs`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lamina_core::limits::check_scan_limit;
use lamina_core::{
    BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, OrderedIndex, Result, Stats,
    WriteBatch,
};
use lamina_storage::log::{Log, LogOp, LogOptions, Retention};
use lamina_storage::{FileOptions, FileStorage, MemoryStorage, Storage};
use parking_lot::RwLock;

use crate::options::FdTreeOptions;
use crate::persist::LOG_FILE_PREFIX;
use crate::store::BlockStore;
use crate::tree::Tree;

/// Bytes of one log segment; segments wholly older than the last checkpoint are removed.
const LOG_SEGMENT_BYTES: u64 = 8 << 20;
/// How long a `Sync` write's record may wait in the log buffer for others to join it.
const LOG_LINGER: Duration = Duration::from_millis(2);

/// The `fdtree` engine (FD+XM).
#[derive(Debug)]
pub struct FdTree {
    /// `None` once closed.
    tree: RwLock<Option<Tree>>,
    storage: Arc<dyn Storage>,
    log: Option<Arc<Log>>,
    durability: Durability,
    user_bytes_written: AtomicU64,
}

impl FdTree {
    /// A volatile tree over a fresh [`MemoryStorage`]: nothing survives `close`.
    pub fn volatile(options: &FdTreeOptions) -> Result<FdTree> {
        Self::with_storage(Arc::new(MemoryStorage::new()), options, false)
    }

    /// Opens (or creates) the persistent tree stored in `storage`, recovering it from its
    /// superblock and log.
    pub fn open(storage: Arc<dyn Storage>, options: &FdTreeOptions) -> Result<FdTree> {
        Self::with_storage(storage, options, true)
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
        let params = options.params()?;
        let store = BlockStore::new(storage.clone(), &params);
        if !persistent {
            return Ok(FdTree {
                tree: RwLock::new(Some(Tree::new(params, store))),
                storage,
                log: None,
                durability: Durability::None,
                user_bytes_written: AtomicU64::new(0),
            });
        }
        let mut tree = Tree::recover(params, store)?;
        let log_options = LogOptions {
            retention: Retention::Truncate { segment_bytes: LOG_SEGMENT_BYTES },
            // The engine waits for syncs itself (after releasing the tree lock).
            durability: match options.durability {
                Durability::Sync => Durability::Buffered { max_delay: LOG_LINGER },
                other => other,
            },
            file_prefix: LOG_FILE_PREFIX.into(),
            ..LogOptions::default()
        };
        let mut records = Vec::new();
        let log = Arc::new(Log::open(storage.clone(), log_options, |r| records.push(r))?);
        tree.attach_log(log.clone(), records)?;
        Ok(FdTree {
            tree: RwLock::new(Some(tree)),
            storage,
            log: Some(log),
            durability: options.durability,
            user_bytes_written: AtomicU64::new(0),
        })
    }

    /// The storage below the tree (for I/O counters in tests and benchmarks).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Runs `f` on the tree under the shared lock (inspection, tests).
    pub fn with_tree<R>(&self, f: impl FnOnce(&Tree) -> R) -> Result<R> {
        let guard = self.tree.read();
        guard.as_ref().map(f).ok_or(Error::Closed)
    }

    /// Checks every invariant of the tree (see `Tree::verify`).
    pub fn verify(&self) -> Result<()> {
        self.with_tree(Tree::verify)?
    }

    fn read<R>(&self, f: impl FnOnce(&Tree) -> Result<R>) -> Result<R> {
        let guard = self.tree.read();
        f(guard.as_ref().ok_or(Error::Closed)?)
    }

    /// Under the write lock: `check` (refusals change nothing), then, if it returns an
    /// operation, log it and `apply` it. Then waits for durability as configured.
    fn modify<'op, R>(
        &self,
        check: impl FnOnce(&Tree) -> Result<Result<LogOp<'op>, R>>,
        apply: impl FnOnce(&mut Tree) -> Result<R>,
    ) -> Result<R> {
        let result = {
            let mut guard = self.tree.write();
            let t = guard.as_mut().ok_or(Error::Closed)?;
            let op = match check(t)? {
                Ok(op) => op,
                Err(done) => return Ok(done),
            };
            if let Some(log) = &self.log {
                let seq = log.append(op)?;
                t.set_applied_seq(seq);
            }
            apply(t)?
        };
        if self.durability == Durability::Sync
            && let Some(log) = &self.log
        {
            log.sync()?;
        }
        Ok(result)
    }
}

impl OrderedIndex for FdTree {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.read(|t| {
            t.check_key(key)?;
            t.get(key)
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.modify(
            |t| t.check_put(key, value).map(|()| Ok(LogOp::Put { key, value })),
            |t| t.put(key, value),
        )?;
        self.user_bytes_written.fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.modify(
            |t| {
                t.check_key(key)?;
                // A delete of an absent key changes nothing and is not logged.
                Ok(if t.get(key)?.is_some() { Ok(LogOp::Delete { key }) } else { Err(false) })
            },
            |t| t.delete(key),
        )
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.modify(
            |t| {
                match new {
                    Some(v) => t.check_put(key, v)?,
                    None => t.check_key(key)?,
                }
                if let Some(e) = expected {
                    lamina_core::limits::check_value(e)?;
                }
                let current = t.get(key)?;
                if current.as_deref() != expected {
                    return Ok(Err(CasOutcome::Mismatch { current }));
                }
                Ok(Ok(match new {
                    Some(value) => LogOp::Put { key, value },
                    None => LogOp::Delete { key },
                }))
            },
            |t| {
                match new {
                    Some(v) => t.put(key, v)?,
                    None => drop(t.delete(key)?),
                }
                Ok(CasOutcome::Swapped)
            },
        )
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        self.read(|t| t.scan(range, limit))
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        self.modify(
            |t| {
                for op in batch.ops() {
                    match op {
                        BatchOp::Put { key, value } => t.check_put(key, value)?,
                        BatchOp::Delete { key } => t.check_key(key)?,
                    }
                }
                Ok(Ok(LogOp::Batch(batch)))
            },
            |t| {
                // Every operation goes to L_0 first, then the triggered merges run, so a
                // failing merge cannot leave half a batch applied.
                for op in batch.ops() {
                    match op {
                        BatchOp::Put { key, value } => t.apply_put(key, value)?,
                        BatchOp::Delete { key } => drop(t.apply_delete(key)?),
                    }
                }
                t.run_triggered_merges()
            },
        )?;
        self.user_bytes_written.fetch_add(batch.payload_bytes() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.read(|_| Ok(()))?;
        match &self.log {
            Some(log) => log.sync(),
            None => Ok(()),
        }
    }

    fn stats(&self) -> Stats {
        let mut stats = Stats::new("fdtree");
        stats.user_bytes_written = self.user_bytes_written.load(Ordering::Relaxed);
        stats.io = self.storage.io_stats();
        if let Some(t) = self.tree.read().as_ref() {
            let c = t.counters();
            let m = t.merge_counts();
            stats.keys = Some(c.live_keys());
            stats.memory_bytes = t.memory_bytes();
            stats.extra = vec![
                ("height", t.height() as u64),
                ("materialized_levels", t.materialized_labels().len() as u64),
                ("n_insert_entries", c.inserts),
                ("n_delete_entries", c.deletes),
                ("merges_overflow", m.overflow),
                ("merges_underflow", m.underflow),
                ("merges_full", m.full),
                ("merges_grew", m.grew),
                ("merges_shrank", m.shrank),
                ("levels_skipped", m.levels_skipped),
                ("levels_tightened", m.levels_tightened),
            ];
        }
        stats
    }

    fn close(&self) -> Result<()> {
        let mut guard = self.tree.write();
        if let Some(tree) = guard.as_mut() {
            tree.checkpoint()?;
            if let Some(log) = &self.log {
                log.close()?;
            }
            *guard = None;
        }
        Ok(())
    }
}
