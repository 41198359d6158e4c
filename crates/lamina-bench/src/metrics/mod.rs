//! What a run measures: latency distributions, latency and throughput over time, and the
//! process's resources (disk and memory).

mod histogram;
mod resources;
mod timeline;

pub use histogram::{LATENCY_NS_MAX, LatencyHistogram, LatencySummary};
pub use resources::{
    dir_size_bytes, release_free_memory, reset_rss_peak, rss_bytes, rss_peak_bytes,
};
pub use timeline::{BUCKETS_MAX, INTERVALS_MAX, Timeline};
