//! [`FdTree`]: the FD+tree as a `lamina_core::OrderedIndex`, with the concurrency schemes of
//! section 3. One readers-writer lock covers the tree: lookups and scans take it shared for
//! their whole descent, a modification exclusively.
//!
//! - FD+XM: a merge a modification triggers runs before the lock is released.
//! - FD+DS: merges run in a background thread (`merger.rs`, `merge/background.rs`) and hold
//!   the exclusive lock only to start (freeze `L_0`) and to switch the new levels in; lookups
//!   and modifications proceed while the merge builds the new levels on the side.
//!
//! Persistent trees log every modification under the write lock (log order = apply order),
//! then, under `Durability::Sync`, wait for the log sync after releasing the lock, so
//! concurrent writers share one sync (group commit). See `persist.rs`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use lamina_core::limits::check_scan_limit;
use lamina_core::{
    BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, OrderedIndex, Result, Stats,
    WriteBatch,
};
use lamina_storage::log::{LogOp, LogOptions, SegmentLog, SegmentLogOptions};
use lamina_storage::{FileOptions, FileStorage, MemoryStorage, Storage};
use parking_lot::{Mutex, RwLock};

use crate::fc::{FcHooks, run_fc_merge};
use crate::lookup::Lookup;
use crate::merger::{Control, Next};
use crate::options::{FcMode, FdTreeOptions};
use crate::persist::LOG_FILE_PREFIX;
use crate::store::BlockStore;
use crate::tree::{Tree, Visible};

/// Bytes of one log segment; segments wholly older than the last checkpoint are removed.
/// At least 2 MiB, and no less than the log's largest chunk (its buffer's size plus framing):
/// the log past the last commit is what a crash needs, and whole segments are what
/// truncation frees, so small segments keep the disk used near the index's own size (the
/// FD+FC space bound, section 4.5) at the cost of a file creation per 2 MiB of log.
const LOG_SEGMENT_BYTES: u64 = 2 << 20;
/// How long a `Sync` write's record may wait in the log buffer for others to join it.
const LOG_LINGER: Duration = Duration::from_millis(2);

/// The `fdtree` engine (FD+XM or FD+DS, see [`FcMode`]).
#[derive(Debug)]
pub struct FdTree {
    inner: Arc<Inner>,
    /// The merge thread (FD+DS), joined by `close` or drop.
    merger: Mutex<Option<JoinHandle<()>>>,
    mode: FcMode,
}

#[derive(Debug)]
struct Inner {
    /// `None` once closed.
    tree: RwLock<Option<Tree>>,
    storage: Arc<dyn Storage>,
    log: Option<Arc<SegmentLog>>,
    durability: Durability,
    mode: FcMode,
    user_bytes_written: AtomicU64,
    control: Control,
    /// FD+FC: held exclusively by the merge for each stage, shared by scans (`fc/mod.rs`).
    stage_gate: RwLock<()>,
    /// FD+FC: serializes modifications, so that a key's value looked up before the tree
    /// lock is taken is still the visible one when the modification applies.
    writer: Mutex<()>,
}

