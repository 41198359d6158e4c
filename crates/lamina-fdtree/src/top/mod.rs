//! `L_0`, the top level (paper section 2.1): in lamina a memtable receiving writes, the
//! frozen memtable being written out, the runs already written (`L_0`'s on-disk part,
//! Remark A.17), and the fences into the first disk level.

pub mod fences;
pub mod runs_filter;

use std::sync::Arc;

pub use fences::Fences;
pub use runs_filter::{CoveredRuns, RunsFilter};

use crate::format::stats::LevelStats;
use crate::level::DiskLevel;
use crate::memtable::Memtable;

/// `L_0` (during a merge: `L_0^new`).
#[derive(Debug)]
pub struct Top {
    /// The memtable writers add to.
    pub active: Arc<Memtable>,
    /// The memtable being written out as a run (no writer touches it any more).
    pub frozen: Option<Arc<Memtable>>,
    /// Every log record up to this sequence number is in the frozen memtable, the runs or
    /// the disk levels (the records after it are in the active memtable).
    pub frozen_through_seq: u64,
    /// The runs, newest first.
    pub runs: Arc<[DiskLevel]>,
    /// The union filter of `runs`, when it still covers them (`runs_filter.rs`).
    pub runs_filter: Option<CoveredRuns>,
    /// The fences into the first disk level.
    pub fences: Fences,
    /// `active` and the frozen memtable's size, published for writers (see [`MemSlot`]).
    pub slot: Arc<parking_lot::RwLock<MemSlot>>,
}

/// What a writer needs of `L_0`'s memory: the memtable to add to and how full the
/// memtables are. Kept apart from the tree lock (updated under it, by
/// [`Top::publish_memtables`]) so that a modification never waits for the tree lock, which a
/// merge thread may hold while it is descheduled.
#[derive(Debug)]
pub struct MemSlot {
    /// The same memtable as `Top::active`.
    pub active: Arc<Memtable>,
    /// Bytes of the frozen memtable (0: none).
    pub frozen_bytes: u64,
}

impl Top {
    /// An empty top level.
    pub fn new(active: Memtable) -> Self {
        let active = Arc::new(active);
        let slot = MemSlot { active: active.clone(), frozen_bytes: 0 };
        Top {
            active,
            frozen: None,
            frozen_through_seq: 0,
            runs: Arc::from(Vec::new()),
            runs_filter: None,
            fences: Fences::new(),
            slot: Arc::new(parking_lot::RwLock::new(slot)),
        }
    }

    /// Publishes `active` and the frozen memtable's size to writers; called (under the tree
    /// lock) whenever either changes.
    pub fn publish_memtables(&self) {
        let mut slot = self.slot.write();
        slot.active = self.active.clone();
        slot.frozen_bytes = self.frozen.as_ref().map_or(0, |f| f.bytes());
    }

    /// Counts of the data entries of the memtables and runs.
    pub fn data_stats(&self) -> LevelStats {
        let mut s = self.active.stats();
        if let Some(f) = &self.frozen {
            s.merge(&f.stats());
        }
        for r in self.runs.iter() {
            s.merge(&r.stats);
        }
        s
    }

    /// Sized bytes of the runs (what a merge takes as `L_0`'s data, eq. 1).
    pub fn runs_sized_bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.stats.sized_bytes()).sum()
    }

    /// Memory held: memtables, fences, and the runs' indexes and union filter.
    pub fn memory_bytes(&self) -> u64 {
        self.active.memory_bytes()
            + self.frozen.as_ref().map_or(0, |f| f.memory_bytes())
            + self.fences.memory_bytes()
            + self.runs.iter().map(DiskLevel::memory_bytes).sum::<u64>()
            + self.covering_filter().map_or(0, |f| f.memory_bytes())
    }

    /// The union filter of the runs, if it covers them all (`runs_filter.rs`).
    pub fn covering_filter(&self) -> Option<&Arc<RunsFilter>> {
        self.runs_filter.as_ref()?.covers(&self.runs)
    }

    /// The union filter the next run of `keys` keys is to be added to before it is
    /// installed, its keys counted in: the runs' own if it covers them and has room, a new
    /// one sized for runs of `keys_per_run` keys if there are no runs, else none (the set
    /// stays without one until it is emptied).
    pub fn filter_for_run(
        &self,
        keys: u64,
        keys_per_run: u64,
        bits_per_key: u32,
    ) -> Option<Arc<RunsFilter>> {
        let filter = match self.covering_filter() {
            Some(f) => f.clone(),
            None if self.runs.is_empty() && bits_per_key > 0 => {
                Arc::new(RunsFilter::new(keys_per_run.max(keys), bits_per_key))
            }
            None => return None,
        };
        filter.reserve(keys).then_some(filter)
    }

    /// Installs `run` as the newest run; `added_to` is the filter its keys were added to
    /// ([`Top::filter_for_run`]), kept as the runs' filter if it covered every older run.
    pub fn push_run(&mut self, run: DiskLevel, added_to: Option<Arc<RunsFilter>>) {
        let keeps = match (self.covering_filter(), &added_to) {
            (Some(covering), Some(added)) => Arc::ptr_eq(covering, added),
            (None, Some(_)) => self.runs.is_empty(),
            (_, None) => false,
        };
        let mut runs: Vec<DiskLevel> = Vec::with_capacity(self.runs.len() + 1);
        runs.push(run);
        runs.extend(self.runs.iter().cloned());
        self.runs = runs.into();
        self.runs_filter = added_to
            .filter(|_| keeps)
            .map(|filter| CoveredRuns { filter, runs: self.runs.clone() });
    }

    /// Takes the runs away (a merge's `L_0^old`) with their union filter, if it covers them.
    pub fn take_runs(&mut self) -> (Arc<[DiskLevel]>, Option<Arc<RunsFilter>>) {
        let filter = self.covering_filter().cloned();
        self.runs_filter = None;
        (std::mem::replace(&mut self.runs, Arc::from(Vec::new())), filter)
    }
}
