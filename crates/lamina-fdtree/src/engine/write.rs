//! Modifications (section 2.2).
//!
//! Puts are blind (Remark A.1, issue 22): an insert entry goes to the active memtable with
//! no lookup. A delete must say whether the key existed and a compare-and-swap must compare,
//! so they look the key up first, holding only the key's stripe (no lock that other keys'
//! writers or any reader wait for); the delete entry records the size of the value it
//! cancels (`format/entry.rs`).
//!
//! Every modification: waits only if both memtables are full (a run is being written), is
//! appended to the log under the shared write gate (outside the tree lock), applied to the
//! memtable, and, under `Durability::Sync`, waits for the log's sync after releasing
//! everything, so concurrent writers share syncs. A modification refused (bad argument,
//! disk budget, a full disk, a failure) changes nothing.

use lamina_core::{BatchOp, CasOutcome, Error, Result, WriteBatch};
use lamina_storage::log::LogOp;
use parking_lot::MutexGuard;

use super::control::clone_error;
use super::flush_stage::FlushStage;
use super::inner::{Inner, STRIPES};
use crate::format::bloom::key_hash;
use crate::format::entry::EntryRef;
use crate::format::entry::insert_bytes;
use crate::memtable::{ENTRY_OVERHEAD_BYTES, Memtable};
use crate::options::FcMode;
use crate::tree::{check_key, check_put};

/// Whether a modification adds data (refused past the disk budget) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Growth {
    Adds,
    Removes,
}