impl Drop for FdTree {
    fn drop(&mut self) {
        self.stop_merger();
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
            return Ok(Self::start(Tree::new(params, store), storage, None, Durability::None));
        }
        let mut tree = Tree::recover(params, store)?;
        let chunk_bytes_max = LogOptions::default().chunk_bytes_max().next_multiple_of(4096);
        let log_options = SegmentLogOptions {
            segment_bytes: LOG_SEGMENT_BYTES.max(chunk_bytes_max),
            log: LogOptions {
                // The engine waits for syncs itself (after releasing the tree lock).
                durability: match options.durability {
                    Durability::Sync => Durability::Buffered { max_delay: LOG_LINGER },
                    other => other,
                },
                file_prefix: LOG_FILE_PREFIX.into(),
                ..LogOptions::default()
            },
        };
        let mut records = Vec::new();
        let log = Arc::new(SegmentLog::open(storage.clone(), log_options, |r| records.push(r))?);
        tree.attach_log(log.clone(), records)?;
        if options.mode != FcMode::Fc && tree.fc_resume.is_some() {
            tree = finish_recovered_merge(tree)?;
        }
        Ok(Self::start(tree, storage, Some(log), options.durability))
    }

    /// Wraps a recovered tree; starts the merge thread of FD+DS.
    fn start(
        mut tree: Tree,
        storage: Arc<dyn Storage>,
        log: Option<Arc<SegmentLog>>,
        durability: Durability,
    ) -> FdTree {
        let mode = tree.params.mode;
        tree.background_merges = mode != FcMode::Xm;
        let inner = Arc::new(Inner {
            tree: RwLock::new(Some(tree)),
            storage,
            log,
            durability,
            mode,
            user_bytes_written: AtomicU64::new(0),
            control: Control::default(),
            stage_gate: RwLock::new(()),
            writer: Mutex::new(()),
        });
        let merger = (mode != FcMode::Xm).then(|| {
            let inner = inner.clone();
            std::thread::Builder::new()
                .name("fdtree-merge".into())
                .spawn(move || inner.merge_thread())
                .expect("spawning the fdtree merge thread")
        });
        // Recovery may have left a merge due (replay merges synchronously only above kappa_0).
        if merger.is_some() {
            inner.control.wake();
        }
        FdTree { inner, merger: Mutex::new(merger), mode }
    }

    /// The concurrency scheme.
    pub fn mode(&self) -> FcMode {
        self.mode
    }

    /// Waits until no background merge is running or due (FD+DS; immediate for FD+XM), and
    /// returns the error of a failed background merge if one is pending.
    pub fn wait_for_merges(&self) -> Result<()> {
        if self.merger.lock().is_none() {
            return Ok(());
        }
        loop {
            self.inner.control.wait_idle();
            if self.inner.control.busy()? {
                continue;
            }
            let due = self
                .inner
                .read(|t| Ok(t.background_merge_due().is_some() || t.merge_in_progress()))?;
            if !due {
                return Ok(());
            }
            self.inner.control.wake();
        }
    }

    /// Test hook: hold the merge thread (FD+DS: after merge-execute, before the switch;
    /// FD+FC: after each stage), so a test can observe lookups and writes during a merge;
    /// `false` releases it.
    #[doc(hidden)]
    pub fn hold_merges(&self, hold: bool) {
        self.inner.control.set_hold(hold);
    }

    /// Test hook: lets the held merge thread run to its next hold point (FD+FC: the end of
    /// the next stage) and waits until it is there or idle.
    #[doc(hidden)]
    pub fn step_merge(&self) {
        self.inner.control.step();
    }

    /// Test hook: waits until the merge thread is held (see [`FdTree::hold_merges`]).
    #[doc(hidden)]
    pub fn wait_merge_held(&self) {
        self.inner.control.wait_held();
    }

    fn stop_merger(&self) {
        if let Some(handle) = self.merger.lock().take() {
            self.inner.control.stop();
            // A panic of the merge thread already reported itself; nothing more to do here.
            let _ = handle.join();
        }
    }
}

/// Finishes an FD+FC merge that recovery found in progress, for a tree opened with another
/// scheme (the format is shared): the merge runs to its end here, then the tree is
/// checkpointed and any merge FD+XM would trigger runs.
fn finish_recovered_merge(mut tree: Tree) -> Result<Tree> {
    let pending = tree.fc_resume.take().expect("a merge to finish");
    let background = std::mem::replace(&mut tree.background_merges, true);
    let lock = RwLock::new(Some(tree));
    let gate = RwLock::new(());
    let nothing = || {};
    let hooks = FcHooks { tree: &lock, gate: &gate, progress: &nothing, after_stage: &nothing };
    run_fc_merge(&hooks, pending)?;
    let mut tree = lock.into_inner().expect("the tree stays open");
    tree.background_merges = background;
    tree.verify_if_configured()?;
    tree.checkpoint()?;
    tree.run_triggered_merges()?;
    Ok(tree)
}

