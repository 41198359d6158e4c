//! Latency distributions: an HdrHistogram in nanoseconds with 3 significant digits
//! (0.1% relative precision, far better than microsecond resolution), summarized as
//! PiBench and db_bench report them.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest latency recorded exactly (one hour); longer ones are recorded as this.
pub const LATENCY_NS_MAX: u64 = 3_600_000_000_000;

/// A latency distribution.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        LatencyHistogram {
            hist: Histogram::new_with_bounds(1, LATENCY_NS_MAX, 3)
                .expect("static bounds are valid"),
        }
    }

    /// Records one latency in nanoseconds (0 counts as 1 ns, beyond an hour as an hour).
    pub fn record_ns(&mut self, latency_ns: u64) {
        self.hist.saturating_record(latency_ns.max(1));
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.hist.add(&other.hist).expect("same bounds: add cannot fail");
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Latency at quantile `q` (0..=1), in nanoseconds (0 when empty).
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count() == 0 { 0 } else { self.hist.value_at_quantile(q) }
    }

    /// Largest sample (the highest equivalent value of its bucket), nanoseconds.
    pub fn max_ns(&self) -> u64 {
        if self.count() == 0 { 0 } else { self.hist.max() }
    }

    /// Mean, nanoseconds.
    pub fn mean_ns(&self) -> f64 {
        if self.count() == 0 { 0.0 } else { self.hist.mean() }
    }

    /// `(latency_us, fraction of samples at or below it)` points of the CDF, one per
    /// distinct recorded bucket, thinned to at most `points_max`.
    pub fn cdf_us(&self, points_max: usize) -> Vec<(f64, f64)> {
        let total = self.count();
        if total == 0 {
            return Vec::new();
        }
        let mut points: Vec<(f64, f64)> = self
            .hist
            .iter_recorded()
            .map(|v| (v.value_iterated_to() as f64 / 1000.0, v.quantile_iterated_to()))
            .collect();
        if points.len() > points_max && points_max >= 2 {
            let step = points.len() as f64 / (points_max - 1) as f64;
            let last = *points.last().expect("non-empty");
            points = (0..points_max - 1).map(|i| points[(i as f64 * step) as usize]).collect();
            points.push(last);
        }
        points
    }

    /// The report's numbers for this distribution.
    pub fn summary(&self) -> LatencySummary {
        let us = |ns: u64| ns as f64 / 1000.0;
        let h = &self.hist;
        let empty = self.count() == 0;
        LatencySummary {
            count: self.count(),
            mean_us: self.mean_ns() / 1000.0,
            stddev_us: if empty { 0.0 } else { h.stdev() / 1000.0 },
            min_us: if empty { 0.0 } else { us(h.min()) },
            p50_us: us(self.quantile_ns(0.50)),
            p90_us: us(self.quantile_ns(0.90)),
            p99_us: us(self.quantile_ns(0.99)),
            p999_us: us(self.quantile_ns(0.999)),
            p9999_us: us(self.quantile_ns(0.9999)),
            max_us: us(self.max_ns()),
        }
    }
}

/// Count and latency statistics of one operation type (the `ops.<kind>` objects of the
/// JSON report; see `docs/bench-json.md`). Times in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Requests measured.
    pub count: u64,
    /// Mean latency.
    pub mean_us: f64,
    /// Standard deviation.
    pub stddev_us: f64,
    /// Smallest latency.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// 99.99th percentile.
    pub p9999_us: f64,
    /// Largest latency.
    pub max_us: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = LatencyHistogram::new();
        for us in 1..=10_000u64 {
            h.record_ns(us * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        let close = |got: f64, want: f64| (got / want - 1.0).abs() < 0.002;
        assert!(close(s.mean_us, 5000.5), "{s:?}");
        assert!(close(s.p50_us, 5000.0), "{s:?}");
        assert!(close(s.p90_us, 9000.0), "{s:?}");
        assert!(close(s.p99_us, 9900.0), "{s:?}");
        assert!(close(s.p999_us, 9990.0), "{s:?}");
        assert!(close(s.p9999_us, 9999.0), "{s:?}");
        assert!(close(s.max_us, 10_000.0), "{s:?}");
        assert!(close(s.min_us, 1.0), "{s:?}");
        // Uniform on 1..=n: stddev = sqrt((n^2 - 1) / 12).
        assert!(close(s.stddev_us, (((10_000f64).powi(2) - 1.0) / 12.0).sqrt()), "{s:?}");
    }

    #[test]
    fn merge_adds_samples_and_extremes_saturate() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record_ns(0);
        b.record_ns(u64::MAX);
        a.merge(&b);
        assert_eq!(a.count(), 2);
        assert_eq!(a.quantile_ns(0.0), 1);
        assert!(a.max_ns() >= LATENCY_NS_MAX);
        assert_eq!(LatencyHistogram::new().summary(), LatencySummary::default());
    }

    #[test]
    fn cdf_is_monotone_and_ends_at_one() {
        let mut h = LatencyHistogram::new();
        for i in 0..100_000u64 {
            h.record_ns(1000 + (i * 7919) % 1_000_000);
        }
        let cdf = h.cdf_us(200);
        assert!(cdf.len() <= 200);
        assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert!((cdf.last().unwrap().1 - 1.0).abs() < 1e-9);
    }
}
