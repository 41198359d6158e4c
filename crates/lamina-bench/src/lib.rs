//! lamina's benchmark library: the papers' workloads, open- and closed-loop runners,
//! latency distributions, reports and plots. `lamina bench` (crate `lamina-cli`) is its
//! command-line front end; docs/DESIGN.md "Benchmarking methodology" is the specification.
//!
//! - [`workload`]: deterministic generators (G_R, G_T, the SIGMOD 2011 contest mix, LA-tree
//!   LTU, NB-tree inserts, YCSB A-F) and the record/replay trace format.
//! - [`runner`]: the closed loop and the open system of FD+FC section 5 (R_p, R_q, R_o).
//! - [`metrics`]: HdrHistogram latencies, max latency per bucket, throughput over time,
//!   disk and memory sampling.
//! - [`report`]: the versioned JSON schema, the db_bench-style table, the CSV timeline.
//! - [`plot`]: PNG and SVG charts.
//! - [`run_bench`]: a whole multi-engine, multi-round comparison through an
//!   [`EngineFactory`], the only way the library reaches engines. An engine that fails is
//!   recorded (`report.failed`) and the others go on.
//! - [`memcached`]: a load generator for memcached-protocol servers (`lamina serve`,
//!   memcached itself): set, get and mixed phases, every reply checked.
//! - [`experiment`]: the named experiments of `--experiment`: scaled-down paper figures,
//!   and `scale` (N inserts, lookups, 2-thread inserts and a reopen on one store per engine,
//!   with ratios to the best peer).

mod bench;
mod engine;
pub mod experiment;
pub mod memcached;
pub mod metrics;
mod op;
mod peers;
pub mod plot;
pub mod report;
pub mod runner;
pub mod workload;

pub use bench::{
    BenchConfig, BenchOutcome, DEFAULT_INTERVAL, ROUNDS_MAX, default_bucket_ops,
    default_warmup_ops, durability_name, resolve_engines, run_bench,
};
pub use engine::{EngineFactory, EngineInfo, EngineParams, Factories};
pub use op::{Op, OpKind, Value, fnv64, int_key, int_of_key, splitmix64};
pub use peers::PeerFactory;
pub use workload::{Mix, Workload, WorkloadConfig, WorkloadKind};
