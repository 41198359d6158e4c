//! The numbers an experiment's figures plot, derived from its phases' reports: per-step
//! insert latency (NB-tree Figures 6-7), query latency per data size (Figures 8-9),
//! throughput and latency per lookup ratio (FD+FC Figure 10).

use serde::{Deserialize, Serialize};

use super::PhaseRole;
use crate::report::BenchReport;

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
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Data size (records) or lookup ratio.
    pub x: f64,
    /// Mean throughput over rounds, requests/s.
    pub throughput_ops_s: f64,
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// Largest latency, microseconds.
    pub max_us: f64,
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
            let point = Point {
                x,
                throughput_ops_s: s.throughput_ops_s,
                mean_us: s.all.mean_us,
                max_us: s.all.max_us,
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
    }
}
