//! `--plot DIR`: PNG and SVG charts of a comparison.
//!
//! - `latency_over_time`: the maximum latency per bucket of K requests over the run, log
//!   scale (FD+FC Figure 1), one line per engine (first round);
//! - `latency_cdf`: the latency CDF per engine and operation type (all rounds), log scale;
//! - `throughput_over_time`: completions per second per interval, one line per engine;
//! - `comparison`: bars of throughput, p99 and maximum latency per engine, labelled with
//!   the ratio to the first engine.

use std::path::{Path, PathBuf};

use lamina_core::{Error, Result};
use plotters::{
    coord::Shift,
    prelude::*,
    style::text_anchor::{HPos, Pos, VPos},
};

use crate::{BenchOutcome, report::RunReport};

/// Size of every chart, pixels.
pub const CHART_SIZE: (u32, u32) = (960, 540);
/// Most points of a CDF line.
const CDF_POINTS_MAX: usize = 400;

/// Line colours, one per engine: enough for `--experiment scale`'s ten engines (and two
/// more) before a colour repeats.
const COLORS: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(128, 0, 0),
];

pub(crate) fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

pub(crate) type Drawn = std::result::Result<(), String>;

/// Axis labels without spurious decimals (`100000`, `2.5`, `0.25`).
#[allow(clippy::trivially_copy_pass_by_ref)] // plotters passes label values by reference
pub(crate) fn label(v: &f64) -> String {
    let a = v.abs();
    if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The legend mark of a line drawn in `c`.
pub(crate) fn legend_mark(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
}

/// Draws the legend box of `chart` at `position`.
pub(crate) fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Drawn {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

pub(crate) fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A log-scale range covering `values` (positive ones), with some head room.
pub(crate) fn log_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (mut lo, mut hi) = (f64::MAX, 0.0f64);
    for v in values.filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi <= 0.0 {
        return 0.1..10.0;
    }
    (lo / 2.0)..(hi * 2.0)
}

fn first_rounds(outcome: &BenchOutcome) -> Vec<&RunReport> {
    outcome
        .report
        .summary
        .iter()
        .filter_map(|s| outcome.report.runs.iter().find(|r| r.engine == s.engine))
        .collect()
}

fn latency_over_time<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    outcome: &BenchOutcome,
) -> Drawn {
    root.fill(&WHITE).map_err(err)?;
    let runs = first_rounds(outcome);
    let x_max = runs
        .iter()
        .map(|r| r.timeline.bucket_max_us.len() as u64 * r.timeline.bucket_ops)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let y = log_range(runs.iter().flat_map(|r| r.timeline.bucket_max_us.iter().copied()));
    let k = runs.first().map_or(0, |r| r.timeline.bucket_ops);
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("{}: max latency per bucket of {k} requests", outcome.report.workload),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..x_max, y.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("request")
        .y_desc("max latency (us, log)")
        .x_label_formatter(&label)
        .y_label_formatter(&label)
        .draw()
        .map_err(err)?;
    for (i, run) in runs.iter().enumerate() {
        let c = color(i);
        let k = run.timeline.bucket_ops as f64;
        let points = run
            .timeline
            .bucket_max_us
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0.0)
            .map(|(b, v)| (b as f64 * k, *v));
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))
            .map_err(err)?
            .label(run.engine.clone())
            .legend(legend_mark(c));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)
}

fn latency_cdf<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, outcome: &BenchOutcome) -> Drawn {
    root.fill(&WHITE).map_err(err)?;
    let mut lines = Vec::new();
    for (engine, hists) in &outcome.histograms {
        for (kind, h) in hists.iter() {
            lines.push((format!("{engine} {}", kind.name()), h.cdf_us(CDF_POINTS_MAX)));
        }
    }
    let x = log_range(lines.iter().flat_map(|(_, p)| p.iter().map(|(us, _)| *us)));
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!("{}: latency CDF per operation type", outcome.report.workload),
            ("sans-serif", 22),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x.log_scale(), 0f64..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("latency (us, log)")
        .y_desc("fraction of requests")
        .x_label_formatter(&label)
        .y_label_formatter(&label)
        .draw()
        .map_err(err)?;
    for (i, (label, points)) in lines.into_iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))
            .map_err(err)?
            .label(label)
            .legend(legend_mark(c));
    }
    draw_legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    root.present().map_err(err)
}