impl Inner {
    fn merge_thread(&self) {
        let run = std::panic::AssertUnwindSafe(|| {
            while let Next::Merge = self.control.next() {
                let result = self.merge_while_due();
                self.control.idle(result);
            }
        });
        if std::panic::catch_unwind(run).is_err() {
            // A bug: the tree stays readable (L_0^new, L_0^old and the old levels form a
            // consistent view), modifications that need a merge get an error, and
            // checkpoints refuse to run with L_0^old unmerged (`persist.rs`).
            self.control.poison(Error::corruption(
                "fdtree merge thread",
                0,
                "the background merge thread panicked; reopen the tree",
            ));
        }
    }

    /// Runs background merges while one is due (see `merge/background.rs` for FD+DS and
    /// `fc/` for FD+FC).
    fn merge_while_due(&self) -> Result<()> {
        loop {
            if self.mode == FcMode::Fc {
                let pending = {
                    let mut guard = self.tree.write();
                    let Some(t) = guard.as_mut() else { return Ok(()) };
                    // A merge recovery rebuilt resumes first (Remark A.6).
                    if let Some(resumed) = t.fc_resume.take() {
                        resumed
                    } else {
                        let Some(trigger) = t.background_merge_due() else { return Ok(()) };
                        t.begin_fc_merge(trigger)?
                    }
                };
                let progress = || self.control.switched();
                let after_stage = || self.control.hold_point();
                let hooks = FcHooks {
                    tree: &self.tree,
                    gate: &self.stage_gate,
                    progress: &progress,
                    after_stage: &after_stage,
                };
                if let Err(e) = run_fc_merge(&hooks, pending) {
                    // The tree stays readable between two stages, but the merge cannot be
                    // undone (old blocks are gone): refuse modifications until reopened.
                    self.control.poison(Error::corruption(
                        "fdtree merge thread",
                        0,
                        format!("an FD+FC merge failed ({e}); reopen the tree"),
                    ));
                    return Err(e);
                }
                self.control.switched();
                if self.checkpoint_can_wait()? {
                    self.read(Tree::verify_if_configured)?;
                } else {
                    self.after_background_merge()?;
                }
                continue;
            }
            let pending = {
                let mut guard = self.tree.write();
                let Some(t) = guard.as_mut() else { return Ok(()) };
                let Some(trigger) = t.background_merge_due() else { return Ok(()) };
                t.begin_background_merge(trigger)?
            };
            // No lock: lookups go through L_0^new, L_0^old and the old levels; writers fill
            // L_0^new.
            let executed = pending.execute();
            self.control.hold_point();
            let finished = {
                let mut guard = self.tree.write();
                let t = guard.as_mut().expect("the tree is closed only after the merge thread");
                t.finish_background_merge(pending, executed)
            };
            self.control.switched();
            finished?;
            self.after_background_merge()?;
        }
    }

    /// FD+FC: whether the checkpoint after a merge can be left to the next merge, which is
    /// due at once: its first progress commit commits the same state (as its start) and
    /// removes the files this merge replaced, so writers do not wait for the checkpoint's
    /// syncs between two merges. Only while those files are small (an FD+FC merge punched
    /// most of its old blocks already); a merge that ends before its first commit is
    /// checkpointed as usual unless the next one is due too.
    fn checkpoint_can_wait(&self) -> Result<bool> {
        self.read(|t| {
            if t.persist.is_none() || t.background_merge_due().is_none() {
                return Ok(false);
            }
            let mut bytes = 0;
            for &id in &t.obsolete_files {
                bytes += t.store.open_existing(id)?.allocated_bytes()?;
            }
            let limit = 2 * t.params.merge_commit_blocks as u64 * u64::from(t.params.block_bytes);
            Ok(bytes <= limit)
        })
    }

    /// Verifies (if configured) and checkpoints after a background merge, with the
    /// checkpoint's I/O outside the tree lock.
    fn after_background_merge(&self) -> Result<()> {
        {
            self.read(Tree::verify_if_configured)?;
            // Checkpoint with the I/O outside the tree lock: readers and writers go on.
            let job = self.tree.write().as_mut().map(Tree::checkpoint_begin).transpose()?;
            if let Some(mut job) = job.flatten() {
                let result = job.run();
                if let Some(t) = self.tree.write().as_mut() {
                    t.checkpoint_end(job);
                }
                result?;
            }
        }
        Ok(())
    }
}

