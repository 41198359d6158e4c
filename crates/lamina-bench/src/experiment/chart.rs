//! An experiment's figures as PNG and SVG: one line per engine against data size or lookup
//! ratio (NB-tree Figures 6-9, FD+FC Figures 6 and 10), plus each single or insert phase's own
//! charts from [`crate::plot::write_plots`].

use std::path::{Path, PathBuf};

use lamina_core::{Error, Result};
use plotters::{coord::Shift, prelude::*};

use super::{ExperimentOutcome, PhaseRole, aggregate::Point};
use crate::plot::{
    CHART_SIZE, Drawn, color, draw_legend, err, label, legend_mark, log_range, write_plots,
};

/// Picks one metric of a point (`None`: the point has no such value, e.g. insert latency
/// of a read-only phase).
type Pick = fn(&Point) -> Option<f64>;

/// FD+FC Figure 6's panels: file name, y axis, log scale, metric.
const FIGURE6_METRICS: [(&str, &str, bool, Pick); 10] = [
    ("throughput", "throughput (requests/s)", false, |p| Some(p.throughput_ops_s)),
    ("insert_mean", "avg. insertion R_p (us)", false, |p| p.insert.map(|k| k.mean_us)),
    ("insert_max", "worst-case insertion R_p (us, log)", true, |p| p.insert.map(|k| k.max_us)),
    ("insert_stddev", "std. dev. of insertion R_p (us)", false, |p| p.insert.map(|k| k.stddev_us)),
    ("lookup_mean", "avg. lookup R_p (us)", false, |p| p.lookup.map(|k| k.mean_us)),
    ("lookup_max", "worst-case lookup R_p (us, log)", true, |p| p.lookup.map(|k| k.max_us)),
    ("lookup_stddev", "std. dev. of lookup R_p (us)", false, |p| p.lookup.map(|k| k.stddev_us)),
    ("disk_peak", "peak disk (MiB allocated)", false, |p| {
        Some(p.disk_peak_bytes as f64 / f64::from(1 << 20))
    }),
    ("disk_steady", "steady-state disk (MiB, median sample)", false, |p| {
        Some(p.disk_median_bytes as f64 / f64::from(1 << 20))
    }),
    ("disk_peak_over_steady", "peak / steady-state disk", false, |p| {
        (p.disk_median_bytes > 0).then(|| p.disk_peak_bytes as f64 / p.disk_median_bytes as f64)
    }),
];

/// One figure: lines of (x, y) per engine.
struct Figure<'a> {
    title: String,
    x_desc: &'a str,
    y_desc: &'a str,
    /// Logarithmic y axis (latencies spanning decades).
    log_y: bool,
    lines: Vec<(String, Vec<(f64, f64)>)>,
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure<'_>) -> Drawn {
    root.fill(&WHITE).map_err(err)?;
    let xs = || fig.lines.iter().flat_map(|(_, pts)| pts.iter().map(|p| p.0));
    let ys = || fig.lines.iter().flat_map(|(_, pts)| pts.iter().map(|p| p.1));
    let x_min = xs().fold(f64::MAX, f64::min).min(0.0);
    let x_max = xs().fold(0.0f64, f64::max);
    let x_range = x_min..(if x_max > x_min { x_max * 1.05 } else { x_min + 1.0 });
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(&fig.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70);
    macro_rules! finish {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(fig.x_desc)
                .y_desc(fig.y_desc)
                .x_label_formatter(&label)
                .y_label_formatter(&label)
                .draw()
                .map_err(err)?;
            for (i, (engine, points)) in fig.lines.iter().enumerate() {
                let c = color(i);
                let pts: Vec<(f64, f64)> =
                    points.iter().copied().filter(|p| !fig.log_y || p.1 > 0.0).collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(err)?
                    .label(engine.clone())
                    .legend(legend_mark(c));
                chart
                    .draw_series(pts.into_iter().map(|p| Circle::new(p, 3, c.filled())))
                    .map_err(err)?;
            }
            draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        }};
    }
    if fig.log_y {
        finish!(builder.build_cartesian_2d(x_range, log_range(ys()).log_scale()).map_err(err)?);
    } else {
        let y_max = ys().fold(0.0f64, f64::max).max(1e-9) * 1.1;
        finish!(builder.build_cartesian_2d(x_range, 0.0..y_max).map_err(err)?);
    }
    root.present().map_err(err)
}