fn throughput_over_time<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    outcome: &BenchOutcome,
) -> Drawn {
    root.fill(&WHITE).map_err(err)?;
    let runs = first_rounds(outcome);
    let seconds =
        |r: &RunReport| r.timeline.interval_ops_s.len() as f64 * r.timeline.interval_ms / 1000.0;
    let x_max = runs.iter().map(|r| seconds(r)).fold(0.0, f64::max).max(0.001);
    let y_max = runs
        .iter()
        .flat_map(|r| r.timeline.interval_ops_s.iter().copied())
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let mut chart = ChartBuilder::on(root)
        .caption(format!("{}: throughput over time", outcome.report.workload), ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc("requests per second")
        .x_label_formatter(&label)
        .y_label_formatter(&label)
        .draw()
        .map_err(err)?;
    for (i, run) in runs.iter().enumerate() {
        let c = color(i);
        let step = run.timeline.interval_ms / 1000.0;
        let points =
            run.timeline.interval_ops_s.iter().enumerate().map(|(j, v)| (j as f64 * step, *v));
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))
            .map_err(err)?
            .label(run.engine.clone())
            .legend(legend_mark(c));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(err)
}

fn comparison<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, outcome: &BenchOutcome) -> Drawn {
    root.fill(&WHITE).map_err(err)?;
    let titled = root
        .titled(&format!("{}: engines compared", outcome.report.workload), ("sans-serif", 22))
        .map_err(err)?;
    let panels = titled.split_evenly((1, 3));
    let summary = &outcome.report.summary;
    let names: Vec<String> = summary.iter().map(|s| s.engine.clone()).collect();
    let metrics: [(&str, Vec<f64>, Vec<f64>); 3] = [
        (
            "throughput (ops/s)",
            summary.iter().map(|s| s.throughput_ops_s).collect(),
            summary.iter().map(|s| s.throughput_ratio).collect(),
        ),
        (
            "p99 latency (us)",
            summary.iter().map(|s| s.all.p99_us).collect(),
            summary.iter().map(|s| s.p99_ratio).collect(),
        ),
        (
            "max latency (us)",
            summary.iter().map(|s| s.all.max_us).collect(),
            summary.iter().map(|s| s.max_ratio).collect(),
        ),
    ];
    for (panel, (title, values, ratios)) in panels.iter().zip(metrics) {
        let n = values.len().max(1);
        let y_max = values.iter().copied().fold(0.0, f64::max).max(1e-9) * 1.2;
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(10)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..n as f64, 0f64..y_max)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&|_| String::new())
            .y_label_formatter(&label)
            .draw()
            .map_err(err)?;
        for (i, (v, ratio)) in values.iter().zip(&ratios).enumerate() {
            let x = i as f64;
            chart
                .draw_series([Rectangle::new([(x + 0.15, 0.0), (x + 0.85, *v)], color(i).filled())])
                .map_err(err)?;
            let text = format!("{} {ratio:.2}x", names[i]);
            let style = ("sans-serif", 15)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            chart.draw_series([Text::new(text, (x + 0.5, *v), style)]).map_err(err)?;
        }
    }
    root.present().map_err(err)
}

macro_rules! both_formats {
    ($dir:expr, $name:expr, $draw:ident, $outcome:expr, $written:expr) => {{
        let png = $dir.join(format!("{}.png", $name));
        let svg = $dir.join(format!("{}.svg", $name));
        $draw(&BitMapBackend::new(&png, CHART_SIZE).into_drawing_area(), $outcome).map_err(
            |e| Error::io(format!("drawing {}", png.display()), std::io::Error::other(e)),
        )?;
        $draw(&SVGBackend::new(&svg, CHART_SIZE).into_drawing_area(), $outcome).map_err(|e| {
            Error::io(format!("drawing {}", svg.display()), std::io::Error::other(e))
        })?;
        $written.push(png);
        $written.push(svg);
    }};
}

/// Writes every chart of `outcome` as PNG and SVG into `dir` (created if missing);
/// returns the files written.
pub fn write_plots(outcome: &BenchOutcome, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    let mut written = Vec::new();
    both_formats!(dir, "latency_over_time", latency_over_time, outcome, written);
    both_formats!(dir, "latency_cdf", latency_cdf, outcome, written);
    both_formats!(dir, "throughput_over_time", throughput_over_time, outcome, written);
    both_formats!(dir, "comparison", comparison, outcome, written);
    Ok(written)
}