impl FdTree {
    /// The storage below the tree (for I/O counters in tests and benchmarks).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.inner.storage
    }

    /// Runs `f` on the tree under the shared lock (inspection, tests).
    pub fn with_tree<R>(&self, f: impl FnOnce(&Tree) -> R) -> Result<R> {
        let guard = self.inner.tree.read();
        guard.as_ref().map(f).ok_or(Error::Closed)
    }

    /// Checks every invariant of the tree (see `Tree::verify`), after waiting for
    /// background merges.
    pub fn verify(&self) -> Result<()> {
        self.wait_for_merges()?;
        self.with_tree(Tree::verify)?
    }
}

impl Inner {
    fn read<R>(&self, f: impl FnOnce(&Tree) -> Result<R>) -> Result<R> {
        let guard = self.tree.read();
        f(guard.as_ref().ok_or(Error::Closed)?)
    }

    /// Under the write lock: `check` (refusals change nothing), then, if it returns an
    /// operation, log it and `apply` it. Then waits for durability as configured.
    ///
    /// With background merges (FD+DS, FD+FC) the modification first waits while `L_0^old`
    /// and `L_0^new` fill `L_0` (FD+DS: until the running merge switches in; FD+FC: until
    /// m-delete frees room), and afterwards wakes the merge thread if a merge is due.
    ///
    /// FD+FC: modifications are serialized by their own mutex, and the visible value of
    /// `lookup_key` (Remark A.1's existence check, CAS's comparison) is looked up before the
    /// tree lock is taken, with the lock-coupled lookup of section 4.3; `check` and `apply`
    /// receive it (`Some`), so the tree lock is never held across disk reads. Other modes
    /// pass `None` and look up under the lock.
    fn modify<'op, R>(
        &self,
        lookup_key: Option<&[u8]>,
        check: impl FnOnce(&Tree, Option<&Option<Vec<u8>>>) -> Result<Result<LogOp<'op>, R>>,
        apply: impl FnOnce(&mut Tree, Option<&Option<Vec<u8>>>) -> Result<R>,
    ) -> Result<R> {
        let serial = (self.mode == FcMode::Fc).then(|| self.writer.lock());
        let lookup_key = lookup_key.filter(|_| self.mode == FcMode::Fc);
        let result = loop {
            let epoch = self.control.epoch()?;
            let known = match lookup_key {
                Some(key) => {
                    if self.read(|t| Ok(t.top_is_full()))? {
                        self.control.wake();
                        if !self.control.wait_for_room(epoch) {
                            return Err(Error::Closed);
                        }
                        continue;
                    }
                    Some(self.lookup_fc(key)?)
                }
                None => None,
            };
            let mut guard = self.tree.write();
            let t = guard.as_mut().ok_or(Error::Closed)?;
            if t.background_merges && t.top_is_full() {
                drop(guard);
                self.control.wake();
                if !self.control.wait_for_room(epoch) {
                    return Err(Error::Closed); // the merge thread stopped: closing
                }
                continue;
            }
            let op = match check(t, known.as_ref())? {
                Ok(op) => op,
                Err(done) => return Ok(done),
            };
            if let Some(log) = &self.log {
                let seq = log.append(op)?;
                t.set_applied_seq(seq);
            }
            let result = apply(t, known.as_ref())?;
            let due = t.background_merges && t.background_merge_due().is_some();
            drop(guard);
            if due {
                self.control.wake();
            }
            break result;
        };
        // Released before waiting for the log: concurrent writers share one sync.
        drop(serial);
        if self.durability == Durability::Sync
            && let Some(log) = &self.log
        {
            log.sync()?;
        }
        Ok(result)
    }

    /// FD+FC lookup (section 4.3): the tree lock (the `L_0` mutex) only until the first
    /// block's latch is held, then latch coupling down the levels.
    fn lookup_fc(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let lookup = self.read(|t| {
            t.check_key(key)?;
            t.start_lookup(key)
        })?;
        match lookup {
            Lookup::Done(v) => Ok(v),
            Lookup::Descend(d) => d.finish(key),
        }
    }
}

