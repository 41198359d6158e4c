//! Per-thread recording (no sharing while measuring) and the merge at the end of a run.

use std::{collections::BTreeMap, time::Instant};

use crate::{
    OpKind,
    metrics::{LatencyHistogram, LatencySummary, Timeline},
};

/// One latency distribution per request type, created on first use (a histogram is a few
/// hundred KB).
#[derive(Debug, Clone, Default)]
pub struct KindHistograms {
    by_kind: [Option<LatencyHistogram>; OpKind::COUNT],
}

impl KindHistograms {
    /// Records a latency of a `kind` request.
    pub fn record(&mut self, kind: OpKind, latency_ns: u64) {
        self.by_kind[kind.index()].get_or_insert_with(LatencyHistogram::new).record_ns(latency_ns);
    }

    /// Adds `other`'s samples.
    pub fn merge(&mut self, other: &KindHistograms) {
        for (mine, theirs) in self.by_kind.iter_mut().zip(&other.by_kind) {
            if let Some(theirs) = theirs {
                mine.get_or_insert_with(LatencyHistogram::new).merge(theirs);
            }
        }
    }

    /// The histogram of `kind`, if any request of that kind was recorded.
    pub fn get(&self, kind: OpKind) -> Option<&LatencyHistogram> {
        self.by_kind[kind.index()].as_ref()
    }

    /// Every kind with samples, in [`OpKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (OpKind, &LatencyHistogram)> {
        OpKind::ALL.into_iter().filter_map(|k| self.get(k).map(|h| (k, h)))
    }

    /// All kinds together.
    pub fn all(&self) -> LatencyHistogram {
        let mut all = LatencyHistogram::new();
        for (_, h) in self.iter() {
            all.merge(h);
        }
        all
    }

    /// Total samples.
    pub fn count(&self) -> u64 {
        self.iter().map(|(_, h)| h.count()).sum()
    }

    /// Summaries keyed by kind name.
    pub fn summaries(&self) -> BTreeMap<String, LatencySummary> {
        self.iter().map(|(k, h)| (k.name().to_string(), h.summary())).collect()
    }
}

/// What one worker thread measured.
#[derive(Debug, Clone)]
pub struct ThreadRecorder {
    /// R_p: processing time (closed loop: the request's latency).
    pub processing: KindHistograms,
    /// R_q: processing plus time in the queue (open system only).
    pub queued: KindHistograms,
    /// R_o: R_q plus lateness against the arrival schedule (open system only).
    pub overall: KindHistograms,
    /// Max latency per bucket and per interval.
    pub timeline: Timeline,
    /// When this thread started its first measured request.
    pub first_start: Option<Instant>,
    /// When this thread completed its last measured request.
    pub last_end: Option<Instant>,
    /// Bytes of user data written by measured requests.
    pub user_bytes_written: u64,
}

impl ThreadRecorder {
    /// An empty recorder.
    pub fn new(bucket_ops: u64, interval_ns: u64) -> Self {
        ThreadRecorder {
            processing: KindHistograms::default(),
            queued: KindHistograms::default(),
            overall: KindHistograms::default(),
            timeline: Timeline::new(bucket_ops, interval_ns),
            first_start: None,
            last_end: None,
            user_bytes_written: 0,
        }
    }

    /// Notes a measured request's start and end.
    pub fn span(&mut self, start: Instant, end: Instant) {
        self.first_start = Some(self.first_start.map_or(start, |s| s.min(start)));
        self.last_end = Some(self.last_end.map_or(end, |e| e.max(end)));
    }
}

/// Everything the threads of one run measured, merged.
#[derive(Debug, Clone)]
pub struct Measurements {
    /// R_p per kind.
    pub processing: KindHistograms,
    /// R_q per kind (empty for a closed loop).
    pub queued: KindHistograms,
    /// R_o per kind (empty for a closed loop).
    pub overall: KindHistograms,
    /// Merged timeline; intervals count from the first measured request.
    pub timeline: Timeline,
    /// Seconds from the first measured request's start to the last one's completion.
    pub elapsed_s: f64,
    /// Bytes of user data written by measured requests.
    pub user_bytes_written: u64,
}

impl Measurements {
    /// Merges the threads' recorders. Their timelines' intervals count from `origin`, the
    /// start of the first measured request.
    pub fn merge(
        recorders: &[ThreadRecorder],
        origin: Instant,
        bucket_ops: u64,
        interval_ns: u64,
    ) -> Self {
        let mut m = Measurements {
            processing: KindHistograms::default(),
            queued: KindHistograms::default(),
            overall: KindHistograms::default(),
            timeline: Timeline::new(bucket_ops, interval_ns),
            elapsed_s: 0.0,
            user_bytes_written: 0,
        };
        let mut first: Option<Instant> = None;
        let mut last: Option<Instant> = None;
        for r in recorders {
            m.processing.merge(&r.processing);
            m.queued.merge(&r.queued);
            m.overall.merge(&r.overall);
            m.timeline.merge(&r.timeline);
            m.user_bytes_written += r.user_bytes_written;
            first = match (first, r.first_start) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            last = match (last, r.last_end) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
        if let (Some(first), Some(last)) = (first, last) {
            m.elapsed_s = last.saturating_duration_since(first).as_secs_f64();
            m.timeline.set_end(last.saturating_duration_since(origin).as_nanos() as u64);
        }
        m
    }

    /// Measured requests.
    pub fn count(&self) -> u64 {
        self.processing.count()
    }

    /// Measured requests per second.
    pub fn throughput_ops_s(&self) -> f64 {
        if self.elapsed_s > 0.0 { self.count() as f64 / self.elapsed_s } else { 0.0 }
    }
}
