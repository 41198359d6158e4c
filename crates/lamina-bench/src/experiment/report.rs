//! An experiment's JSON report (schema `lamina-bench-experiment`, `docs/bench-json.md`)
//! and its markdown rendering.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{
    Experiment, Phase, PhaseRole,
    aggregate::{KindPoint, Series, StepTable},
    run::ExperimentRequest,
    scale::ScaleTable,
};
use crate::{
    BenchOutcome,
    report::{BenchReport, FailedEngine, SkippedEngine, fmt_bytes, render_table},
};

/// Schema name of an experiment report.
pub const EXPERIMENT_SCHEMA_NAME: &str = "lamina-bench-experiment";
/// Its version.
pub const EXPERIMENT_SCHEMA_VERSION: u32 = 1;

/// One phase: its name, x value and full comparison report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Phase name.
    pub name: String,
    /// Data size (records) or lookup ratio, if the phase is a point of a figure.
    pub x: Option<f64>,
    /// The comparison (schema `lamina-bench`).
    pub report: BenchReport,
}

/// An engine's failure in one phase of an experiment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseFailure {
    /// The phase it failed in.
    pub phase: String,
    /// Engine, round, step and error (the same entry as in the phase's `report.failed`).
    #[serde(flatten)]
    pub failure: FailedEngine,
}

/// The whole experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentReport {
    /// [`EXPERIMENT_SCHEMA_NAME`].
    pub schema: String,
    /// [`EXPERIMENT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Experiment name.
    pub experiment: String,
    /// What it reproduces.
    pub title: String,
    /// The command line.
    pub command: String,
    /// Engines the experiment wanted but the build lacks (the bench's own skips are in
    /// each phase's `report.skipped`).
    pub missing: Vec<SkippedEngine>,
    /// Phases in run order.
    pub phases: Vec<PhaseReport>,
    /// Per-step insert latency (nbtree-insert).
    pub insert_steps: Option<StepTable>,
    /// Per-engine points across phases with an x value (nbtree-insert's query sizes,
    /// fdfc-vs-btree's lookup ratios).
    pub series: Vec<Series>,
    /// Every failed engine with the phase it failed in (`scale`: `reopen` for the checks,
    /// close and reopen after the last phase); absent in reports written before it was
    /// added. Non-empty: `lamina bench` exited non-zero after writing the report.
    #[serde(default)]
    pub failed: Vec<PhaseFailure>,
    /// `scale`'s per-engine table with ratios to the best peer; null for other experiments.
    #[serde(default)]
    pub scale: Option<ScaleTable>,
}

impl ExperimentReport {
    /// Assembles the report.
    pub fn new(
        request: &ExperimentRequest,
        missing: Vec<(String, String)>,
        phases: &[(Phase, BenchOutcome)],
        insert_steps: Option<StepTable>,
        series: Vec<Series>,
        failed: Vec<PhaseFailure>,
        scale: Option<ScaleTable>,
    ) -> Self {
        ExperimentReport {
            schema: EXPERIMENT_SCHEMA_NAME.into(),
            schema_version: EXPERIMENT_SCHEMA_VERSION,
            experiment: request.experiment.name().into(),
            title: request.experiment.title().into(),
            command: request.command.clone(),
            missing: missing
                .into_iter()
                .map(|(engine, reason)| SkippedEngine { engine, reason })
                .collect(),
            phases: phases
                .iter()
                .map(|(p, o)| PhaseReport {
                    name: p.name.clone(),
                    x: super::aggregate::phase_x(p.role),
                    report: o.report.clone(),
                })
                .collect(),
            insert_steps,
            series,
            failed,
            scale,
        }
    }

