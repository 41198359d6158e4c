//! Checkpoints (`durable.rs` says what one is) and the background thread that takes them once
//! `checkpoint_log_bytes` were logged since the last (invariant 6 of `inner.rs`).

use std::sync::atomic::Ordering;

use lamina_core::{Error, Result};

use super::inner::{Inner, State};

/// Dirty nodes a checkpoint writes back ahead per hold of the node cache's lock.
const WRITE_BACK_AHEAD_NODES: usize = 32;

/// How long a checkpoint waits, at a time, for the updates to finish a draining.
const DRAIN_WAIT: std::time::Duration = std::time::Duration::from_millis(1);

/// Waits for a draining before the checkpoint finishes it itself (about 0.2 s).
const DRAIN_WAITS_MAX: u32 = 200;

impl Inner {
    /// Writes the node cache's dirty nodes back without the tree lock, a few at a time
    /// (`NodeCache::write_back_some`), so that `checkpoint_unsynced` under the exclusive
    /// lock writes back only what was dirtied meanwhile. At most as many as were dirty when
    /// it began: writers dirtying nodes as fast never keep it going.
    fn write_back_ahead(&self) -> Result<()> {
        let dirty = usize::try_from(self.node_cache.stats().dirty_nodes).unwrap_or(usize::MAX);
        let mut written = 0;
        while written < dirty {
            let now = self.node_cache.write_back_some(WRITE_BACK_AHEAD_NODES)?;
            if now == 0 {
                break;
            }
            written += now;
        }
        Ok(())
    }

    /// Takes a checkpoint now (a volatile tree has nothing to checkpoint), holding the tree
    /// lock only to write (invariant 6): the tree's writes are issued under it, the syncs
    /// and the superblock commit run without it (writers go on meanwhile), and
    /// `LaTree::checkpoint_committed` runs under it again. One checkpoint at a time.
    /// `wait_for_draining` (the background checkpointer): a root draining in progress is
    /// left to the updates for a while (bounded) rather than finished whole under the lock.
    pub fn checkpoint(&self, wait_for_draining: bool) -> Result<()> {
        let Some(log) = &self.log else { return self.check_open() };
        let _one = self.checkpointing.lock();
        self.write_back_ahead()?;
        let mut drain_waits = 0;
        let (checkpoint, files, applied_seq, logged_bytes) = loop {
            let mut guard = self.state.write();
            self.check_failed()?;
            let state = guard.as_mut().ok_or(Error::Closed)?;
            if wait_for_draining
                && state.tree.draining_entries() > 0
                && drain_waits < DRAIN_WAITS_MAX
            {
                // A checkpoint holds no draining batch (`tree/drain.rs`): the updates
                // finish it a child at a time; the checkpoint finishes it whole only after
                // `DRAIN_WAITS_MAX` waits (no updates coming).
                drop(guard);
                drain_waits += 1;
                std::thread::sleep(DRAIN_WAIT);
                continue;
            }
            let (checkpoint, files) = state.tree.checkpoint_unsynced()?;
            break (checkpoint, files, state.applied_seq, state.logged_bytes);
        };
        files.sync()?;
        // The superblock must never name a record the log does not hold after a crash.
        log.sync().map_err(|e| self.record_failure(e))?;
        self.commit(applied_seq, &checkpoint)?;
        {
            let mut guard = self.state.write();
            let state = guard.as_mut().ok_or(Error::Closed)?;
            state.tree.checkpoint_committed();
            // What was logged while the checkpoint synced counts toward the next one.
            state.logged_bytes = state.logged_bytes.saturating_sub(logged_bytes);
            if self.options.verify_each_checkpoint {
                state.tree.verify().map_err(|e| self.fail(e))?;
            }
        }
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.truncate_log(applied_seq)
    }

    fn commit(&self, applied_seq: u64, checkpoint: &crate::tree::TreeCheckpoint) -> Result<()> {
        let mut durable = self.durable.lock();
        let durable = durable.as_mut().expect("a persistent tree has a superblock");
        durable.commit(
            &self.storage,
            applied_seq,
            checkpoint,
            self.options.checkpoint_inline_bytes_max,
        )
    }

    fn truncate_log(&self, applied_seq: u64) -> Result<()> {
        let Some(log) = &self.log else { return Ok(()) };
        match log.truncate(applied_seq) {
            // The log keeps records the tree already holds (replay skips them).
            Ok(_) | Err(Error::NoSpace { .. }) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// A checkpoint with the tree lock held exclusively throughout (`close`'s last one; the
    /// caller holds `checkpointing`). A failed `LaTree::checkpoint` or
    /// superblock commit is retried by the next checkpoint (the tree's contract: nothing is
    /// lost from memory, the last committed checkpoint still opens, and a checkpoint never
    /// committed is replaced by the next one; a failed superblock commit leaves the current
    /// state). A failed log sync is sticky: the log's state on the device is unknown.
    pub fn checkpoint_locked(&self, state: &mut State) -> Result<()> {
        let Some(log) = &self.log else { return Ok(()) };
        let checkpoint = state.tree.checkpoint()?;
        // The superblock must never name a record the log does not hold after a crash.
        log.sync().map_err(|e| self.record_failure(e))?;
        self.commit(state.applied_seq, &checkpoint)?;
        state.tree.checkpoint_committed();
        state.logged_bytes = 0;
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        if self.options.verify_each_checkpoint {
            state.tree.verify().map_err(|e| self.fail(e))?;
        }
        self.truncate_log(state.applied_seq)
    }

    /// Refuses after a sticky failure (but not after `close`, whose final checkpoint runs
    /// with `closed` set).
    pub fn check_failed(&self) -> Result<()> {
        match self.failure.get() {
            Some(reason) => Err(Error::Io {
                context: format!("the LA-tree failed earlier and accepts nothing more: {reason}"),
                source: std::io::Error::other("earlier failure"),
            }),
            None => Ok(()),
        }
    }
}

/// The checkpointer thread: waits until a checkpoint is due or it is stopped.
pub fn background(inner: &Inner) {
    loop {
        {
            let mut wake = inner.wake.lock();
            while !wake.due && !wake.stop {
                inner.wake_cv.wait(&mut wake);
            }
            if wake.stop {
                return;
            }
            wake.due = false;
        }
        if inner.check_open().is_err() {
            continue; // closed or failed: nothing to do until stopped
        }
        // A sticky failure is recorded by `checkpoint_locked` (writers report it); any other
        // is retried when the next write finds the checkpoint still due.
        let _span = tracing::debug_span!("latree_checkpoint").entered();
        if let Err(e) = inner.checkpoint(true) {
            tracing::error!(error = %e, "latree background checkpoint failed");
        }
    }
}
