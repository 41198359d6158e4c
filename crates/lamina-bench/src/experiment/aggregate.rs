//! The numbers an experiment's figures plot, derived from its phases' reports: per-step
//! insert latency (NB-tree Figures 6-7), query latency per data size (Figures 8-9),
//! throughput and latency per lookup ratio (FD+FC Figure 10).

use serde::{Deserialize, Serialize};

use super::PhaseRole;
use crate::report::{BenchReport, RunReport};

/// One engine's mean and maximum latency per data-size step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineSteps {
    /// Engine name.
    pub engine: String,
    /// Mean latency of each step, microseconds (rounds averaged).
    pub mean_us: Vec<f64>,
    /// Largest latency of each step, microseconds (over all rounds).
    pub max_us: Vec<f64>,
}

/// Per-step latency of an insert phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTable {
    /// Inserts per step.
    pub step_ops: u64,
    /// Records in the index at the end of each step.
    pub records_end: Vec<u64>,
    /// One entry per engine, in the report's summary order.
    pub engines: Vec<EngineSteps>,
}

/// Splits each engine's insert phase into its steps: the timeline's buckets, whose size
/// the experiment set to one step, averaged (means) and maxed over rounds.
pub fn step_table(report: &BenchReport, steps: u64) -> StepTable {
    let step_ops = report.params.bucket_ops.max(1);
    let steps = steps as usize;
    let measured = report.runs.iter().map(|r| r.measured_ops).max().unwrap_or(0);
    let step_count = (measured.div_ceil(step_ops) as usize).min(steps);
    let preload = report.params.preload;
    let records_end =
        (0..step_count as u64).map(|i| preload + ((i + 1) * step_ops).min(measured)).collect();
    let engines = report
        .summary
        .iter()
        .map(|s| {
            let runs: Vec<_> = report.runs.iter().filter(|r| r.engine == s.engine).collect();
            let mut mean_us = vec![0.0; step_count];
            let mut max_us = vec![0.0f64; step_count];
            for run in &runs {
                let t = &run.timeline;
                for i in 0..step_count {
                    mean_us[i] += t.bucket_mean_us.get(i).copied().unwrap_or(0.0);
                    max_us[i] = max_us[i].max(t.bucket_max_us.get(i).copied().unwrap_or(0.0));
                }
            }
            let rounds = runs.len().max(1) as f64;
            for m in &mut mean_us {
                *m /= rounds;
            }
            EngineSteps { engine: s.engine.clone(), mean_us, max_us }
        })
        .collect();
    StepTable { step_ops, records_end, engines }
}

/// One point of a per-phase series.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Point {
    /// Data size (records) or lookup ratio.
    pub x: f64,
    /// Mean throughput over rounds, requests/s.
    pub throughput_ops_s: f64,
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// Largest latency, microseconds.
    pub max_us: f64,
    /// Standard deviation of all requests' latency over the rounds, microseconds (0 in
    /// reports written before it was added).
    #[serde(default)]
    pub stddev_us: f64,
    /// R_p of insertions (`put`), if the phase had any.
    #[serde(default)]
    pub insert: Option<KindPoint>,
    /// R_p of deletions, if any.
    #[serde(default)]
    pub delete: Option<KindPoint>,
    /// R_p of lookups (`get`), if any.
    #[serde(default)]
    pub lookup: Option<KindPoint>,
    /// Largest disk footprint of any round (allocated bytes, sampled every 50 ms).
    #[serde(default)]
    pub disk_peak_bytes: u64,
    /// The steady-state footprint: the largest of the rounds' median samples.
    #[serde(default)]
    pub disk_median_bytes: u64,
}

/// Latency of one request kind across an engine's rounds of a phase.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KindPoint {
    /// Requests measured.
    pub count: u64,
    /// Mean, microseconds.
    pub mean_us: f64,
    /// Largest, microseconds (worst case).
    pub max_us: f64,
    /// Standard deviation (rounds pooled), microseconds.
    pub stddev_us: f64,
}

/// Pools `kind`'s latency over `runs` (means weighted by count, variance pooled as
/// E[X^2] - E[X]^2); `None` when no run had such requests.
pub fn pooled_kind(runs: &[&RunReport], kind: &str) -> Option<KindPoint> {
    let summaries: Vec<_> =
        runs.iter().filter_map(|r| r.ops.get(kind)).filter(|s| s.count > 0).collect();
    let count: u64 = summaries.iter().map(|s| s.count).sum();
    if count == 0 {
        return None;
    }
    let n = count as f64;
    let mean = summaries.iter().map(|s| s.count as f64 * s.mean_us).sum::<f64>() / n;
    let square = summaries
        .iter()
        .map(|s| s.count as f64 * (s.stddev_us * s.stddev_us + s.mean_us * s.mean_us))
        .sum::<f64>()
        / n;
    Some(KindPoint {
        count,
        mean_us: mean,
        max_us: summaries.iter().map(|s| s.max_us).fold(0.0, f64::max),
        stddev_us: (square - mean * mean).max(0.0).sqrt(),
    })
}

