//! `L_0`, the top level (paper section 2.1): in lamina a memtable receiving writes, the
//! frozen memtable being written out, the runs already written (`L_0`'s on-disk part,
//! Remark A.17), and the fences into the first disk level.

pub mod fences;

use std::sync::Arc;

pub use fences::Fences;

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

    /// Memory held: memtables, fences, and the runs' indexes.
    pub fn memory_bytes(&self) -> u64 {
        self.active.memory_bytes()
            + self.frozen.as_ref().map_or(0, |f| f.memory_bytes())
            + self.fences.memory_bytes()
            + self.runs.iter().map(DiskLevel::memory_bytes).sum::<u64>()
    }
}
