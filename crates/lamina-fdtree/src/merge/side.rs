//! Merges that build their new levels on the side: FD+XM (under the exclusive tree lock)
//! and FD+DS (in the background, section 3: "instead of emptying the old levels as we go,
//! we simply leave them intact while producing the new levels on the side"; lookups go
//! through the old levels until the new ones are switched in, atomically, and the space of
//! the old ones is reclaimed after).
//!
//! Merge-prepare ([`Tree::begin_side_merge`]) takes `L_0`'s runs and fences as `L_0^old`
//! (they stay readable in the [`SideView`]); modifications meanwhile go to `L_0^new` (the
//! memtables and the runs written during the merge). Merge-execute ([`SideMerge::execute`])
//! needs no lock. Merge-finalize ([`Tree::finish_side_merge`]) relabels the new levels
//! (eq. 3) and switches them in.

use std::sync::Arc;

use lamina_core::Result;

use super::relabel::plan_relabel_labels;
use super::run::{Executed, MergeRun, Resumed};
use super::{Trigger, create_writers};
use crate::format::entry::BlockPtr;
use crate::level::{DiskLevel, LevelWriter, Visibility};
use crate::options::{FcMode, Params};
use crate::store::BlockStore;
use crate::top::Fences;
use crate::tree::Tree;

/// What lookups use during an FD+DS merge: the tree as it was when the merge began.
#[derive(Debug)]
pub struct SideView {
    /// `L_0^old`'s runs, newest first.
    pub old_runs: Arc<[DiskLevel]>,
    /// `L_0^old`'s fences.
    pub old_fences: Fences,
    /// The disk levels as the merge began.
    pub old_levels: Arc<[DiskLevel]>,
}

impl SideView {
    /// Memory held by the old view's indexes and fences.
    pub fn memory_bytes(&self) -> u64 {
        self.old_fences.memory_bytes()
            + self
                .old_runs
                .iter()
                .chain(self.old_levels.iter())
                .map(DiskLevel::memory_bytes)
                .sum::<u64>()
    }
}

/// A merge building its levels on the side, between its prepare and its finalize.
#[derive(Debug)]
pub struct SideMerge {
    pub(crate) trigger: Trigger,
    pub(crate) m: usize,
    pub(crate) height_before: usize,
    store: BlockStore,
    old_runs: Arc<[DiskLevel]>,
    old_top_fences: Vec<(Vec<u8>, BlockPtr)>,
    old_levels: Arc<[DiskLevel]>,
    writers: Option<Vec<LevelWriter>>,
}

impl Tree {
    /// Merge-prepare of FD+XM and FD+DS: chooses `m` (eqs. 1-2), creates the files of the
    /// new levels `L_1..L_m`, and makes `L_0`'s runs and fences `L_0^old`.
    pub(crate) fn begin_side_merge(&mut self, trigger: Trigger) -> Result<SideMerge> {
        assert!(!self.merge_in_progress(), "one merge at a time");
        let h = self.height();
        let m = self.choose_merge_m(trigger);
        let labels: Vec<usize> = (1..=m).collect();
        let keys_max = self.merge_keys_max(m);
        let ids = labels.iter().map(|_| self.alloc_file_id()).collect::<Result<Vec<u32>>>()?;
        let writers =
            create_writers(&self.store, &self.params, &labels, &ids, (keys_max, None), |_| {
                Visibility::Private
            })?;
        let old_runs = std::mem::replace(&mut self.top.runs, Arc::from(Vec::new()));
        let old_fences = std::mem::take(&mut self.top.fences);
        let old_top_fences = old_fences.iter().map(|(k, p)| (k.to_vec(), p)).collect();
        let old_levels = self.levels.clone();
        self.side = Some(SideView {
            old_runs: old_runs.clone(),
            old_fences,
            old_levels: old_levels.clone(),
        });
        Ok(SideMerge {
            trigger,
            m,
            height_before: h,
            store: self.store.clone(),
            old_runs,
            old_top_fences,
            old_levels,
            writers: Some(writers),
        })
    }