/// What a modification looked up, as [`Tree::apply_put_known`] takes it.
fn known_len(known: Option<&Option<Vec<u8>>>) -> Visible {
    match known {
        None => Visible::Unknown,
        Some(None) => Visible::Absent,
        Some(Some(v)) => Visible::Present { value_len: v.len() },
    }
}

impl OrderedIndex for FdTree {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if self.mode == FcMode::Fc {
            return self.inner.lookup_fc(key);
        }
        // FD+XM / FD+DS: the shared tree lock for the whole descent (section 3).
        self.inner.read(|t| {
            t.check_key(key)?;
            t.get(key)
        })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.inner.modify(
            Some(key),
            |t, _| t.check_put(key, value).map(|()| Ok(LogOp::Put { key, value })),
            |t, known| {
                t.apply_put_known(key, value, known_len(known))?;
                t.run_triggered_merges()
            },
        )?;
        self.inner
            .user_bytes_written
            .fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.inner.modify(
            Some(key),
            |t, known| {
                t.check_key(key)?;
                let exists = match known {
                    Some(current) => current.is_some(),
                    None => t.get(key)?.is_some(),
                };
                // A delete of an absent key changes nothing and is not logged.
                Ok(if exists { Ok(LogOp::Delete { key }) } else { Err(false) })
            },
            |t, known| {
                let existed = t.apply_delete_known(key, known_len(known))?;
                t.run_triggered_merges()?;
                Ok(existed)
            },
        )
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.inner.modify(
            Some(key),
            |t, known| {
                match new {
                    Some(v) => t.check_put(key, v)?,
                    None => t.check_key(key)?,
                }
                if let Some(e) = expected {
                    lamina_core::limits::check_value(e)?;
                }
                let current = match known {
                    Some(current) => current.clone(),
                    None => t.get(key)?,
                };
                if current.as_deref() != expected {
                    return Ok(Err(CasOutcome::Mismatch { current }));
                }
                Ok(Ok(match new {
                    Some(value) => LogOp::Put { key, value },
                    None => LogOp::Delete { key },
                }))
            },
            |t, known| {
                match new {
                    Some(v) => t.apply_put_known(key, v, known_len(known))?,
                    None => drop(t.apply_delete_known(key, known_len(known))?),
                }
                t.run_triggered_merges()?;
                Ok(CasOutcome::Swapped)
            },
        )
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        // FD+FC: between two stages of a merge (the wavefront stays put).
        let _gate = (self.mode == FcMode::Fc).then(|| self.inner.stage_gate.read());
        self.inner.read(|t| t.scan(range, limit))
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        self.inner.modify(
            None,
            |t, _| {
                for op in batch.ops() {
                    match op {
                        BatchOp::Put { key, value } => t.check_put(key, value)?,
                        BatchOp::Delete { key } => t.check_key(key)?,
                    }
                }
                Ok(Ok(LogOp::Batch(batch)))
            },
            |t, _| {
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
        self.inner.user_bytes_written.fetch_add(batch.payload_bytes() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.inner.read(|_| Ok(()))?;
        if self.merger.lock().is_some() {
            self.inner.control.busy()?; // reports a failed background merge
        }
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
                ("mode_xm0_ds1_fc2", self.mode as u64),
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
            if let Some(cache) = t.cache_stats() {
                stats.extra.push(("cache_hits", cache.hits));
                stats.extra.push(("cache_misses", cache.misses));
            }
        }
        stats
    }

    fn close(&self) -> Result<()> {
        // FD+DS: the merge thread finishes the merge it is running and exits.
        self.stop_merger();
        let mut guard = self.inner.tree.write();
        if let Some(tree) = guard.as_mut() {
            tree.checkpoint()?;
            if let Some(log) = &self.inner.log {
                log.close()?;
            }
            *guard = None;
        }
        Ok(())
    }
}