    /// The x axis of [`ExperimentReport::series`].
    pub fn x_name(&self) -> &'static str {
        if self.is_figure6() || self.experiment == Experiment::FdfcVsBtree.name() {
            "W_l"
        } else {
            "records"
        }
    }

    /// Whether this is `fdfc-figure6` (per-kind latency and disk columns).
    pub fn is_figure6(&self) -> bool {
        self.experiment == Experiment::FdfcFigure6.name()
    }

    /// The heading of the series table.
    fn series_heading(&self) -> &'static str {
        if self.experiment == Experiment::FdfcVsBtree.name() {
            "Throughput and latency vs lookup ratio W_l (FD+FC Figure 10)"
        } else {
            "Query time vs data size (NB-tree Figures 8-9)"
        }
    }

    /// Markdown: title, command, notes, the figure's tables, then each phase's table.
    pub fn to_markdown(&self, roles: &[PhaseRole]) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# lamina bench --experiment {}\n\n{}\n", self.experiment, self.title);
        let _ = writeln!(md, "Command: `{}`\n", self.command);
        let _ = writeln!(
            md,
            "Files: `report.json` (schema `{EXPERIMENT_SCHEMA_NAME}`, docs/bench-json.md), \
             `plots/` (PNG and SVG), `<phase>/timeline.csv`.\n"
        );
        for m in &self.missing {
            let _ = writeln!(md, "- not run: `{}` ({})", m.engine, m.reason);
        }
        for phase in &self.phases {
            for s in &phase.report.skipped {
                let _ =
                    writeln!(md, "- phase {}: skipped `{}` ({})", phase.name, s.engine, s.reason);
            }
        }
        for f in &self.failed {
            let _ = writeln!(md, "- **FAILED** in phase {}: {}", f.phase, f.failure);
        }
        md.push('\n');
        if let Some(scale) = &self.scale {
            md.push_str(&scale.to_markdown());
            md.push_str(
                "Plots: `plots/insert_max_vs_size` (max insert latency per 1% of the inserts, \
                 FD+FC Figure 1's measure), `plots/insert_mean_vs_size`, \
                 `plots/insert/throughput_over_time` (inserts/s over the insert phase), and each \
                 phase's `plots/<phase>/`.\n\n",
            );
        } else if let Some(steps) = &self.insert_steps {
            md.push_str(&steps_markdown(steps));
        }
        if self.is_figure6() {
            md.push_str(&figure6_markdown(&self.series));
        } else if !self.series.is_empty() {
            md.push_str(&series_markdown(self.series_heading(), self.x_name(), &self.series));
        }
        for (phase, role) in self.phases.iter().zip(roles) {
            let _ = writeln!(
                md,
                "## Phase `{}`: {role}\n\n```\n{}```\n",
                phase.name,
                render_table(&phase.report)
            );
        }
        md
    }
}

/// Each phase's failures, tagged with the phase.
pub fn phase_failures<'a>(
    phases: impl IntoIterator<Item = (&'a str, &'a BenchReport)>,
) -> Vec<PhaseFailure> {
    phases
        .into_iter()
        .flat_map(|(name, report)| {
            report
                .failed
                .iter()
                .map(move |f| PhaseFailure { phase: name.to_string(), failure: f.clone() })
        })
        .collect()
}

fn engines_header(md: &mut String, first: &str, engines: &[&str], columns: &[&str]) {
    let _ = write!(md, "| {first} |");
    for e in engines {
        for c in columns {
            let _ = write!(md, " {e} {c} |");
        }
    }
    md.push_str("\n|---|");
    for _ in 0..engines.len() * columns.len() {
        md.push_str("---:|");
    }
    md.push('\n');
}

/// NB-tree Figures 6-7 as a table: one row per data-size step.
pub fn steps_markdown(steps: &StepTable) -> String {
    let mut md = String::from(
        "## Insert time vs data size (NB-tree Figures 6-7)\n\nMean and max insert latency (µs) per step of inserts; `records` is the index size at the end of the step.\n\n",
    );
    let engines: Vec<&str> = steps.engines.iter().map(|e| e.engine.as_str()).collect();
    engines_header(&mut md, "records", &engines, &["mean µs", "max µs"]);
    for (i, records) in steps.records_end.iter().enumerate() {
        let _ = write!(md, "| {records} |");
        for e in &steps.engines {
            let _ = write!(md, " {:.2} | {:.0} |", e.mean_us[i], e.max_us[i]);
        }
        md.push('\n');
    }
    md.push('\n');
    md
}

/// Figures with one point per phase (query sizes, lookup ratios) as a table.
pub fn series_markdown(heading: &str, x_name: &str, series: &[Series]) -> String {
    let mut md = format!(
        "## {heading}\n\nThroughput (requests/s), mean and max latency (µs) per phase; \
         `{x_name}` is the phase's x value.\n\n"
    );
    let engines: Vec<&str> = series.iter().map(|s| s.engine.as_str()).collect();
    engines_header(&mut md, x_name, &engines, &["ops/s", "mean µs", "max µs"]);
    let mut xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.x)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let _ = write!(md, "| {x} |");
        for s in series {
            match s.points.iter().find(|p| p.x.total_cmp(&x).is_eq()) {
                Some(p) => {
                    let _ = write!(
                        md,
                        " {:.0} | {:.2} | {:.0} |",
                        p.throughput_ops_s, p.mean_us, p.max_us
                    );
                }
                None => md.push_str(" - | - | - |"),
            }
        }
        md.push('\n');
    }
    md.push('\n');
    md
}