    /// An upper bound on the data entries a merge of `L_0..L_m` writes: the entries of
    /// every merged run and level (the new data level's filter is sized for it).
    pub(crate) fn merge_keys_max(&self, m: usize) -> u64 {
        self.top
            .runs
            .iter()
            .chain(self.levels.iter().filter(|l| l.label <= m))
            .map(|l| l.stats.data_entries())
            .sum()
    }
}

impl SideMerge {
    /// Merge-execute, with no lock held: reads the old runs and levels, writes the new
    /// levels. On error the new files are removed (the tree is unchanged until finalize).
    pub(crate) fn execute(&mut self) -> Result<Executed> {
        let writers = self.writers.take().expect("execute runs once");
        let ids: Vec<u32> = writers.iter().map(LevelWriter::file_id).collect();
        let result = MergeRun::new(
            &self.store,
            &self.old_runs,
            std::mem::take(&mut self.old_top_fences),
            &self.old_levels,
            self.m,
            writers,
            &Resumed::default(),
        )
        .and_then(|mut run| {
            while !run.run_stage()? {}
            run.finish()
        });
        if result.is_err() {
            for id in ids {
                let _ = self.store.remove_all(id); // best effort: the error is what matters
            }
        }
        result
    }
}

/// What merge-finalize decided for the result of merge-execute (computed without the
/// tree lock; the old levels do not change while a merge runs).
#[derive(Debug)]
pub(crate) struct Finalized {
    /// `z`.
    pub z: usize,
    /// The new levels kept, relabeled.
    pub kept: Vec<DiskLevel>,
    /// The new levels dropped (`L_1..L_z`).
    pub dropped: Vec<DiskLevel>,
    /// `L_z` as part of `L_0`: its fences (a fence-only level), or itself as a run (the
    /// data level of a full merge).
    pub into_top: Option<IntoTop>,
    /// Levels relabeled to a smaller number.
    pub tightened: u64,
}

/// How `L_z` joins `L_0`.
#[derive(Debug)]
pub(crate) enum IntoTop {
    /// Its fences become `L_0`'s.
    Fences(Vec<(Vec<u8>, BlockPtr)>),
    /// It becomes `L_0`'s oldest run (the data level of a full merge: the tree has no disk
    /// level left), or, if no entry survived the merge, it is dropped.
    Run(Option<DiskLevel>),
}

/// Merge-finalize's plan for the new `levels` (labels increasing) and `top_fences` (the
/// fences `L_0` gets from the merge), with `succ_below` = `B(L_succ(m))`. A level may
/// become `L_0` only as section 4.4.3 allows for background merges: its fences must fit the
/// reserve of `L_0`'s memory (FD+XM: `kappa_0`), or it must be the data level of a full
/// merge, which becomes a run.
pub(crate) fn finalize_plan(
    params: &Params,
    store: &BlockStore,
    top_fence_bytes: u64,
    mut levels: Vec<DiskLevel>,
    succ_below: Option<u64>,
    full: bool,
) -> Result<Finalized> {
    let mut labels = vec![0];
    labels.extend(levels.iter().map(|l| l.label));
    let mut sizes = vec![params.blocks_of(top_fence_bytes)];
    sizes.extend(levels.iter().map(|l| l.size_blocks(params)));
    let last = levels.len();
    let reserve = if params.mode == FcMode::Xm {
        params.top_capacity_bytes()
    } else {
        params.fence_reserve_bytes()
    };
    let mut may_be_top = vec![true];
    may_be_top.extend(levels.iter().enumerate().map(|(i, l)| {
        let data_level = i + 1 == last;
        (data_level && full) || (l.stats.data_entries() == 0 && l.stats.fence_bytes <= reserve)
    }));
    let plan = plan_relabel_labels(&labels, &sizes, succ_below, full, params, &may_be_top);
    let into_top = if plan.z > 0 {
        let lz = &levels[plan.z - 1];
        if plan.z == last {
            let holds = lz.stats.data_entries() > 0;
            Some(IntoTop::Run(holds.then(|| DiskLevel { label: 0, ..lz.clone() })))
        } else {
            Some(IntoTop::Fences(read_fences(store, lz)?))
        }
    } else {
        None
    };
    let mut kept = levels.split_off(plan.z);
    let tightened = plan.apply(&mut kept);
    let mut dropped = levels;
    if matches!(into_top, Some(IntoTop::Run(Some(_)))) {
        dropped.pop(); // L_z lives on as a run
    }
    Ok(Finalized { z: plan.z, kept, dropped, into_top, tightened })
}

