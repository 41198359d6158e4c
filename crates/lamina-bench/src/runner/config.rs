//! How requests are issued and how long a run lasts.

use std::time::Duration;

use lamina_core::{Error, Result};

/// The request-issuing model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunnerKind {
    /// `threads` client threads, each issuing its next request as soon as the previous one
    /// returns (db_bench and the SIGMOD 2011 contest driver).
    Closed {
        /// Client threads.
        threads: usize,
    },
    /// FD+FC section 5: one injection thread fills the bounded queues Q_r (lookups) and
    /// Q_w (modifications), served by `readers` and `writers` worker threads.
    Open {
        /// T_r: threads serving Q_r.
        readers: usize,
        /// T_w: threads serving Q_w.
        writers: usize,
        /// Arrival rate v (requests per second) of the schedule R_o is measured against
        /// (Remark A.9); `None`: no schedule, R_o = R_q.
        rate_per_s: Option<f64>,
        /// |Q_r| + |Q_w|, split in the workload's read : write proportion (5000 in the paper).
        queue_slots: usize,
    },
}

/// Most worker threads of either runner.
pub const THREADS_MAX: usize = 1024;
/// Most queue slots of the open runner.
pub const QUEUE_SLOTS_MAX: usize = 1 << 24;

/// Parameters of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Closed or open.
    pub runner: RunnerKind,
    /// Measured requests (after the warm-up); `None` with `duration`.
    pub ops: Option<u64>,
    /// Measured time (after the warm-up); `None` with `ops`.
    pub duration: Option<Duration>,
    /// Requests issued before measurement starts (FD+FC: 10K).
    pub warmup_ops: u64,
    /// K of the max-latency-per-bucket series (FD+FC Figure 1: 10,000).
    pub bucket_ops: u64,
    /// Length of a throughput interval.
    pub interval: Duration,
    /// Draw a progress bar on the terminal.
    pub progress: bool,
}

impl RunConfig {
    /// Checks the combination.
    pub fn validate(&self) -> Result<()> {
        match (self.ops, self.duration) {
            (Some(0), _) => return Err(Error::option("ops", "must be at least 1")),
            (Some(_), Some(_)) => {
                return Err(Error::option("duration", "give --ops or --duration, not both"));
            }
            (None, None) => return Err(Error::option("ops", "give --ops or --duration")),
            (None, Some(d)) if d.is_zero() || d > Duration::from_hours(7 * 24) => {
                return Err(Error::option("duration", "must be more than 0 and at most a week"));
            }
            _ => {}
        }
        if self.bucket_ops == 0 {
            return Err(Error::option("bucket-ops", "must be at least 1"));
        }
        if self.interval < Duration::from_millis(1) || self.interval > Duration::from_hours(1) {
            return Err(Error::option("interval-ms", "must be 1..=3600000"));
        }
        match self.runner {
            RunnerKind::Closed { threads } => {
                if !(1..=THREADS_MAX).contains(&threads) {
                    return Err(Error::option(
                        "threads",
                        format!("must be 1..={THREADS_MAX}, got {threads}"),
                    ));
                }
            }
            RunnerKind::Open { readers, writers, rate_per_s, queue_slots } => {
                if readers > THREADS_MAX || writers > THREADS_MAX || readers + writers == 0 {
                    return Err(Error::option(
                        "readers",
                        format!("--readers and --writers must be 0..={THREADS_MAX}, not both 0"),
                    ));
                }
                if let Some(rate) = rate_per_s
                    && !(rate.is_finite() && rate > 0.0)
                {
                    return Err(Error::option(
                        "rate",
                        format!("must be a positive number of requests per second, got {rate}"),
                    ));
                }
                if !(2..=QUEUE_SLOTS_MAX).contains(&queue_slots) {
                    return Err(Error::option(
                        "queue-slots",
                        format!("must be 2..={QUEUE_SLOTS_MAX}, got {queue_slots}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Total requests issued (warm-up plus measured), if bounded by count.
    pub fn total_ops(&self) -> Option<u64> {
        self.ops.map(|ops| ops + self.warmup_ops)
    }
}