impl Inner {
    /// Put (insert or overwrite).
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_put(&self.params, key, value)?;
        let hash = key_hash(key);
        let _xm = self.xm_write();
        let _stripe = self.stripe(hash).lock();
        self.admit(Growth::Adds, Some((key, value.len())))?;
        let bytes = (key.len() + value.len()) as u64;
        self.apply(LogOp::Put { key, value }, bytes, |mem, seq| {
            mem.apply(EntryRef::Insert { key, value }, seq);
        })?;
        self.user_bytes_written.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        self.sync_if_durable()
    }

    /// Delete; whether the key existed.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(&self.params, key)?;
        let hash = key_hash(key);
        let _xm = self.xm_write();
        let _stripe = self.stripe(hash).lock();
        self.control.check()?;
        let Some(current) = self.lookup(key, hash)? else {
            return Ok(false); // nothing changes; nothing is logged
        };
        self.admit(Growth::Removes, None)?;
        let cancelled_len = u32::try_from(insert_bytes(key.len(), current.len())).unwrap_or(0);
        self.apply(LogOp::Delete { key }, key.len() as u64, |mem, seq| {
            mem.apply(EntryRef::Delete { key, cancelled_len }, seq);
        })?;
        self.sync_if_durable()?;
        Ok(true)
    }

    /// Compare-and-swap.
    pub fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        match new {
            Some(v) => check_put(&self.params, key, v)?,
            None => check_key(&self.params, key)?,
        }
        if let Some(e) = expected {
            lamina_core::limits::check_value(e)?;
        }
        let hash = key_hash(key);
        let _xm = self.xm_write();
        let _stripe = self.stripe(hash).lock();
        self.control.check()?;
        let current = self.lookup(key, hash)?;
        if current.as_deref() != expected {
            return Ok(CasOutcome::Mismatch { current });
        }
        match new {
            Some(value) => {
                self.admit(Growth::Adds, Some((key, value.len())))?;
                let bytes = (key.len() + value.len()) as u64;
                self.apply(LogOp::Put { key, value }, bytes, |mem, seq| {
                    mem.apply(EntryRef::Insert { key, value }, seq);
                })?;
                self.user_bytes_written.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
            }
            None => {
                let Some(cur) = current else {
                    return Ok(CasOutcome::Swapped); // deleting an absent key: nothing to do
                };
                self.admit(Growth::Removes, None)?;
                let cancelled_len = u32::try_from(insert_bytes(key.len(), cur.len())).unwrap_or(0);
                self.apply(LogOp::Delete { key }, key.len() as u64, |mem, seq| {
                    mem.apply(EntryRef::Delete { key, cancelled_len }, seq);
                })?;
            }
        }
        self.sync_if_durable()?;
        Ok(CasOutcome::Swapped)
    }

    /// An atomic batch: one log record, applied to the memtable under one write lock of
    /// it (readers see all of it or none), with the stripes of all its keys held.
    pub fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        let mut stripes = Vec::with_capacity(batch.ops().len());
        let mut adds = false;
        for op in batch.ops() {
            match op {
                BatchOp::Put { key, value } => {
                    check_put(&self.params, key, value)?;
                    adds = true;
                }
                BatchOp::Delete { key } => check_key(&self.params, key)?,
            }
            let key = match op {
                BatchOp::Put { key, .. } | BatchOp::Delete { key } => key,
            };
            stripes.push((key_hash(key) as usize) & (STRIPES - 1));
        }
        stripes.sort_unstable();
        stripes.dedup();
        let _xm = self.xm_write();
        let _held: Vec<MutexGuard<'_, ()>> =
            stripes.iter().map(|&s| self.stripes[s].lock()).collect();
        self.admit(if adds { Growth::Adds } else { Growth::Removes }, None)?;
        let bytes = batch.payload_bytes() as u64;
        self.apply(LogOp::Batch(batch), bytes, |mem, seq| mem.apply_batch(batch.ops(), seq))?;
        self.user_bytes_written.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        self.sync_if_durable()
    }

    /// FD+XM: the tree's one lock, exclusively, for the whole modification.
    fn xm_write(&self) -> Option<parking_lot::RwLockWriteGuard<'_, ()>> {
        (self.mode == FcMode::Xm).then(|| self.xm.write())
    }

    /// Waits until `L_0` has room for a modification (or refuses it): no sticky failure,
    /// the disk budget (for modifications that add data), and memtables not full. FD+XM
    /// instead writes a full memtable out and runs the merges due right here, under its
    /// exclusive lock (section 3), before the modification is applied.
    fn admit(&self, growth: Growth, put: Option<(&[u8], usize)>) -> Result<()> {
        let lockstep = self.control.lockstep();
        if lockstep && self.control.no_space().is_some() {
            // Background work waits on a full disk for a writer's kick (lockstep).
            self.control.kick_retry()?;
        }
        // When this modification first waited for room, and the flush thread's stage then.
        let mut first_wait: Option<(std::time::Instant, FlushStage)> = None;
        loop {
            self.control.check()?;
            if growth == Growth::Adds {
                self.check_disk_budget(put)?;
            }
            let epoch = self.control.room_epoch();
            let (active, frozen) = {
                let slot = self.mem_slot.read();
                (slot.active.bytes(), slot.frozen_bytes)
            };
            let freeze_due = active >= self.params.memtable_freeze_bytes();
            if self.mode == FcMode::Xm {
                // Errors as the background threads' (`Control::background_result`): a full
                // disk is reported and retried by the next modification, anything else is
                // sticky.
                let maintained = if freeze_due { self.flush_now() } else { Ok(()) }
                    .and_then(|()| self.merge_now());
                self.control.background_result(&maintained);
                return maintained;
            }
            if freeze_due && frozen == 0 {
                if !lockstep && self.freeze()?.is_some() {
                    // Frozen here rather than by the flush thread, which may still be
                    // committing the last run (`background.rs`, `flush_one`): the writers
                    // go on in a fresh memtable meanwhile.
                    self.control.want_flush();
                    continue;
                }
                self.control.want_flush();
                if lockstep {
                    // The flush's storage operations before this modification's own.
                    self.control.wait_idle()?;
                    if self.control.no_space().is_none() {
                        continue;
                    }
                }
            }
            if active + frozen < self.params.memtable_bytes_max {
                if let Some((key, value_len)) = put {
                    let bytes = (key.len() + value_len) as u64 + ENTRY_OVERHEAD_BYTES;
                    self.pacer.slow_down(bytes, self.params.memtable_freeze_bytes());
                    let room = self.params.memtable_bytes_max - (active + frozen);
                    self.flush_rate.slow_down(bytes, room, |d| {
                        if d <= super::flush_rate::SPIN_MAX {
                            lamina_storage::pause::pause_for(d, &self.pacer.spin_slot);
                        } else {
                            self.control.sleep_unless_room(epoch, d);
                        }
                    });
                }
                return Ok(());
            }
            if let Some(e) = self.control.no_space() {
                return Err(e);
            }
            self.control.want_flush();
            let waited = std::time::Instant::now();
            let (first, stage) =
                *first_wait.get_or_insert_with(|| (waited, self.flush_stages.current()));
            self.control.wait_room(epoch);
            self.flush_rate.room_waits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let waited_us = u64::try_from(waited.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.flush_rate.room_wait_us.fetch_add(waited_us, std::sync::atomic::Ordering::Relaxed);
            // This modification's whole wait so far (a wait may take several rechecks).
            let put_waited_us = u64::try_from(first.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.flush_stages.room_waited(put_waited_us, stage);
        }
    }

    /// The disk budget: data may be added while the store uses less than it. Past it, a put
    /// that overwrites a value at least as long goes through (it does not add live data).
    fn check_disk_budget(&self, put: Option<(&[u8], usize)>) -> Result<()> {
        let budget = self.params.disk_budget_bytes;
        if budget == 0 {
            return Ok(());
        }
        let used = self.storage.io_stats().live_bytes;
        if used < budget {
            return Ok(());
        }
        if let Some((key, len)) = put
            && self.lookup(key, key_hash(key))?.is_some_and(|v| v.len() >= len)
        {
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

    /// Logs `op` and applies it to the active memtable, under the shared write gate.
    fn apply(&self, op: LogOp<'_>, bytes: u64, apply: impl FnOnce(&Memtable, u64)) -> Result<()> {
        let gate = self.write_gate.read();
        // Checked under the gate: `close` freezes (exclusive gate) after setting `closed`,
        // so a modification is either in the final checkpoint or refused.
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let mem = self.mem_slot.read().active.clone();
        let seq = match &self.log {
            Some(log) => log.append(op)?,
            None => 0,
        };
        apply(&mem, seq);
        drop(gate);
        let logged =
            self.logged_bytes.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed) + bytes;
        if self.mode != FcMode::Xm
            && (mem.bytes() >= self.params.memtable_freeze_bytes()
                || (self.log.is_some() && logged >= self.params.log_checkpoint_bytes))
        {
            self.control.want_flush();
            if self.control.lockstep() {
                // The flush's storage operations before the caller's next ones; its
                // failures reach the next modification.
                let _ = self.control.wait_idle();
            }
        }
        Ok(())
    }

    fn sync_if_durable(&self) -> Result<()> {
        if self.durability == lamina_core::Durability::Sync
            && let Some(log) = &self.log
        {
            log.sync().map_err(|e| {
                // A failed sync (but for a full disk) leaves the device in an unknown
                // state: nothing more is accepted.
                if !matches!(e, Error::NoSpace { .. }) {
                    self.control.fail(&e);
                }
                clone_error(&e)
            })?;
        }
        Ok(())
    }
}
