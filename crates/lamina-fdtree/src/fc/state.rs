//! FD+FC's data structure during a merge (section 4.1, Figure 5) and its merge-prepare with
//! preemptive level skipping (section 4.4.1).

use std::sync::Arc;

use lamina_core::{Error, Result};

use crate::format::entry::BlockPtr;
use crate::level::{DiskLevel, LevelWriter, Visibility};
use crate::merge::run::Resumed;
use crate::merge::{Trigger, create_writers, map_bytes_bound, preemptive_skips, u_hat};
use crate::top::{Fences, RunsFilter};
use crate::tree::Tree;

/// The parts of the tree only a merge in progress has (Figure 5), changed under the tree
/// lock (the paper's `L_0` mutex, which also guards the wavefront fence). `L_0^new` is the
/// tree's `top` and the new upper levels are the first of the tree's `levels`.
#[derive(Debug)]
pub(crate) struct FcState {
    /// `L_0^old`'s runs, newest first (their blocks are reclaimed from the left).
    pub old_runs: Arc<[DiskLevel]>,
    /// Their union filter, if one covered them all when the merge began
    /// (`top/runs_filter.rs`); `old_runs` does not change during the merge.
    pub old_runs_filter: Option<Arc<RunsFilter>>,
    /// `L_0^old`'s fences without the wavefront fence, emptied from the left by m-delete.
    pub old_fences: Fences,
    /// (I7): entries with keys `<= wavefront_key` have been processed and are found from
    /// `L_0^new`; larger keys are found from `L_0^old`. `None` = `-infinity` (nothing
    /// processed yet; `Some` of the empty key once the empty key itself is behind it).
    pub wavefront_key: Option<Vec<u8>>,
    /// The wavefront fence's pointer: the current head block of `L_succ(0)^old` (none if
    /// the tree had no disk level).
    pub wavefront_ptr: Option<BlockPtr>,
    /// Old upper levels `L_1^old..L_m^old` (materialized ones), then the below-merge levels.
    pub old_levels: Arc<[DiskLevel]>,
    /// The merge replaces `L_0..L_m`.
    pub m: usize,
}

impl FcState {
    /// The old sources the merge reclaims: `L_0^old`'s runs, then `L_1^old..L_m^old`.
    pub fn old_sources(&self) -> impl Iterator<Item = &DiskLevel> {
        self.old_runs.iter().chain(self.old_levels.iter().filter(|l| l.label <= self.m))
    }

    /// Memory held by `L_0^old`'s fences and the old levels' indexes.
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

/// The fraction of `sources`' blocks reclaimed so far (1 when they have none): how far an
/// FD+FC merge has come, since its wavefront reclaims every source from the left (Remark
/// A.5).
pub fn reclaimed_fraction<'a>(sources: impl IntoIterator<Item = &'a DiskLevel>) -> f64 {
    let (reclaimed, total) = sources.into_iter().fold((0u64, 0u64), |(r, t), level| {
        let blocks = u64::from(level.blocks);
        (r + u64::from(level.latches.head()).min(blocks), t + blocks)
    });
    if total == 0 { 1.0 } else { reclaimed as f64 / total as f64 }
}

/// What the merge thread owns between merge-prepare and merge-finalize.
#[derive(Debug)]
pub(crate) struct FcMerge {
    pub trigger: Trigger,
    pub m: usize,
    pub height_before: usize,
    /// `L_0^old`'s runs.
    pub old_runs: Arc<[DiskLevel]>,
    /// `L_0^old`'s fences as the merge began, the wavefront fence included (merge-execute
    /// carries them when `L_0` is the deepest merged level).
    pub old_top_fences: Vec<(Vec<u8>, BlockPtr)>,
    /// Every old level (merged and below-merge).
    pub old_levels: Arc<[DiskLevel]>,
    /// The new levels, labels increasing (preemptive level skipping); the last receives
    /// the data.
    pub writers: Vec<LevelWriter>,
    /// Level labels merge-prepare skipped preemptively.
    pub skipped_preemptively: u64,
    /// 1 if merge-prepare tightened the data level of a full merge below `m`, else 0.
    pub tightened_preemptively: u64,
    /// Where merge-execute continues (a merge resumed by recovery; default otherwise).
    pub resumed: Resumed,
    /// Entries shadowed before a resume.
    pub shadowed_before: u64,
}

