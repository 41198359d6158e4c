//! FD+FC's data structure during a merge (section 4.1) and its merge-prepare (4.4.1).

use lamina_core::{Error, Result};

use super::commit::MergeCommits;
use crate::entry::{BlockPtr, Entry};
use crate::level::DiskLevel;
use crate::merge::execute::{Resumed, create_writers};
use crate::merge::writer::LevelWriter;
use crate::merge::{Trigger, preemptive_skips, u_hat};
use crate::top::TopLevel;
use crate::tree::Tree;

/// The parts of the tree only a merge in progress has (Figure 5). Changed under the tree
/// lock (the paper's `L_0` mutex, which also guards the wavefront fence).
#[derive(Debug)]
pub(crate) struct FcState {
    /// `L_0^old` without its first fence (the wavefront fence, kept below). Emptied from
    /// left to right by m-delete.
    pub old_top: TopLevel,
    /// (I7): entries with keys `<= wavefront_key` have been processed and are found from
    /// `L_0^new`; larger keys are found from `L_0^old`. Empty = `-infinity`.
    pub wavefront_key: Vec<u8>,
    /// The wavefront fence's pointer: the current head block of `L_succ(0)^old` (none if
    /// the tree had no disk level).
    pub wavefront_ptr: Option<BlockPtr>,
    /// Old upper levels `L_1^old..L_m^old` (materialized ones), then the below-merge levels.
    pub old_levels: Vec<DiskLevel>,
}

/// What the merge thread owns between merge-prepare and merge-finalize.
#[derive(Debug)]
pub(crate) struct FcPending {
    pub trigger: Trigger,
    pub m: usize,
    pub height_before: usize,
    /// Every old level (merged and below-merge), for the merge's cursors.
    pub old_levels: Vec<DiskLevel>,
    /// `L_0^old`'s entries, including the `-infinity` fence (m-stage reads them; only the
    /// merge removes entries from `L_0^old`, so the copy stays exact).
    pub old_top_entries: Vec<Entry>,
    /// The new levels, labels increasing (preemptive level skipping).
    pub writers: Vec<LevelWriter>,
    /// Level labels merge-prepare skipped preemptively.
    pub skipped_preemptively: u64,
    /// 1 if merge-prepare tightened the data level of a full merge below `m` (eq. 3 on the
    /// estimates), else 0.
    pub tightened_preemptively: u64,
    /// Free old blocks as soon as they are reclaimed (a volatile tree); a persistent tree
    /// frees them after the next progress commit (`commits`).
    pub punch_reclaimed: bool,
    /// Where merge-execute continues (a merge resumed by recovery; default otherwise).
    pub resumed: Resumed,
    /// The durable side of the merge (a persistent tree).
    pub commits: Option<MergeCommits>,
}

impl Tree {
    /// Merge-prepare of FD+FC (under the tree lock): chooses `m` (eqs. 1-2, or a full merge
    /// for an underflow), estimates the new levels and skips the unnecessary ones
    /// preemptively (4.4.1), then turns `L_0` into `L_0^old` with the wavefront fence at
    /// `-infinity` (4.4.2, "Starting Merge-Execute"); `L_0^new` starts empty and the new
    /// levels, still without blocks, take the place of the old upper levels for lookups
    /// behind the wavefront.
    pub(crate) fn begin_fc_merge(&mut self, trigger: Trigger) -> Result<FcPending> {
        assert!(self.fc.is_none() && self.frozen_top.is_none(), "one merge at a time");
        let h = self.height();
        let m = self.choose_merge_m(trigger);
        // The manifest of the tree as it is (before L_0 becomes L_0^old), committed with the
        // merge's start record (Remark A.6).
        let start_manifest =
            if self.persist.is_some() { Some(self.merge_start_manifest()?) } else { None };
        let full = m + 1 >= h;
        let u = u_hat(&self.level_sizes(), h, self.counters.live_bytes(), m, &self.params);
        let succ_below =
            self.levels.iter().find(|l| l.label > m).map(|l| l.size_blocks(&self.params));
        let o_hat = preemptive_skips(u, m, succ_below, full, &self.params);
        // The data level keeps its label (partial merge) or is tightened (full merge), but
        // is written to disk during the merge even if it could become L_0: merge-finalize
        // decides that with its real size.
        let data_label = o_hat[m].max(1);
        let mut labels: Vec<usize> =
            o_hat[..m].iter().copied().filter(|&o| o > 0 && o < data_label).collect();
        labels.dedup();
        labels.push(data_label);
        assert!(labels.windows(2).all(|w| w[0] < w[1]), "new labels increase: {labels:?}");
        let ids = labels.iter().map(|_| self.alloc_file_id()).collect::<Result<Vec<u32>>>()?;
        let writers: Vec<LevelWriter> =
            create_writers(&self.store, self.params.payload_bytes, &labels, &ids)?
                .into_iter()
                .map(LevelWriter::visible)
                .collect();
        let old_top_entries = self.top.entries();
        let mut old_top = std::mem::take(&mut self.top);
        let wavefront_ptr = old_top.take_neg_infinity_fence();
        if wavefront_ptr.is_none() && !self.levels.is_empty() {
            self.top = old_top; // nothing changed yet
            for &id in &ids {
                let _ = self.store.remove(id); // never referenced; the error is returned
            }
            return Err(Error::corruption("fdtree L_0", 0, "L_0 has no -infinity fence"));
        }
        let old_levels = self.levels.clone();
        let below: Vec<DiskLevel> = self.levels.iter().filter(|l| l.label > m).cloned().collect();
        self.levels = writers.iter().map(LevelWriter::in_progress_level).chain(below).collect();
        self.fc = Some(FcState {
            old_top,
            wavefront_key: Vec::new(),
            wavefront_ptr,
            old_levels: old_levels.clone(),
        });
        let written_fence_levels = labels.len() as u64 - 1;
        let mut pending = FcPending {
            trigger,
            m,
            height_before: h,
            old_levels,
            old_top_entries,
            writers,
            skipped_preemptively: (data_label as u64 - 1).saturating_sub(written_fence_levels),
            tightened_preemptively: u64::from(data_label < m),
            punch_reclaimed: self.persist.is_none(),
            resumed: Resumed::default(),
            commits: None,
        };
        if let Some(base) = start_manifest {
            // L_0^old's snapshot is copied by the merge thread, outside the tree lock.
            let every = self.params.merge_commit_blocks;
            pending.commits = Some(MergeCommits::starting(base, Vec::new(), every, &pending));
        }
        Ok(pending)
    }
}
