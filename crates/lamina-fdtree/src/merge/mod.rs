//! Merge (paper section 2.3): merge-prepare chooses `m` (eqs. 1-2), merge-execute writes all
//! new levels `L_0..L_m` in one pass (bottom-up fence propagation with `p_last`), and
//! merge-finalize tightens, skips and relabels the new levels (eq. 3).
//!
//! Under FD+XM the whole merge runs under the tree's write lock. Execute only reads the old
//! levels and writes new files; the tree is changed in finalize, after every new block is
//! written, so a failed merge leaves the old tree intact (its new files are removed).

mod background;
mod builder;
mod coalesce;
mod driver;
pub(crate) mod execute;
pub(crate) mod finalize;
mod prepare;
pub(crate) mod writer;

pub use coalesce::{Net, coalesce};
pub use driver::Trigger;
pub use finalize::{Relabel, plan_relabel, plan_relabel_labels, plan_relabel_with};
pub use prepare::{LevelSize, choose_m, preemptive_skips, u_hat};
