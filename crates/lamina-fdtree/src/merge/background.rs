//! FD+DS merges (section 3): the merge runs in a background thread and builds the new
//! levels on the side while lookups keep using the old ones.
//!
//! - [`Tree::begin_background_merge`] (under the tree's write lock, short): merge-prepare
//!   (eqs. 1-2), then `L_0` is frozen as `L_0^old` and an empty `L_0^new` takes its place for
//!   the modifications that arrive during the merge. The merge keeps a snapshot of the old
//!   levels (shared file handles) and of `L_0^old`.
//! - [`Pending::execute`] (no lock): merge-execute writes the new levels into new files,
//!   reading `L_0^old` and the old level files, which nothing modifies during the merge (a
//!   single merge runs at a time, and only a merge changes disk levels).
//!   It also plans merge-finalize and reads `L_z` when `z > 0`, so the switch does no I/O.
//! - [`Tree::finish_background_merge`] (under the write lock): merge-finalize switches the
//!   new levels in, then `L_0^new`'s modifications are added to the new `L_0` (coalesced:
//!   they are newer than everything merged). Lookups hold the shared lock for their whole
//!   descent, so once the switch has the write lock no lookup is inside the old levels, and
//!   their files can be reclaimed (the paper's counting semaphore). Old files are removed at
//!   once (volatile) or after the next superblock commit (persistent).
//!
//! Space: the old levels stay until the switch, so a merge of `L_0..L_m` needs the space of
//! the new levels beside the old ones (space doubles during a merge, by design).

use std::sync::Arc;

use lamina_core::{Error, Result};

use super::Trigger;
use super::execute::{Executed, execute_detached};
use super::finalize::{load_level_as_top, plan_for};
use crate::level::DiskLevel;
use crate::options::Params;
use crate::store::BlockStore;
use crate::top::TopLevel;
use crate::tree::Tree;

/// A background merge between its start and its switch.
#[derive(Debug)]
pub(crate) struct Pending {
    trigger: Trigger,
    m: usize,
    height_before: usize,
    ids: Vec<u32>,
    old_top: Arc<TopLevel>,
    levels: Vec<DiskLevel>,
    store: BlockStore,
    params: Params,
}

/// What merge-execute produced, with `L_z` already read when merge-finalize will need it.
#[derive(Debug)]
pub(crate) struct Prepared {
    executed: Executed,
    /// `(z, L_z)` read ahead.
    preloaded_top: Option<(usize, TopLevel)>,
}

impl Pending {
    /// Merge-execute on the snapshot; takes no lock. Also plans merge-finalize (eq. 3; the
    /// levels it depends on change only by this merge) and, if `z > 0`, reads `L_z` here,
    /// so that the switch under the write lock does no I/O.
    pub(crate) fn execute(&self) -> Result<Prepared> {
        let executed = execute_detached(
            &self.store,
            self.params.payload_bytes,
            &self.old_top,
            &self.levels,
            self.m,
            &self.ids,
        )?;
        let plan = plan_for(
            &self.params,
            &self.levels,
            self.m,
            &executed.top,
            &executed.levels,
            executed.full,
        );
        // A failed read here is retried (and reported) by merge-finalize itself.
        let preloaded_top = (plan.z > 0)
            .then(|| load_level_as_top(&self.store, &executed.levels[plan.z - 1]).ok())
            .flatten()
            .map(|top| (plan.z, top));
        Ok(Prepared { executed, preloaded_top })
    }
}

impl Tree {
    /// Whether a background merge should start: (I6) is violated, or `L_0`'s data entries
    /// have reached the trigger (close to, below, its capacity; `Params::top_trigger_bytes`),
    /// or `B(L_0) > kappa_0` as in FD+XM. The trigger counts data only: after a merge `L_0`
    /// holds the fences to the level below, which merge-finalize keeps within `kappa_0`
    /// (eq. 3) but which may exceed the trigger, and merging again would not reduce them.
    pub fn background_merge_due(&self) -> Option<Trigger> {
        if self.frozen_top.is_some() || self.fc.is_some() {
            None
        } else if self.counters.underflows() {
            Some(Trigger::Underflow)
        } else if self.top.data_bytes() > self.params.top_trigger_bytes()
            || self.top.sized_bytes() > self.params.top_capacity_bytes()
        {
            Some(Trigger::Overflow)
        } else {
            None
        }
    }

