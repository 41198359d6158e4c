//! Modifications. Each is checked against the tree's key and value limits before any lock
//! is taken; then, under the exclusive tree lock, looked up if it must be (delete,
//! compare-and-swap, a put past the disk budget), appended to the log and applied to the
//! tree (invariant 2 of `inner.rs`); under `Durability::Sync` the log's sync is waited for
//! after the lock is released (invariant 3).

use std::sync::atomic::Ordering;

use lamina_core::{BatchOp, CasOutcome, Durability, Error, Result, WriteBatch};
use lamina_storage::log::{LogOp, put_record_bytes};
use parking_lot::MappedRwLockWriteGuard;

use super::inner::{Inner, State};
use crate::tree::LaTree;

impl Inner {
    /// The tree, exclusively (invariant 1), or the reason calls are refused.
    pub fn lock_tree(&self) -> Result<MappedRwLockWriteGuard<'_, State>> {
        let guard = self.state.write();
        self.check_open()?;
        parking_lot::RwLockWriteGuard::try_map(guard, Option::as_mut).map_err(|_| Error::Closed)
    }

    /// Checks a put's key and value against the tree's limits.
    pub fn check_put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        lamina_core::limits::check_value(value)?;
        self.layout.check_entry(key, value)
    }

    /// Checks a key against the tree's limits.
    pub fn check_key(&self, key: &[u8]) -> Result<()> {
        self.layout.check_entry(key, b"")
    }

    /// Put (insert or overwrite).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_put(key, value)?;
        let logged = {
            let mut state = self.lock_tree()?;
            self.admit_put(&mut state, key, value.len())?;
            let bytes = put_record_bytes(key.len(), value.len());
            self.log_and_apply(&mut state, LogOp::Put { key, value }, bytes, |t| t.put(key, value))?
        };
        let written = (key.len() + value.len()) as u64;
        self.counters.user_bytes_written.fetch_add(written, Ordering::Relaxed);
        self.after_write(logged)
    }

    /// Delete; whether the key existed (an absent key logs nothing).
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        // Not the paper's lazy delete (section 2.1 appends it to the root buffer unread):
        // `OrderedIndex::delete` answers whether the key existed, so a delete is first a
        // lookup (through the buffers, with ADAPT's register update and a possible
        // emptying). Deletes in a `WriteBatch` stay lazy.
        self.check_key(key)?;
        let logged = {
            let mut state = self.lock_tree()?;
            if self.lookup(&mut state, key)?.is_none() {
                return Ok(false);
            }
            let bytes = put_record_bytes(key.len(), 0);
            self.log_and_apply(&mut state, LogOp::Delete { key }, bytes, |t| t.delete(key))?
        };
        self.after_write(logged)?;
        Ok(true)
    }

    /// Compare-and-swap: the lookup, the comparison and the change under one hold of the
    /// tree lock.
    pub fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        lamina_core::limits::check_cas(key, expected, new)?;
        match new {
            Some(value) => self.check_put(key, value)?,
            None => self.check_key(key)?,
        }
        let logged = {
            let mut state = self.lock_tree()?;
            let current = self.lookup(&mut state, key)?;
            if current.as_deref() != expected {
                return Ok(CasOutcome::Mismatch { current });
            }
            match new {
                Some(value) => {
                    self.admit_put(&mut state, key, value.len())?;
                    let bytes = put_record_bytes(key.len(), value.len());
                    let op = LogOp::Put { key, value };
                    let logged =
                        self.log_and_apply(&mut state, op, bytes, |t| t.put(key, value))?;
                    let written = (key.len() + value.len()) as u64;
                    self.counters.user_bytes_written.fetch_add(written, Ordering::Relaxed);
                    logged
                }
                None if current.is_none() => return Ok(CasOutcome::Swapped), // nothing to do
                None => {
                    let bytes = put_record_bytes(key.len(), 0);
                    self.log_and_apply(&mut state, LogOp::Delete { key }, bytes, |t| t.delete(key))?
                }
            }
        };
        self.after_write(logged)?;
        Ok(CasOutcome::Swapped)
    }

    /// An atomic batch: one log record, applied under one hold of the tree lock (readers
    /// see all of it or none; recovery replays the whole record or none of it).
    pub fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        let mut adds = false;
        for op in batch.ops() {
            match op {
                BatchOp::Put { key, value } => {
                    self.check_put(key, value)?;
                    adds = true;
                }
                BatchOp::Delete { key } => self.check_key(key)?,
            }
        }
        if batch.is_empty() {
            return self.check_open();
        }
        let logged = {
            let mut state = self.lock_tree()?;
            if adds {
                self.check_disk_budget()?;
            }
            let bytes = batch.payload_bytes() as u64;
            self.log_and_apply(&mut state, LogOp::Batch(batch), bytes, |t| apply_batch(t, batch))?
        };
        let written = batch.payload_bytes() as u64;
        self.counters.user_bytes_written.fetch_add(written, Ordering::Relaxed);
        self.after_write(logged)
    }

    /// The current value of `key` (a tree lookup: ADAPT sees it and may empty a buffer, so
    /// an error may leave the tree half-changed and is sticky).
    pub fn lookup(&self, state: &mut State, key: &[u8]) -> Result<Option<Vec<u8>>> {
        state.tree.get(key).map_err(|e| self.fail(e))
    }

    /// The disk budget: past it, only a put that overwrites a value at least as long goes
    /// through.
    fn admit_put(&self, state: &mut State, key: &[u8], value_len: usize) -> Result<()> {
        if self.check_disk_budget().is_ok() {
            return Ok(());
        }
        if self.lookup(state, key)?.is_some_and(|v| v.len() >= value_len) {
            return Ok(());
        }
        self.check_disk_budget()
    }

    fn check_disk_budget(&self) -> Result<()> {
        let budget = self.options.disk_budget_bytes;
        if budget == 0 {
            return Ok(());
        }
        let used = self.storage.io_stats().live_bytes;
        if used < budget {
            return Ok(());
        }
        Err(Error::NoSpace {
            context: format!(
                "the disk budget of {budget} bytes is reached (the store uses {used}): deletes \
                 are still accepted; raise {} to add data",
                lamina_core::DISK_BUDGET_OPTION
            ),
        })
    }

    /// Logs `op` and applies it to the tree (the caller holds the tree lock); returns the
    /// log bytes since the last checkpoint.
    fn log_and_apply(
        &self,
        state: &mut State,
        op: LogOp<'_>,
        bytes: u64,
        apply: impl FnOnce(&mut LaTree) -> Result<()>,
    ) -> Result<u64> {
        let seq = match &self.log {
            // Refused before the tree changes: nothing to undo.
            Some(log) => log.append(op)?,
            None => 0,
        };
        // After the append, a failure may leave the tree half-changed (an emptying): sticky.
        apply(&mut state.tree).map_err(|e| self.fail(e))?;
        if self.log.is_some() {
            debug_assert!(seq > state.applied_seq, "log order is apply order");
            state.applied_seq = seq;
        }
        state.logged_bytes = state.logged_bytes.saturating_add(bytes);
        if state.tree.wants_checkpoint() {
            // A reclamation's old partition is erased once a checkpoint is committed.
            state.logged_bytes = state.logged_bytes.max(self.options.checkpoint_log_bytes);
        }
        Ok(state.logged_bytes)
    }

    /// After a modification, with the tree lock released: wakes the checkpointer if due,
    /// and waits for the log's sync under `Durability::Sync`.
    fn after_write(&self, logged_bytes: u64) -> Result<()> {
        self.maybe_want_checkpoint(logged_bytes);
        let Some(log) = &self.log else { return Ok(()) };
        if self.options.durability != Durability::Sync {
            return Ok(());
        }
        match log.sync() {
            Ok(()) => Ok(()),
            // `close` ran in between: it synced everything before closing the log.
            Err(Error::Closed) if self.closed.load(Ordering::Acquire) => Ok(()),
            Err(e) => Err(self.record_failure(e)),
        }
    }

    /// Records `e` as a sticky failure whatever it is (the tree may be half-changed).
    pub fn fail(&self, e: Error) -> Error {
        let _ = self.failure.set(e.to_string());
        e
    }
}

/// Applies a batch's operations in order.
pub fn apply_batch(tree: &mut LaTree, batch: &WriteBatch) -> Result<()> {
    apply_ops(tree, batch.ops())
}

/// Applies operations in order (a batch, or a replayed batch record).
pub fn apply_ops(tree: &mut LaTree, ops: &[BatchOp]) -> Result<()> {
    for op in ops {
        match op {
            BatchOp::Put { key, value } => tree.put(key, value)?,
            BatchOp::Delete { key } => tree.delete(key)?,
        }
    }
    Ok(())
}
