//! Lookup, as section 2.2 / Algorithm 2: top-down, stopping at the first level holding a
//! data entry for the key; otherwise follow the fence with the largest key `<= key` to the
//! next materialized level. At most one segment read per level, and none where the level's
//! Bloom filter rules the key out (its fences are in memory, `format/index.rs`).
//!
//! `L_0` is searched first: the memtables (newest first), then the runs (newest first),
//! then its fences. Under FD+FC (section 4.3) the key is compared with the wavefront key
//! (I7): a larger key searches `L_0^new` without following its fences, then `L_0^old` (its
//! runs and fences) and through it the old upper levels and the below-merge levels; a key
//! no greater searches `L_0^new` and through it the new upper levels and the below-merge
//! levels. Under FD+DS (section 3) lookups use the old levels until the switch.
//!
//! The `L_0` part runs under the tree lock (the paper's `L_0` mutex), which is released
//! before any disk read: [`Tree::lookup_plan`] takes what the rest needs (shared handles to
//! the memtables, runs and levels, and the first block). A block of an old level can be
//! reclaimed meanwhile; the lookup then restarts (`level/latches.rs`).

use std::sync::Arc;

use lamina_core::Result;

use crate::format::entry::BlockPtr;
use crate::level::{DiskLevel, LevelHit};
use crate::memtable::{Memtable, Slot};
use crate::store::BlockStore;
use crate::top::RunsFilter;
use crate::tree::Tree;

/// What a lookup takes from the tree before releasing the tree lock.
#[derive(Debug)]
pub(crate) struct Plan {
    active: Arc<Memtable>,
    frozen: Option<Arc<Memtable>>,
    /// `L_0`'s runs (`L_0^new`'s during a merge).
    runs: Arc<[DiskLevel]>,
    /// Their union filter, if one covers them (`top/runs_filter.rs`).
    runs_filter: Option<Arc<RunsFilter>>,
    /// `L_0^old`'s runs, when the key is searched in the old part (FD+FC beyond the
    /// wavefront, FD+DS during a merge).
    old_runs: Option<Arc<[DiskLevel]>>,
    /// Their union filter, if one covers them.
    old_runs_filter: Option<Arc<RunsFilter>>,
    /// The disk levels to descend.
    levels: Arc<[DiskLevel]>,
    /// The block of the first of them the `L_0` fences lead to.
    first: Option<BlockPtr>,
}

/// The outcome of the disk part of a lookup.
#[derive(Debug)]
pub(crate) enum Found {
    /// The value (or absence) of the key.
    Done(Option<Vec<u8>>),
    /// A block was reclaimed under the lookup: start again.
    Restart,
}

impl Tree {
    /// The `L_0` part of a lookup (under the tree lock).
    pub(crate) fn lookup_plan(&self, key: &[u8]) -> Plan {
        let (old_runs, old_runs_filter, levels, first) = if let Some(fc) = &self.fc
            && fc.wavefront_key.as_deref().is_none_or(|w| key > w)
        {
            let first = fc.old_fences.at_or_before(key).or(fc.wavefront_ptr);
            let old_runs = Some(fc.old_runs.clone());
            (old_runs, fc.old_runs_filter.clone(), fc.old_levels.clone(), first)
        } else if let Some(side) = &self.side {
            let first = side.old_fences.at_or_before(key);
            (Some(side.old_runs.clone()), None, side.old_levels.clone(), first)
        } else {
            (None, None, self.levels.clone(), self.top.fences.at_or_before(key))
        };
        Plan {
            active: self.top.active.clone(),
            frozen: self.top.frozen.clone(),
            runs: self.top.runs.clone(),
            runs_filter: self.top.covering_filter().cloned(),
            old_runs,
            old_runs_filter,
            levels,
            first,
        }
    }
}

impl Plan {
    /// The key's newest entry in the memtables, if any.
    pub(crate) fn in_memtables(&self, key: &[u8], hash: u64) -> Option<Slot> {
        self.active.get(key, hash).or_else(|| self.frozen.as_ref()?.get(key, hash))
    }

    /// The disk part: the runs, then the levels by their fences.
    pub(crate) fn on_disk(&self, store: &BlockStore, key: &[u8], hash: u64) -> Result<Found> {
        // Every filter this lookup may probe, loaded together: with tens of runs during a
        // long merge, one cache miss per filter in turn was the largest part of a lookup.
        // A set of runs whose union filter rules the key out is skipped whole.
        for union in self.runs_filter.iter().chain(&self.old_runs_filter) {
            union.prefetch(hash);
        }
        for level in self.levels.iter() {
            level.prefetch_filter(hash);
        }
        let may_hold = |union: &Option<Arc<RunsFilter>>| {
            union.as_ref().is_none_or(|u| u.may_contain_hash(hash))
        };
        let runs: &[DiskLevel] = if may_hold(&self.runs_filter) { &self.runs } else { &[] };
        let old_runs = self.old_runs.as_deref().filter(|_| may_hold(&self.old_runs_filter));
        let old_runs = old_runs.unwrap_or_default();
        for run in runs.iter().chain(old_runs) {
            run.prefetch_filter(hash);
        }
        for run in runs.iter().chain(old_runs) {
            match run.lookup(store, None, key, hash)? {
                LevelHit::Value(v) => return Ok(Found::Done(Some(v))),
                LevelHit::Deleted => return Ok(Found::Done(None)),
                LevelHit::Reclaimed => return Ok(Found::Restart),
                LevelHit::Next(_) => {}
            }
        }
        let mut ptr = self.first;
        let last = self.levels.len().saturating_sub(1);
        for (i, level) in self.levels.iter().enumerate() {
            let Some(p) = ptr else {
                return Err(store.corruption(
                    &*level.file,
                    0,
                    0,
                    format!("no fence leads into level {} (I1/I2)", level.label),
                ));
            };
            if p.file != level.file_id {
                return Err(store.corruption(
                    &*level.file,
                    p.index,
                    0,
                    format!(
                        "fence points to file {} but level {} is file {}",
                        p.file, level.label, level.file_id
                    ),
                ));
            }
            match level.lookup(store, Some(p.index), key, hash)? {
                LevelHit::Value(v) => return Ok(Found::Done(Some(v))),
                LevelHit::Deleted => return Ok(Found::Done(None)),
                LevelHit::Reclaimed => return Ok(Found::Restart),
                LevelHit::Next(_) if i == last => return Ok(Found::Done(None)),
                LevelHit::Next(next) => ptr = next,
            }
        }
        Ok(Found::Done(None))
    }
}

impl Slot {
    /// The value a memtable slot gives a lookup.
    pub(crate) fn value(self) -> Option<Vec<u8>> {
        match self {
            Slot::Insert(v) => Some(v),
            Slot::Delete => None,
        }
    }
}
