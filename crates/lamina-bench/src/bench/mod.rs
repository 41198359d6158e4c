//! A whole comparison: the same workload (same seed, so the same requests) against each
//! engine in turn, for `rounds` rounds with the engine order reversed every other round
//! (so no engine always runs first, on a cold machine, or last, on a hot one), summarized
//! with ratios to the first engine (docs/DESIGN.md: comparisons are ratios measured side by
//! side in one run). An engine that fails is recorded and the others go on.

mod assemble;
mod resolve;
mod run;
mod workdir;

pub(crate) use assemble::{assemble_report, run_report};
pub use resolve::resolve_engines;
pub use run::{
    BenchConfig, BenchOutcome, DEFAULT_INTERVAL, ROUNDS_MAX, default_bucket_ops,
    default_warmup_ops, durability_name, run_bench,
};
pub(crate) use workdir::WorkDir;