/// FD+FC Figure 6 as a table: one row per lookup ratio and engine, with throughput, R_p of
/// insertions and lookups (mean, worst case, standard deviation: panels a-e and g) and the
/// disk footprint (peak against steady state: section 5's space claim).
pub fn figure6_markdown(series: &[Series]) -> String {
    let mut md = String::from(
        "## FD+XM vs FD+DS vs FD+FC across lookup ratios (FD+FC Figure 6)\n\n\
         R_p in µs (insert = `put`; deletions behave alike); sd = standard deviation; disk is \
         the directory's allocated size sampled every 50 ms: peak, steady state (median \
         sample) and their ratio.\n\n\
         | W_l | engine | ops/s | ins mean | ins max | ins sd | look mean | look max | look sd \
         | all sd | disk peak | disk steady | peak/steady |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.x)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let kind = |k: Option<KindPoint>| match k {
        Some(k) => format!("{:.1} | {:.0} | {:.1}", k.mean_us, k.max_us, k.stddev_us),
        None => "- | - | -".to_string(),
    };
    for x in xs {
        for s in series {
            let Some(p) = s.points.iter().find(|p| p.x.total_cmp(&x).is_eq()) else { continue };
            let ratio = if p.disk_median_bytes > 0 {
                format!("{:.2}", p.disk_peak_bytes as f64 / p.disk_median_bytes as f64)
            } else {
                "-".to_string()
            };
            let _ = writeln!(
                md,
                "| {x} | {} | {:.0} | {} | {} | {:.1} | {} | {} | {ratio} |",
                s.engine,
                p.throughput_ops_s,
                kind(p.insert),
                kind(p.lookup),
                p.stddev_us,
                fmt_bytes(p.disk_peak_bytes),
                fmt_bytes(p.disk_median_bytes),
            );
        }
    }
    md.push('\n');
    md
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use super::*;
    use crate::experiment::aggregate::{EngineSteps, Point};

    #[test]
    fn step_and_series_tables_have_a_row_per_step_and_per_x() {
        let steps = StepTable {
            step_ops: 10,
            records_end: vec![10, 20],
            engines: vec![
                EngineSteps { engine: "a".into(), mean_us: vec![1.0, 2.0], max_us: vec![5.0, 6.0] },
                EngineSteps { engine: "b".into(), mean_us: vec![3.0, 4.0], max_us: vec![7.0, 8.0] },
            ],
        };
        let md = steps_markdown(&steps);
        assert!(md.contains("| records | a mean µs | a max µs | b mean µs | b max µs |"), "{md}");
        assert!(md.contains("| 20 | 2.00 | 6 | 4.00 | 8 |"), "{md}");
        let p =
            |x| Point { x, throughput_ops_s: 100.0, mean_us: 1.5, max_us: 9.0, ..Point::default() };
        let series = vec![
            Series { engine: "a".into(), points: vec![p(0.0), p(0.5)] },
            Series { engine: "b".into(), points: vec![p(0.5)] },
        ];
        let md = series_markdown("Figure", "W_l", &series);
        assert!(md.contains("| 0 | 100 | 1.50 | 9 | - | - | - |"), "{md}");
        assert!(md.contains("| 0.5 | 100 | 1.50 | 9 | 100 | 1.50 | 9 |"), "{md}");
    }

    #[test]
    fn figure6_table_has_a_row_per_ratio_and_engine_with_disk_ratio() {
        let k = |mean_us, max_us| KindPoint { count: 10, mean_us, max_us, stddev_us: 2.0 };
        let p = Point {
            x: 0.2,
            throughput_ops_s: 1000.0,
            insert: Some(k(3.0, 40.0)),
            lookup: Some(k(5.0, 60.0)),
            stddev_us: 4.0,
            disk_peak_bytes: 3 << 20,
            disk_median_bytes: 2 << 20,
            ..Point::default()
        };
        let read_only = Point { x: 1.0, insert: None, ..p };
        let series = vec![
            Series { engine: "fdtree-xm".into(), points: vec![p, read_only] },
            Series { engine: "fdtree-ds".into(), points: vec![p] },
        ];
        let md = figure6_markdown(&series);
        let row = "| 0.2 | fdtree-xm | 1000 | 3.0 | 40 | 2.0 | 5.0 | 60 | 2.0 | 4.0 | 3.0 MiB | 2.0 MiB | 1.50 |";
        assert!(md.contains(row), "{md}");
        assert!(md.contains("| 0.2 | fdtree-ds |"), "{md}");
        assert!(md.contains("| 1 | fdtree-xm | 1000 | - | - | - | 5.0 |"), "{md}");
        assert_eq!(md.matches("| fdtree-").count(), 3);
    }
}