/// One engine's points across phases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Engine name.
    pub engine: String,
    /// In phase order.
    pub points: Vec<Point>,
}

/// The x value of a phase in its experiment's figure, if it has one.
pub fn phase_x(role: PhaseRole) -> Option<f64> {
    match role {
        PhaseRole::QueryAtSize { records } => Some(records as f64),
        PhaseRole::LookupRatio { lookup_ratio } => Some(lookup_ratio),
        PhaseRole::Single | PhaseRole::InsertSteps { .. } => None,
    }
}

/// Each engine's summary across the phases that have an x value, in engine order of the
/// first such phase (an engine missing from a phase has no point there).
pub fn series<'a>(phases: impl IntoIterator<Item = (PhaseRole, &'a BenchReport)>) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for (role, report) in phases {
        let Some(x) = phase_x(role) else { continue };
        for s in &report.summary {
            let runs: Vec<&RunReport> =
                report.runs.iter().filter(|r| r.engine == s.engine).collect();
            let point = Point {
                x,
                throughput_ops_s: s.throughput_ops_s,
                mean_us: s.all.mean_us,
                max_us: s.all.max_us,
                stddev_us: s.all.stddev_us,
                insert: pooled_kind(&runs, "put"),
                delete: pooled_kind(&runs, "delete"),
                lookup: pooled_kind(&runs, "get"),
                disk_peak_bytes: s.disk_peak_bytes,
                disk_median_bytes: runs.iter().map(|r| r.disk_median_bytes).max().unwrap_or(0),
            };
            match out.iter_mut().find(|e| e.engine == s.engine) {
                Some(e) => e.points.push(point),
                None => out.push(Series { engine: s.engine.clone(), points: vec![point] }),
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use super::*;
    use crate::report::sample_report;

    #[test]
    fn steps_average_means_and_max_maxima_over_rounds() {
        let mut report = sample_report(); // one run of `mem`: 6 requests in buckets of 2
        report.params.preload = 0;
        let mut second = report.runs[0].clone();
        second.round = 2;
        second.timeline.bucket_mean_us = vec![3.0, 1.0, 5.0];
        second.timeline.bucket_max_us = vec![0.5, 9.0, 6.0];
        report.runs.push(second);
        let table = step_table(&report, 10);
        assert_eq!(table.step_ops, 2);
        assert_eq!(table.records_end, vec![2, 4, 6]);
        let [mem] = table.engines.as_slice() else { panic!("one engine") };
        assert_eq!(mem.mean_us, vec![2.0, 1.5, 2.5]);
        assert_eq!(mem.max_us, vec![1.5, 9.0, 6.0]);
        // Fewer steps than buckets: only the first ones.
        assert_eq!(step_table(&report, 2).engines[0].mean_us.len(), 2);
    }

    #[test]
    fn series_follow_phases_with_an_x_value() {
        let report = sample_report();
        let phases = [
            (PhaseRole::InsertSteps { steps: 10 }, &report),
            (PhaseRole::QueryAtSize { records: 50 }, &report),
            (PhaseRole::QueryAtSize { records: 100 }, &report),
        ];
        let s = series(phases);
        let [mem] = s.as_slice() else { panic!("one engine") };
        let xs: Vec<f64> = mem.points.iter().map(|p| p.x).collect();
        assert_eq!(xs, vec![50.0, 100.0]);
        assert_eq!(mem.points[0].throughput_ops_s, 12.0);
        assert_eq!(mem.points[0].max_us, report.summary[0].all.max_us);
        assert_eq!(phase_x(PhaseRole::LookupRatio { lookup_ratio: 0.2 }), Some(0.2));
        let get = report.runs[0].ops["get"];
        let lookup = mem.points[0].lookup.unwrap();
        assert_eq!(
            (lookup.count, lookup.mean_us, lookup.max_us),
            (get.count, get.mean_us, get.max_us)
        );
        assert!((lookup.stddev_us - get.stddev_us).abs() < 1e-9);
        assert_eq!(mem.points[0].disk_median_bytes, report.runs[0].disk_median_bytes);
    }

    #[test]
    fn kinds_pool_rounds_by_count() {
        let report = sample_report();
        let mut a = report.runs[0].clone();
        let mut b = a.clone();
        let get = a.ops.get_mut("get").unwrap();
        (get.count, get.mean_us, get.stddev_us, get.max_us) = (1, 1.0, 0.0, 1.0);
        let get = b.ops.get_mut("get").unwrap();
        (get.count, get.mean_us, get.stddev_us, get.max_us) = (3, 5.0, 0.0, 5.0);
        let p = pooled_kind(&[&a, &b], "get").unwrap();
        // Samples 1, 5, 5, 5: mean 4, variance (9 + 1 + 1 + 1) / 4 = 3.
        assert_eq!((p.count, p.mean_us, p.max_us), (4, 4.0, 5.0));
        assert!((p.stddev_us - 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(pooled_kind(&[&a], "scan"), None);
    }
}