impl Tree {
    /// Merge-prepare of FD+FC (under the tree lock): chooses `m` (eqs. 1-2, or a full merge
    /// for an underflow), estimates the new levels and skips the unnecessary ones
    /// preemptively (4.4.1), then turns `L_0`'s runs and fences into `L_0^old` with the
    /// wavefront fence at `-infinity` (4.4.2, "Starting Merge-Execute"); `L_0^new` starts
    /// with no runs and no fences, and the new levels, still without blocks, take the place
    /// of the old upper levels for lookups behind the wavefront.
    pub(crate) fn begin_fc_merge(&mut self, trigger: Trigger) -> Result<FcMerge> {
        assert!(!self.merge_in_progress(), "one merge at a time");
        let h = self.height();
        let m = self.choose_merge_m(trigger);
        let full = m + 1 >= h;
        let u = u_hat(
            &self.level_sizes(),
            h,
            self.merge_input_counters().live_bytes(),
            m,
            &self.params,
        );
        let succ_below =
            self.levels.iter().find(|l| l.label > m).map(|l| l.size_blocks(&self.params));
        let o_hat = preemptive_skips(u, m, succ_below, full, &self.params);
        // The data level keeps its label (partial merge) or is tightened (full merge), and
        // is written to disk even if it could become L_0: merge-finalize decides that with
        // its real size.
        let data_label = o_hat[m].max(1);
        let mut labels: Vec<usize> =
            o_hat[..m].iter().copied().filter(|&o| o > 0 && o < data_label).collect();
        labels.dedup();
        labels.push(data_label);
        assert!(labels.windows(2).all(|w| w[0] < w[1]), "new labels increase: {labels:?}");
        if self.top.fences.is_empty() != self.levels.is_empty() {
            return Err(Error::corruption(
                self.store.path(self.fences_file, crate::store::FileKind::Fences),
                0,
                "L_0 has fences but no disk level, or the reverse",
            ));
        }
        let keys_max = self.merge_keys_max(m);
        let ids = labels.iter().map(|_| self.alloc_file_id()).collect::<Result<Vec<u32>>>()?;
        let sources = self.top.runs.iter().chain(self.levels.iter().filter(|l| l.label <= m));
        let map_bound = map_bytes_bound(sources, &self.params);
        let sizes = (keys_max, Some(map_bound));
        let writers = create_writers(&self.store, &self.params, &labels, &ids, sizes, |data| {
            if data { Visibility::Data } else { Visibility::Fences }
        })?;
        let mut old_fences = std::mem::take(&mut self.top.fences);
        let old_top_fences = old_fences.iter().map(|(k, p)| (k.to_vec(), p)).collect();
        let wavefront_ptr = old_fences.take_neg_infinity();
        if wavefront_ptr.is_none() && !self.levels.is_empty() {
            self.top.fences = old_fences; // nothing changed yet
            for &id in &ids {
                let _ = self.store.remove_all(id); // never referenced; the error is returned
            }
            return Err(Error::corruption(
                self.store.path(self.fences_file, crate::store::FileKind::Fences),
                0,
                "L_0 has no -infinity fence",
            ));
        }
        let (old_runs, old_runs_filter) = self.top.take_runs();
        let old_levels = self.levels.clone();
        let below = old_levels.iter().filter(|l| l.label > m).cloned();
        self.levels = writers.iter().map(LevelWriter::view).chain(below).collect();
        self.fc = Some(FcState {
            old_runs: old_runs.clone(),
            old_runs_filter,
            old_fences,
            wavefront_key: None,
            wavefront_ptr,
            old_levels: old_levels.clone(),
            m,
        });
        let written_fence_levels = labels.len() as u64 - 1;
        Ok(FcMerge {
            trigger,
            m,
            height_before: h,
            old_runs,
            old_top_fences,
            old_levels,
            writers,
            skipped_preemptively: (data_label as u64 - 1).saturating_sub(written_fence_levels),
            tightened_preemptively: u64::from(data_label < m),
            resumed: Resumed::default(),
            shadowed_before: 0,
        })
    }
}
