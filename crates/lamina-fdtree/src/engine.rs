//! [`FdTree`]: the FD+tree as a `lamina_core::OrderedIndex`, with the FD+XM concurrency
//! scheme of section 3: one readers-writer lock over the whole tree. Lookups and scans take
//! it shared; a modification takes it exclusively, and a merge it triggers runs before the
//! lock is released.
//!
//! Durability: writes are acknowledged from memory (`L_0`); `sync` and `close` checkpoint the
//! tree (level files are synced by each merge; the manifest with `L_0` is written
//! atomically). A crash loses the writes since the last checkpoint (the group-commit log is
//! not wired in yet).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::limits::check_scan_limit;
use lamina_core::{
    BatchOp, CasOutcome, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch,
};
use lamina_storage::{FileOptions, FileStorage, MemoryStorage, Storage};
use parking_lot::RwLock;

use crate::options::FdTreeOptions;
use crate::store::BlockStore;
use crate::tree::Tree;

/// The `fdtree` engine (FD+XM).
#[derive(Debug)]
pub struct FdTree {
    /// `None` once closed.
    tree: RwLock<Option<Tree>>,
    storage: Arc<dyn Storage>,
    persistent: bool,
    user_bytes_written: AtomicU64,
}

impl FdTree {
    /// A volatile tree over a fresh [`MemoryStorage`]: nothing survives `close`.
    pub fn volatile(options: &FdTreeOptions) -> Result<FdTree> {
        Self::with_storage(Arc::new(MemoryStorage::new()), options, false)
    }

    /// Opens (or creates) the tree stored in `storage`; `close` and `sync` checkpoint it.
    pub fn open(storage: Arc<dyn Storage>, options: &FdTreeOptions) -> Result<FdTree> {
        Self::with_storage(storage, options, true)
    }

    /// Opens (or creates) the tree in directory `path` with the file backend.
    pub fn open_dir(path: impl AsRef<Path>, options: &FdTreeOptions) -> Result<FdTree> {
        let storage = FileStorage::open_dir(path, FileOptions::default())?;
        Self::open(Arc::new(storage), options)
    }

    /// A tree over `storage`; with `persistent`, it is loaded from and checkpointed to it.
    pub fn with_storage(
        storage: Arc<dyn Storage>,
        options: &FdTreeOptions,
        persistent: bool,
    ) -> Result<FdTree> {
        let params = options.params()?;
        let store = BlockStore::new(storage.clone(), &params);
        let tree = Tree::open(params, store, persistent)?;
        Ok(FdTree {
            tree: RwLock::new(Some(tree)),
            storage,
            persistent,
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

    fn write<R>(&self, f: impl FnOnce(&mut Tree) -> Result<R>) -> Result<R> {
        let mut guard = self.tree.write();
        f(guard.as_mut().ok_or(Error::Closed)?)
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
        self.write(|t| {
            t.check_put(key, value)?;
            t.put(key, value)
        })?;
        self.user_bytes_written.fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.write(|t| {
            t.check_key(key)?;
            t.delete(key)
        })
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.write(|t| {
            match new {
                Some(v) => t.check_put(key, v)?,
                None => t.check_key(key)?,
            }
            if let Some(e) = expected {
                lamina_core::limits::check_value(e)?;
            }
            let current = t.get(key)?;
            if current.as_deref() != expected {
                return Ok(CasOutcome::Mismatch { current });
            }
            match new {
                Some(v) => t.put(key, v)?,
                None => {
                    t.delete(key)?;
                }
            }
            Ok(CasOutcome::Swapped)
        })
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        self.read(|t| t.scan(range, limit))
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        self.write(|t| {
            for op in batch.ops() {
                match op {
                    BatchOp::Put { key, value } => t.check_put(key, value)?,
                    BatchOp::Delete { key } => t.check_key(key)?,
                }
            }
            // Apply every operation to L_0 first, then run the merges they trigger, so a
            // failing merge cannot leave half a batch applied.
            for op in batch.ops() {
                match op {
                    BatchOp::Put { key, value } => t.apply_put(key, value)?,
                    BatchOp::Delete { key } => {
                        t.apply_delete(key)?;
                    }
                }
            }
            t.run_triggered_merges()
        })?;
        self.user_bytes_written.fetch_add(batch.payload_bytes() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        if !self.persistent {
            return self.read(|_| Ok(()));
        }
        self.write(Tree::checkpoint)
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
            if self.persistent {
                tree.checkpoint()?;
            }
            *guard = None;
        }
        Ok(())
    }
}
