//! Merge (paper section 2.3): merge-prepare chooses `m` (eqs. 1-2, `prepare.rs`),
//! merge-execute writes all new levels `L_1..L_m` in one pass with bottom-up fence
//! propagation (`run.rs`, `builder.rs`, `coalesce.rs`), and merge-finalize tightens, skips
//! and relabels the new levels (eq. 3, `relabel.rs`). FD+XM and FD+DS build the new levels
//! on the side (`side.rs`); FD+FC merges behind a wavefront (`crate::fc`).
//!
//! `L_0`'s part of a merge is its runs (`L_0`'s memtables are written out as runs first):
//! they are the merge's newest sources.

mod builder;
mod coalesce;
pub(crate) mod prepare;
pub(crate) mod relabel;
pub(crate) mod run;
pub(crate) mod side;
mod tournament;

use lamina_core::Result;

pub use coalesce::{Net, coalesce};
pub use prepare::{LevelSize, choose_m, preemptive_skips, u_hat};
pub use relabel::{Relabel, plan_relabel, plan_relabel_labels, plan_relabel_with};
pub use side::SideView;

use crate::level::{DiskLevel, LevelWriter, Visibility};
use crate::options::Params;
use crate::store::{BlockStore, FileKind};
use crate::tree::{MergeReport, Tree};

/// Why a merge runs (section 2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `L_0` is over `kappa_0`.
    Overflow,
    /// (I6) is violated: always a full merge, `m = h - 1`.
    Underflow,
}

/// A bound on the bytes of any level a merge of `sources` writes, for the map lookups read
/// it through while it is written (FD+FC, `level_map.rs`): twice the sources' blocks (a
/// merge writes each source entry at most once, and the data level's fences into the level
/// below it stand for fences the sources held) and 64 blocks of slack. Only address space:
/// nothing is reserved, and a level that outgrows it reads its later blocks through the
/// segment cache.
pub(crate) fn map_bytes_bound<'a>(
    sources: impl IntoIterator<Item = &'a DiskLevel>,
    params: &Params,
) -> u64 {
    let blocks: u64 = sources.into_iter().map(|l| u64::from(l.blocks)).sum();
    blocks.saturating_mul(2).saturating_add(64).saturating_mul(u64::from(params.block_bytes))
}

/// Creates the writers of new levels `labels` in the new files `ids`; the last one is the
/// data level, whose filter is sized for `keys_max` keys. With `map_bytes_bound`, lookups
/// read their written blocks in place while they are written ([`LevelWriter::map_ahead`]).
/// On error, removes the files created.
pub(crate) fn create_writers(
    store: &BlockStore,
    params: &Params,
    labels: &[usize],
    ids: &[u32],
    (keys_max, map_bytes_bound): (u64, Option<u64>),
    visibility: impl Fn(bool) -> Visibility,
) -> Result<Vec<LevelWriter>> {
    assert_eq!(ids.len(), labels.len(), "one new file per new level");
    let mut writers = Vec::with_capacity(labels.len());
    for (i, (&label, &id)) in labels.iter().zip(ids).enumerate() {
        let data = i + 1 == labels.len();
        match store.create(id, FileKind::Level) {
            Ok(f) => writers.push(LevelWriter::new(
                store,
                params,
                label,
                id,
                f,
                if data { keys_max } else { 0 },
                visibility(data),
            )),
            Err(e) => {
                for w in &writers {
                    let _ = store.remove_all(w.file_id()); // best effort: the error is returned
                }
                return Err(e);
            }
        }
    }
    if let Some(bound) = map_bytes_bound {
        for w in &mut writers {
            w.map_ahead(bound);
        }
    }
    Ok(writers)
}

impl Tree {
    /// Sizes of the materialized levels for merge-prepare, `L_0` first (its runs' data and
    /// its fences).
    pub(crate) fn level_sizes(&self) -> Vec<LevelSize> {
        let mut out = vec![LevelSize {
            label: 0,
            data_bytes: self.top.runs.iter().map(|r| r.stats.data_bytes()).sum(),
            fence_bytes: self.top.fences.bytes(),
        }];
        out.extend(self.levels.iter().map(|l| LevelSize {
            label: l.label,
            data_bytes: l.stats.data_bytes(),
            fence_bytes: l.stats.fence_bytes,
        }));
        out
    }

    /// `B(L_0)`: its runs' and fences' sized bytes, in blocks (its memtables are bounded by
    /// memory and become runs before they are merged).
    pub fn top_size_blocks(&self) -> u64 {
        self.params.blocks_of(self.top.runs_sized_bytes() + self.top.fences.sized_bytes())
    }

    /// Merge-prepare: the `m` of the merge (eqs. 1-2; a full merge for an underflow).
    pub(crate) fn choose_merge_m(&self, trigger: Trigger) -> usize {
        let h = self.height();
        match trigger {
            Trigger::Underflow => {
                // A full merge; it grows the tree like eq. 2's first case when what it
                // writes (U-hat, with `L_0`'s runs) does not fit `kappa_(h-1)`: the levels
                // between are fence levels, so (I5) holds.
                let m = (h - 1).max(1);
                let live = self.merge_input_counters().live_bytes();
                let full =
                    crate::merge::prepare::u_hat(&self.level_sizes(), h, live, m, &self.params);
                let mut m = m;
                while full > self.params.kappa(m) {
                    m += 1; // kappa_i saturates at u64::MAX, so this ends
                }
                m
            }
            Trigger::Overflow => choose_m(
                &self.level_sizes(),
                h,
                self.merge_input_counters().live_bytes(),
                &self.params,
            ),
        }
    }

    /// Whether a merge is due, and why: (I6) first (its full merge also empties `L_0`'s
    /// runs), then `L_0`'s runs over `kappa_0` (I3), or too many runs (each costs lookups a
    /// filter check). The memtables are not merged (they become runs first), so (I6) is
    /// checked on what a merge reads: the runs and the disk levels.
    pub fn merge_due(&self) -> Option<Trigger> {
        if self.merge_in_progress() {
            return None;
        }
        let underflow = self.merge_input_counters().underflows();
        if self.top.runs.is_empty() {
            // A merge makes the counts of what it writes exact (puts are blind, so before it
            // `N_delta` counts every overwritten insert): the levels it leaves can violate
            // (I6) with no run in `L_0`, and the paper restores (I6) at once.
            return (underflow && !self.levels.is_empty()).then_some(Trigger::Underflow);
        }
        if underflow {
            return Some(Trigger::Underflow);
        }
        let over = self.top_size_blocks() > self.params.kappa0_blocks;
        (over || self.top.runs.len() >= RUNS_MERGE).then_some(Trigger::Overflow)
    }

    pub(crate) fn verify_if_configured(&self) -> Result<()> {
        if self.params.verify_each_merge {
            self.verify()?;
        }
        Ok(())
    }

    /// Records what a merge did (stats, tests).
    pub(crate) fn record_merge(
        &mut self,
        trigger: Trigger,
        m: usize,
        full: bool,
        h: usize,
        z: usize,
        shadowed: u64,
    ) {
        self.last_merge = Some(MergeReport {
            trigger,
            m,
            full,
            height_before: h,
            height_after: self.height(),
            z,
            shadowed,
            labels_after: self.materialized_labels(),
        });
        match trigger {
            Trigger::Overflow => self.merges.overflow += 1,
            Trigger::Underflow => self.merges.underflow += 1,
        }
    }
}

/// `L_0` runs that make a merge due even if they are small (memtables written out early to
/// bound the log, `options::FdTreeOptions::log_checkpoint_bytes`).
pub const RUNS_MERGE: usize = 8;