    /// Whether a modification must wait for a background merge: `L_0^old` and `L_0^new`
    /// share `L_0`'s memory (`kappa_0` blocks), and FD+DS cannot free `L_0^old` before the
    /// switch (section 3), so `L_0^new` only gets what `L_0^old` left. Also when no merge has
    /// started yet but `L_0` is over its capacity (the merge thread has not run yet): the
    /// modification waits for that merge. One modification may overshoot by its own size.
    pub fn top_is_full(&self) -> bool {
        // FD+FC (section 4.2): L_0^old and L_0^new share L_0's memory, and what m-delete
        // removes from L_0^old is room for new modifications at once.
        let old = self.frozen_top.as_ref().map_or(0, |t| t.sized_bytes())
            + self.fc.as_ref().map_or(0, |fc| fc.old_top.sized_bytes());
        old + self.top.sized_bytes() > self.params.top_capacity_bytes()
    }

    /// Starts a background merge: merge-prepare, then `L_0` becomes `L_0^old` and an empty
    /// `L_0^new` receives new modifications.
    pub(crate) fn begin_background_merge(&mut self, trigger: Trigger) -> Result<Pending> {
        assert!(self.frozen_top.is_none(), "one merge at a time");
        let m = self.choose_merge_m(trigger);
        let ids = (0..m).map(|_| self.alloc_file_id()).collect::<Result<Vec<u32>>>()?;
        let old_top = Arc::new(std::mem::take(&mut self.top));
        self.frozen_top = Some(old_top.clone());
        Ok(Pending {
            trigger,
            m,
            height_before: self.height(),
            ids,
            old_top,
            levels: self.levels.clone(),
            store: self.store.clone(),
            params: self.params.clone(),
        })
    }

    /// Switches a background merge in (merge-finalize), or, if it failed, puts `L_0^old`
    /// back; either way `L_0^new`'s modifications join the resulting `L_0`.
    pub(crate) fn finish_background_merge(
        &mut self,
        pending: Pending,
        prepared: Result<Prepared>,
    ) -> Result<()> {
        assert!(self.frozen_top.is_some(), "a merge is in progress");
        let newer = std::mem::take(&mut self.top);
        self.frozen_top = None;
        let Pending { trigger, m, height_before, old_top, .. } = pending;
        self.top = Arc::try_unwrap(old_top).unwrap_or_else(|shared| (*shared).clone());
        let old_ids: Vec<u32> = self.levels.iter().map(|l| l.file_id).collect();
        let outcome = prepared.and_then(|Prepared { executed, preloaded_top }| {
            let (full, cancellations) = (executed.full, executed.cancellations);
            let z = self.finalize_with(m, executed, preloaded_top);
            if let Ok(z) = &z {
                self.record_merge(trigger, m, full, height_before, *z, cancellations);
            }
            z.map(|_| ())
        });
        // Whether or not finalize switched (it fails before switching if it cannot read
        // L_z, and after switching only if removing a file failed), self.top is now the L_0
        // below the modifications of L_0^new.
        let switched = self.levels.iter().map(|l| l.file_id).collect::<Vec<_>>() != old_ids;
        debug_assert!(outcome.is_ok() || !switched || self.last_merge.is_some());
        let (n, bytes) = self.top.absorb_newer(newer).map_err(|r| {
            Error::corruption("fdtree L_0", 0, format!("joining L_0^new after a merge: {r}"))
        })?;
        self.counters.remove_cancelled(n, bytes);
        outcome
    }
}