/// The fences of a (small, fence-only) level, from its index.
fn read_fences(store: &BlockStore, level: &DiskLevel) -> Result<Vec<(Vec<u8>, BlockPtr)>> {
    let ix = level.index.read();
    if ix.blocks() != level.blocks {
        return Err(store.corruption(&*level.file, 0, 0, "level index does not cover the level"));
    }
    Ok((0..ix.blocks())
        .flat_map(|b| ix.block_fences(b).map(|(k, p)| (k.to_vec(), p)).collect::<Vec<_>>())
        .collect())
}

impl Tree {
    /// Merge-finalize of FD+XM and FD+DS: switches the new levels in (atomically, under the
    /// tree lock) with `fences` as `L_0`'s (written to file `fences_id` for a persistent
    /// tree), `L_0^new`'s runs stay `L_0`'s runs, and the replaced files are reclaimed
    /// (persistent trees: after the next commit). Returns `z`.
    pub(crate) fn finish_side_merge(
        &mut self,
        merge: &SideMerge,
        executed: &Executed,
        finalized: Finalized,
        fences: Fences,
        fences_id: u32,
    ) -> usize {
        let side = self.side.take().expect("a side merge is in progress");
        let Finalized { z, kept, dropped, into_top, tightened } = finalized;
        let mut runs: Vec<DiskLevel> = self.top.runs.to_vec();
        if let Some(IntoTop::Run(Some(run))) = into_top {
            runs.push(run);
        }
        let below: Vec<DiskLevel> =
            side.old_levels.iter().filter(|l| l.label > merge.m).cloned().collect();
        self.levels = kept.into_iter().chain(below).collect();
        self.top.runs = runs.into();
        self.top.fences = fences;
        if self.fences_file != 0 {
            self.obsolete_files.push(self.fences_file);
        }
        self.fences_file = fences_id;
        self.merges.levels_skipped += dropped.len() as u64;
        self.merges.levels_tightened += tightened;
        if executed.full {
            let h = self.height();
            self.merges.count_full(merge.height_before, h);
        }
        // The replaced runs and levels: no lookup starts on them any more; ones in flight
        // finish first (each block's latch).
        let replaced =
            side.old_runs.iter().chain(side.old_levels.iter().filter(|l| l.label <= merge.m));
        for l in replaced.chain(dropped.iter()) {
            l.latches.reclaim_all();
            self.obsolete_files.push(l.file_id);
        }
        self.record_merge(
            merge.trigger,
            merge.m,
            executed.full,
            merge.height_before,
            z,
            executed.shadowed,
        );
        z
    }

    /// Undoes merge-prepare of a side merge that failed: `L_0^old`'s runs go back to `L_0`
    /// (older than the runs written since) with its fences; the old levels never changed.
    pub(crate) fn abort_side_merge(&mut self) {
        let Some(side) = self.side.take() else { return };
        let runs: Vec<DiskLevel> =
            self.top.runs.iter().cloned().chain(side.old_runs.iter().cloned()).collect();
        self.top.runs = runs.into();
        self.top.fences = side.old_fences;
        self.levels = side.old_levels;
    }
}
