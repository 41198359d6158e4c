//! `--experiment scale`: N random inserts, lookups, two-thread inserts and a timed reopen,
//! all on one store per engine (docs/DESIGN.md "Targets", issue 22), reported with ratios to
//! the best peer.

mod keys;
mod run;
mod table;

pub use keys::{Inserts, Lookups, ScaleKeys};
pub use run::{PHASE_WORKLOADS, REOPEN_PHASE, RoundExtras, SCALE_VERIFY_KEYS, ScaleRun, run_scale};
pub use table::{Best, BestPeers, ScaleRow, ScaleTable, StageFigures};
