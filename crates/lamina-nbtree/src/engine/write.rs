//! Modifications: every one is a delta record inserted into the root's d-tree (paper
//! section 3.2.2), logged first. Puts are blind; a delete must say whether the key existed
//! and a compare-and-swap must compare, so they look the key up first, holding only the
//! key's stripe. A refused modification (bad argument, disk budget, a failure) changes
//! nothing.

use std::sync::atomic::Ordering;

use lamina_core::limits::{check_cas, check_key, check_value};
use lamina_core::{BatchOp, CasOutcome, DISK_BUDGET_OPTION, Error, Result, WriteBatch};
use lamina_storage::log::LogOp;
use parking_lot::MutexGuard;

use super::inner::{Inner, stripe_index};
use crate::entry::entry_bytes;
use crate::memtable::Memtable;

impl Inner {
    /// Put.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        let _stripe = self.stripe(key).lock();
        self.admit(true)?;
        let bytes = entry_bytes(key.len(), Some(value.len()));
        self.apply(LogOp::Put { key, value }, |m| m.apply(key, Some(value)))?;
        self.counters
            .user_bytes_written
            .fetch_add((key.len() + value.len()) as u64, Ordering::Relaxed);
        self.finish_write(bytes)
    }

    /// Delete; whether the key existed.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        let _stripe = self.stripe(key).lock();
        self.check_open()?;
        if self.get(key)?.is_none() {
            return Ok(false); // nothing changes; nothing is logged
        }
        self.admit(false)?;
        self.apply(LogOp::Delete { key }, |m| m.apply(key, None))?;
        self.finish_write(entry_bytes(key.len(), None))?;
        Ok(true)
    }

    /// Compare-and-swap.
    pub fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        check_cas(key, expected, new)?;
        let _stripe = self.stripe(key).lock();
        self.check_open()?;
        let current = self.get(key)?;
        if current.as_deref() != expected {
            return Ok(CasOutcome::Mismatch { current });
        }
        match new {
            Some(value) => {
                self.admit(true)?;
                self.apply(LogOp::Put { key, value }, |m| m.apply(key, Some(value)))?;
                let user = (key.len() + value.len()) as u64;
                self.counters.user_bytes_written.fetch_add(user, Ordering::Relaxed);
                self.finish_write(entry_bytes(key.len(), Some(value.len())))?;
            }
            None if current.is_none() => {} // deleting an absent key: nothing to do
            None => {
                self.admit(false)?;
                self.apply(LogOp::Delete { key }, |m| m.apply(key, None))?;
                self.finish_write(entry_bytes(key.len(), None))?;
            }
        }
        Ok(CasOutcome::Swapped)
    }

    /// An atomic batch: one log record, applied to the memtable under one write lock of it
    /// (readers see all of it or none), with the stripes of all its keys held.
    pub fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        let mut stripes: Vec<usize> = batch.ops().iter().map(|op| stripe_index(op.key())).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let _held: Vec<MutexGuard<'_, ()>> =
            stripes.iter().map(|&s| self.stripes[s].lock()).collect();
        let adds = batch.ops().iter().any(|op| matches!(op, BatchOp::Put { .. }));
        self.admit(adds)?;
        let mut bytes = 0;
        let entries: Vec<(&[u8], Option<&[u8]>)> = batch
            .ops()
            .iter()
            .map(|op| match op {
                BatchOp::Put { key, value } => {
                    bytes += entry_bytes(key.len(), Some(value.len()));
                    (key.as_slice(), Some(value.as_slice()))
                }
                BatchOp::Delete { key } => {
                    bytes += entry_bytes(key.len(), None);
                    (key.as_slice(), None)
                }
            })
            .collect();
        self.apply(LogOp::Batch(batch), |m| m.apply_all(entries))?;
        self.counters.user_bytes_written.fetch_add(batch.payload_bytes() as u64, Ordering::Relaxed);
        self.finish_write(bytes)
    }

    /// Refuses a modification after close or a failure, and one that adds data past the
    /// disk budget.
    fn admit(&self, adds: bool) -> Result<()> {
        self.check_open()?;
        if self.counters.restart_pending.load(Ordering::Acquire) {
            // A job failed on a full disk: flush its memtable before accepting more.
            let mut work = self.work.lock();
            self.finish(&mut work)?;
        }
        let budget = self.options.disk_budget_bytes;
        if adds && budget > 0 {
            let used = self.storage.io_stats().live_bytes;
            if used >= budget {
                return Err(Error::NoSpace {
                    context: format!(
                        "the disk budget of {budget} bytes is reached (the NB-tree uses \
                         {used}): deletes are still accepted; raise {DISK_BUDGET_OPTION} to \
                         add data"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Logs `op` and applies it to the active memtable, under the shared write gate.
    fn apply(&self, op: LogOp<'_>, apply: impl FnOnce(&Memtable)) -> Result<()> {
        let gate = self.write_gate.read();
        // Checked under the gate: `close` takes the gate exclusively after setting
        // `closed`, so a modification is either logged before the log closes or refused.
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let active = self.published.read().active.clone();
        if let Some(log) = &self.log {
            // A log that failed leaves the device in an unknown state: nothing more.
            log.append(op).map_err(|e| self.record_failure(e))?;
        }
        apply(&active);
        drop(gate);
        Ok(())
    }

    /// After a modification is applied: the deamortized work, then the log's sync under
    /// `Durability::Sync` (after releasing the gate, so concurrent writers share syncs).
    fn finish_write(&self, bytes: u64) -> Result<()> {
        // This modification is applied (and logged): a failure of the flush work is not
        // its failure. A full disk is retried by the next modification (`admit`), anything
        // else refuses every later call (`check_open`).
        let _ = self.after_write(bytes);
        if self.options.durability == lamina_core::Durability::Sync
            && let Some(log) = &self.log
        {
            log.sync().map_err(|e| self.record_failure(e))?;
        }
        Ok(())
    }
}
