//! Leaf removal (Algorithm 6, `DeleteLeaf`) and its recovery (Algorithm 7, `RecoverDelete`),
//! with the delete micro-log (`PCurrentLeaf`, `PPrevLeaf`).
//!
//! The first leaf is never removed (the inner-node contract keeps one leaf even when the tree
//! is empty), so the head of the leaf list never changes and Algorithm 6 lines 5-8 and
//! Algorithm 7 lines 6-12 (the head cases) have nothing to do here: every removal has a
//! previous leaf.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lamina_core::Result;
use lamina_storage::pmem::{PPtr, PmemRegion};

use crate::leaf::Leaf;
use crate::microlog::{LOG_A, LOG_B, log_pointer, reset_log, set_log_pointer};
use crate::store::{Store, bump};

/// Waits until every thread that was inside an epoch-protected section (an optimistic
/// traversal of the inner nodes and its `visit`, or a scan) when this was called has left
/// it: a grace period of `crossbeam_epoch`'s global collector, the one the inner nodes use.
/// Must not be called while pinned (it would wait for itself) or while holding a leaf lock a
/// pinned thread might spin on (none does: a busy leaf makes `locate` unpin and restart).
pub(crate) fn wait_for_optimistic_readers() {
    let passed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&passed);
    {
        let guard = crossbeam_epoch::pin();
        guard.defer(move || flag.store(true, Ordering::Release));
        guard.flush();
    }
    // A grace period needs the global epoch to advance twice past the deferral, which any
    // pin (ours below included) attempts; each `flush` also runs expired deferred functions.
    while !passed.load(Ordering::Acquire) {
        crossbeam_epoch::pin().flush();
        std::thread::yield_now();
    }
}

impl<R: PmemRegion + ?Sized> Store<R> {
    /// Algorithm 6: unlinks the empty `leaf` from `prev` (both locked; `leaf` already out of
    /// the inner nodes) and frees it (per-leaf deallocation, or Algorithm 12's `FreeLeaf`).
    /// `recovering`: called by recovery, when the leaf-group state is not built yet and no
    /// reader runs.
    ///
    /// Deferred reuse: an optimistic traversal that read the inner nodes before the leaf left
    /// them may still hold the leaf's offset and `visit` it (its lock attempt writes the
    /// leaf's version word). So before line 14 frees the leaf, `unlock_prev` runs (the caller
    /// releases `prev`; the removed leaf stays locked) and the deletion waits for an epoch
    /// grace period ([`wait_for_optimistic_readers`]): every thread pinned when the leaf was
    /// unlinked has unpinned, so none can still reach it. The delete micro-log holds the
    /// leaf's pointer during the wait, so a crash there is Algorithm 7's case "between lines
    /// 12 and 14" and recovery frees it: no persistent leak.
    pub(crate) fn delete_leaf(
        &self,
        leaf: Leaf<'_, R>,
        prev: Leaf<'_, R>,
        recovering: bool,
        unlock_prev: impl FnOnce(),
    ) -> Result<()> {
        assert_ne!(leaf.at, self.head, "the first leaf is never removed");
        assert_eq!(leaf.bitmap(), 0, "only an empty leaf is removed");
        let log = self.delete_logs.take(); // line 2
        let region = self.region();
        let linked = (|| {
            set_log_pointer(region, log.line + LOG_A, self.file_id(), leaf.at)?; // lines 3-4
            set_log_pointer(region, log.line + LOG_B, self.file_id(), prev.at)?; // lines 10-11
            prev.set_next(leaf.next()) // lines 12-13
        })();
        unlock_prev();
        linked?;
        if !recovering {
            wait_for_optimistic_readers();
        }
        self.release_leaf(log.line + LOG_A, leaf.at, recovering)?; // line 14
        reset_log(region, log.line)?; // line 15
        bump(&self.counters.leaf_removals, 1);
        Ok(())
    }

    /// Algorithm 6 lines 12-15.
    fn unlink_and_free(
        &self,
        line: u64,
        leaf: Leaf<'_, R>,
        prev: Leaf<'_, R>,
        recovering: bool,
    ) -> Result<()> {
        prev.set_next(leaf.next())?; // lines 12-13
        self.release_leaf(line + LOG_A, leaf.at, recovering)?; // line 14
        reset_log(self.region(), line) // line 15
    }

    /// Algorithm 6 line 14: frees a leaf no longer in the list, whose only persistent
    /// reference is the log pointer at `pptr_at`, and resets that pointer.
    fn release_leaf(&self, pptr_at: u64, leaf_at: u64, recovering: bool) -> Result<()> {
        if !self.config.leaf_groups {
            return self.alloc.deallocate(pptr_at);
        }
        if !recovering {
            self.free_leaf(leaf_at)?; // Algorithm 12 replaces the deallocation
        }
        // Recovery rebuilds the free-leaf vector from the leaves the list does not reach.
        PPtr::NULL.write_to(self.region(), pptr_at)?;
        self.region().persist(pptr_at, PPtr::ENCODED_BYTES)?;
        self.region().fence();
        Ok(())
    }

    /// Algorithm 7: finishes the leaf removal logged at `line`, or forgets it if it had not
    /// changed anything yet. Returns whether the log was in use.
    pub(crate) fn recover_delete(&self, line: u64) -> Result<bool> {
        let region = self.region();
        let current = log_pointer(region, line + LOG_A)?;
        let prev = log_pointer(region, line + LOG_B)?;
        match (current, prev) {
            (Some(current), Some(prev)) => {
                // Crashed between lines 12 and 14: continue from line 12.
                let leaf = self.leaf_at(self.pptr(current))?;
                let prev = self.leaf_at(self.pptr(prev))?;
                self.unlink_and_free(line, leaf, prev, true)?;
                Ok(true)
            }
            (None, None) => Ok(false),
            _ => {
                // Before line 11 (nothing changed) or after line 14 (the leaf is freed).
                reset_log(region, line)?;
                Ok(true)
            }
        }
    }
}
