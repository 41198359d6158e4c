//! Runs one merge: prepare, execute, finalize, then (optionally) verify.

use lamina_core::Result;

use super::prepare::{LevelSize, choose_m};
use crate::tree::{MergeReport, Tree};

/// Why a merge runs (section 2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// `L_0` is over `kappa_0`.
    Overflow,
    /// (I6) is violated: always a full merge, `m = h - 1`.
    Underflow,
}

impl Tree {
    /// Runs one merge of the given kind, then verifies the tree if configured to.
    pub fn merge(&mut self, trigger: Trigger) -> Result<()> {
        self.merge_unverified(trigger)?;
        self.verify_if_configured()
    }

    pub(crate) fn verify_if_configured(&self) -> Result<()> {
        if self.params.verify_each_merge {
            self.verify()?;
        }
        Ok(())
    }

    /// Merge-prepare: the `m` of the merge (eqs. 1-2; a full merge for an underflow).
    pub(crate) fn choose_merge_m(&self, trigger: Trigger) -> usize {
        let h = self.height();
        match trigger {
            Trigger::Underflow => (h - 1).max(1),
            Trigger::Overflow => {
                choose_m(&self.level_sizes(), h, self.counters.live_bytes(), &self.params)
            }
        }
    }

    pub(crate) fn merge_unverified(&mut self, trigger: Trigger) -> Result<()> {
        let h = self.height();
        let m = self.choose_merge_m(trigger);
        let executed = self.execute(m)?;
        let (full, cancellations) = (executed.full, executed.cancellations);
        let z = self.finalize(m, executed)?;
        self.record_merge(trigger, m, full, h, z, cancellations);
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
        cancellations: u64,
    ) {
        self.last_merge = Some(MergeReport {
            trigger,
            m,
            full,
            height_before: h,
            height_after: self.height(),
            z,
            cancellations,
            labels_after: self.materialized_labels(),
        });
        match trigger {
            Trigger::Overflow => self.merges.overflow += 1,
            Trigger::Underflow => self.merges.underflow += 1,
        }
    }

    /// Sizes of the materialized levels for merge-prepare, `L_0` first.
    pub(crate) fn level_sizes(&self) -> Vec<LevelSize> {
        let mut out = vec![LevelSize {
            label: 0,
            data_bytes: self.top.data_bytes(),
            fence_bytes: self.top.fence_bytes(),
        }];
        out.extend(self.levels.iter().map(|l| LevelSize {
            label: l.label,
            data_bytes: l.stats.data_bytes,
            fence_bytes: l.stats.fence_bytes,
        }));
        out
    }
}
