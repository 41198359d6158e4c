//! Latency and throughput over the course of a run.
//!
//! - The maximum latency per bucket of K consecutive requests, K = `--bucket-ops`: the
//!   measure of FD+FC Figure 1 ("the insertions are grouped into buckets each containing
//!   10,000 requests; we plot the longest observed time per request in each bucket").
//!   Requests are numbered in generation order, so the buckets are the same for every
//!   engine whatever the thread interleaving.
//! - Completions and maximum latency per wall-clock interval (`--interval-ms`), for
//!   throughput over time.

/// Most buckets kept (requests beyond `BUCKETS_MAX * K` are not bucketed).
pub const BUCKETS_MAX: usize = 1 << 20;
/// Most intervals kept (later completions are not counted in the timeline).
pub const INTERVALS_MAX: usize = 1 << 20;

/// One thread's (or a merged) timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    /// K: requests per bucket.
    pub bucket_ops: u64,
    /// Largest latency (ns) of each bucket of K requests; 0 for an empty bucket.
    pub bucket_max_ns: Vec<u64>,
    /// Sum of the latencies (ns) of each bucket, for its mean (NB-tree Figure 6's average
    /// insertion time per data-size step).
    pub bucket_sum_ns: Vec<u64>,
    /// Requests recorded in each bucket (K except the last, or with `--duration`).
    pub bucket_count: Vec<u64>,
    /// Interval length in nanoseconds.
    pub interval_ns: u64,
    /// Completions per interval since the start of the measurement.
    pub interval_ops: Vec<u64>,
    /// Largest latency (ns) completed in each interval.
    pub interval_max_ns: Vec<u64>,
    /// Length of the last interval, which the end of the run usually cuts short (ns;
    /// `interval_ns` unless set by [`Timeline::set_end`]).
    pub last_interval_ns: u64,
}

impl Timeline {
    /// An empty timeline.
    pub fn new(bucket_ops: u64, interval_ns: u64) -> Self {
        assert!(bucket_ops > 0 && interval_ns > 0, "bucket_ops and interval_ns must be positive");
        Timeline {
            bucket_ops,
            bucket_max_ns: Vec::new(),
            bucket_sum_ns: Vec::new(),
            bucket_count: Vec::new(),
            interval_ns,
            interval_ops: Vec::new(),
            interval_max_ns: Vec::new(),
            last_interval_ns: interval_ns,
        }
    }

    /// Records request number `request` (0-based, measured requests only) that completed
    /// `completed_ns` after the start of the measurement and took `latency_ns`.
    pub fn record(&mut self, request: u64, completed_ns: u64, latency_ns: u64) {
        let bucket = (request / self.bucket_ops) as usize;
        if bucket < BUCKETS_MAX {
            if self.bucket_max_ns.len() <= bucket {
                self.bucket_max_ns.resize(bucket + 1, 0);
                self.bucket_sum_ns.resize(bucket + 1, 0);
                self.bucket_count.resize(bucket + 1, 0);
            }
            self.bucket_max_ns[bucket] = self.bucket_max_ns[bucket].max(latency_ns);
            self.bucket_sum_ns[bucket] = self.bucket_sum_ns[bucket].saturating_add(latency_ns);
            self.bucket_count[bucket] += 1;
        }
        let interval = (completed_ns / self.interval_ns) as usize;
        if interval < INTERVALS_MAX {
            if self.interval_ops.len() <= interval {
                self.interval_ops.resize(interval + 1, 0);
                self.interval_max_ns.resize(interval + 1, 0);
            }
            self.interval_ops[interval] += 1;
            self.interval_max_ns[interval] = self.interval_max_ns[interval].max(latency_ns);
        }
    }

    /// Folds `other` (same K and interval) into `self`.
    pub fn merge(&mut self, other: &Timeline) {
        assert_eq!(
            (self.bucket_ops, self.interval_ns),
            (other.bucket_ops, other.interval_ns),
            "merging unlike timelines"
        );
        merge_max(&mut self.bucket_max_ns, &other.bucket_max_ns);
        merge_add(&mut self.bucket_sum_ns, &other.bucket_sum_ns);
        merge_add(&mut self.bucket_count, &other.bucket_count);
        merge_max(&mut self.interval_max_ns, &other.interval_max_ns);
        merge_add(&mut self.interval_ops, &other.interval_ops);
    }

    /// Mean latency (ns) of each bucket; 0 for an empty bucket.
    pub fn bucket_mean_ns(&self) -> Vec<f64> {
        self.bucket_sum_ns
            .iter()
            .zip(&self.bucket_count)
            .map(|(&sum, &n)| if n == 0 { 0.0 } else { sum as f64 / n as f64 })
            .collect()
    }

    /// Notes that the run ended `end_ns` after the start of the measurement, so the last
    /// interval's throughput is computed over its true length.
    pub fn set_end(&mut self, end_ns: u64) {
        let full = self.interval_ops.len().saturating_sub(1) as u64 * self.interval_ns;
        self.last_interval_ns = end_ns.saturating_sub(full).clamp(1, self.interval_ns);
    }

    /// Throughput of each interval in requests per second.
    pub fn interval_ops_per_s(&self) -> Vec<f64> {
        let last = self.interval_ops.len().saturating_sub(1);
        self.interval_ops
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let length_ns = if i == last { self.last_interval_ns } else { self.interval_ns };
                n as f64 * 1e9 / length_ns as f64
            })
            .collect()
    }
}

fn merge_add(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a = a.saturating_add(*b);
    }
}

fn merge_max(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a = (*a).max(*b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_keep_the_maximum_and_intervals_count() {
        let mut a = Timeline::new(10, 1_000_000);
        let mut b = Timeline::new(10, 1_000_000);
        for i in 0..25u64 {
            let t = if i % 2 == 0 { &mut a } else { &mut b };
            t.record(i, i * 100_000, i * 3);
        }
        a.merge(&b);
        assert_eq!(a.bucket_max_ns, vec![27, 57, 72]);
        assert_eq!(a.bucket_count, vec![10, 10, 5]);
        // Bucket 0 holds requests 0..10 with latencies 0, 3, ..., 27: mean 13.5.
        assert_eq!(a.bucket_mean_ns(), vec![13.5, 43.5, 66.0]);
        assert_eq!(a.interval_ops.iter().sum::<u64>(), 25);
        assert_eq!(a.interval_ops[0], 10);
        assert!((a.interval_ops_per_s()[0] - 10_000.0).abs() < 1e-6);
        // 25 completions over 2.4 ms: the last interval holds 5 in 0.4 ms.
        a.set_end(2_400_000);
        assert!((a.interval_ops_per_s()[2] - 5.0 / 0.0004).abs() < 1e-6);
    }
}
