//! Named, scaled-down reproductions of the papers' experiments (`--experiment NAME`):
//! definitions, engine selection, running, per-step aggregation, report and figures.

mod aggregate;
mod chart;
mod definition;
mod engines;
mod report;
mod run;
mod scale;

pub use aggregate::{EngineSteps, Point, Series, StepTable, phase_x, series, step_table};
pub use chart::write_experiment_plots;
pub use definition::{
    CONTEST_THREADS, EngineTuning, Experiment, ExperimentPlan, FDFC_LOOKUP_RATIOS, FDFC_THREADS,
    FIGURE1_BUCKETS, FIGURE6_CACHE_BYTES, FIGURE6_KEY_BYTES_MAX, FIGURE6_MEMORY_BUDGET_BYTES,
    FIGURE6_QUEUE_SLOTS, FIGURE6_READERS, FIGURE6_SIZE_RATIO, FIGURE6_WRITERS, NBTREE_QUERIES,
    NBTREE_QUERY_FRACTIONS, NBTREE_STEPS, Phase, PhaseRole, SCALE_BUCKETS, SCALE_CACHE_BYTES,
    SCALE_CONCURRENT_INSERTS_MAX, SCALE_CONCURRENT_THREADS, SCALE_INSERTS_DEFAULT,
    SCALE_LOOKUPS_MAX, SCALE_MEMORY_BUDGET_BYTES, Scale, step_ops,
};
pub use engines::{
    EngineSelection, FDFC_BTREE, FIGURE6_MODES, NBTREE_ENGINE, NBTREE_PEERS, SCALE_LAMINA,
    SCALE_PEERS, best_fdtree,
};
pub use report::{
    EXPERIMENT_SCHEMA_NAME, EXPERIMENT_SCHEMA_VERSION, ExperimentReport, PhaseFailure, PhaseReport,
    phase_failures, series_markdown, steps_markdown,
};
pub use run::{ExperimentOutcome, ExperimentRequest, phase_config, run_experiment};
pub use scale::{
    Best, BestPeers, Inserts, Lookups, PHASE_WORKLOADS, REOPEN_PHASE, RoundExtras,
    SCALE_VERIFY_KEYS, ScaleKeys, ScaleRow, ScaleRun, ScaleTable, StageFigures, run_scale,
};
