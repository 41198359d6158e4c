//! The papers' workloads as deterministic request generators (one file each), and the
//! record/replay trace format.

mod config;
mod contest;
mod gr;
mod insert;
mod live_keys;
mod ltu;
mod tpcc;
mod trace;
mod ycsb;
mod zipf;

pub use config::{Mix, WorkloadConfig, WorkloadKind};
pub use contest::Contest;
pub use gr::{DELETE_DISTANCE_MIN, Gr};
pub use insert::{INSERT_QUERY_KEYS_BYTES_MAX, Insert, InsertQuery};
pub use live_keys::LiveKeys;
pub use ltu::Ltu;
pub use tpcc::{Tpcc, tpcc_key, tpcc_key_parts};
pub use trace::{
    TRACE_MAGIC, TRACE_VERSION, TracePhase, TraceReader, TraceRecord, TraceWriter, record_trace,
};
pub use ycsb::{Ycsb, YcsbVariant};
pub use zipf::Zipfian;

use lamina_core::Result;

use crate::Op;

/// A deterministic stream of requests: first the preload (excluded from measurement),
/// then the workload proper.
pub trait Workload: Send {
    /// The next preload request, or `None` once the preload is complete.
    fn next_preload(&mut self) -> Result<Option<Op>>;

    /// The next request of the workload, or `None` when it is exhausted (only a replayed
    /// trace ends; generators are unbounded and the runner stops them).
    fn next_op(&mut self) -> Result<Option<Op>>;
}