fn write_figure(
    dir: &Path,
    name: &str,
    fig: &Figure<'_>,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let png = dir.join(format!("{name}.png"));
    let svg = dir.join(format!("{name}.svg"));
    let failed = |path: &Path| {
        let path = path.display().to_string();
        move |e: String| Error::io(format!("drawing {path}"), std::io::Error::other(e))
    };
    draw(&BitMapBackend::new(&png, CHART_SIZE).into_drawing_area(), fig).map_err(failed(&png))?;
    draw(&SVGBackend::new(&svg, CHART_SIZE).into_drawing_area(), fig).map_err(failed(&svg))?;
    written.push(png);
    written.push(svg);
    Ok(())
}

/// Writes the experiment's figures into `dir` and each single or insert phase's charts
/// into `dir/<phase>/`; returns the files written.
pub fn write_experiment_plots(outcome: &ExperimentOutcome, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    let mut written = Vec::new();
    let report = &outcome.report;
    if let Some(steps) = &report.insert_steps {
        let x = |i: usize| steps.records_end[i] as f64;
        for (name, what, log_y, pick) in [
            ("insert_mean_vs_size", "Avg. insertion time (us)", false, 0),
            ("insert_max_vs_size", "Max. insertion time (us, log)", true, 1),
        ] {
            let lines = steps
                .engines
                .iter()
                .map(|e| {
                    let ys = if pick == 0 { &e.mean_us } else { &e.max_us };
                    (e.engine.clone(), ys.iter().enumerate().map(|(i, y)| (x(i), *y)).collect())
                })
                .collect();
            let title = format!(
                "{}: {what} per step of {} inserts vs data size",
                report.experiment, steps.step_ops
            );
            let fig = Figure { title, x_desc: "records inserted", y_desc: what, log_y, lines };
            write_figure(dir, name, &fig, &mut written)?;
        }
    }
    if !report.series.is_empty() {
        let x_desc = report.x_name();
        let prefix = if report.insert_steps.is_some() {
            "query"
        } else if report.is_figure6() {
            "figure6"
        } else {
            "lookup_ratio"
        };
        let basic: [(&str, &str, bool, Pick); 3] = [
            ("throughput", "throughput (requests/s)", false, |p| Some(p.throughput_ops_s)),
            ("mean", "mean latency (us)", false, |p| Some(p.mean_us)),
            ("max", "max latency (us, log)", true, |p| Some(p.max_us)),
        ];
        let metrics: &[(&str, &str, bool, Pick)] =
            if report.is_figure6() { &FIGURE6_METRICS } else { &basic };
        for &(metric, what, log_y, pick) in metrics {
            let lines = report
                .series
                .iter()
                .map(|s| {
                    let pts = s.points.iter().filter_map(|p| pick(p).map(|y| (p.x, y))).collect();
                    (s.engine.clone(), pts)
                })
                .collect();
            let title = format!("{}: {what} vs {x_desc}", report.experiment);
            let fig = Figure { title, x_desc, y_desc: what, log_y, lines };
            write_figure(dir, &format!("{prefix}_{metric}"), &fig, &mut written)?;
        }
    }
    for (phase, bench) in &outcome.phases {
        if matches!(phase.role, PhaseRole::Single | PhaseRole::InsertSteps { .. }) {
            written.extend(write_plots(bench, &dir.join(&phase.name))?);
        }
    }
    Ok(written)
}
