//! The experiment's SVG figures, after the paper's Figure 7: throughput against the emulated
//! latency, one panel per operation, one figure per thread count (lines: the FPTree with each
//! record layout, and the DRAM baseline); and recovery time against the number of records
//! (the FPTree's open with each layout, and the rebuild from a full log).

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::{PHASES, RecoveryRow, ThroughputRow, layout_name};

const COLORS: [RGBColor; 3] =
    [RGBColor(31, 119, 180), RGBColor(255, 127, 14), RGBColor(44, 160, 44)];

type Line = (String, Vec<(f64, f64)>);

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

fn upper(lines: &[Line]) -> f64 {
    // Headroom above the highest line for the legend.
    lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)).fold(0.0, f64::max) * 1.4
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    x: std::ops::Range<f64>,
    lines: &[Line],
) -> Result<(), String> {
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(x, 0.0..upper(lines).max(1e-9))
        .map_err(err)?;
    chart.configure_mesh().x_desc(x_desc).y_desc(y_desc).draw().map_err(err)?;
    for (i, (name, points)) in lines.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled()))).map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

fn throughput_figure(path: &Path, rows: &[ThroughputRow], threads: usize) -> Result<(), String> {
    let root = SVGBackend::new(path, (1100, 760)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root
        .titled(
            &format!("FPTree vs DRAM BTreeMap, {threads} thread(s) (Figure 7)"),
            ("sans-serif", 22),
        )
        .map_err(err)?;
    let latencies: Vec<f64> = {
        let mut l: Vec<f64> = rows.iter().map(|r| r.latency_ns as f64).collect();
        l.sort_by(f64::total_cmp);
        l.dedup();
        l
    };
    let x = 0.0..latencies.last().copied().unwrap_or(1.0).max(1.0) * 1.05;
    for (phase, area) in root.split_evenly((2, 2)).iter().enumerate() {
        let mine: Vec<&ThroughputRow> =
            rows.iter().filter(|r| r.threads == threads && r.phase == phase).collect();
        let mut lines: Vec<Line> = Vec::new();
        for inline in [true, false] {
            let points: Vec<(f64, f64)> = mine
                .iter()
                .filter(|r| r.inline == inline)
                .map(|r| (r.latency_ns as f64, r.fptree_ops_s / 1e6))
                .collect();
            if !points.is_empty() {
                lines.push((format!("FPTree, {} records", layout_name(inline)), points));
            }
        }
        if let Some(base) = mine.first().map(|r| r.dram_ops_s / 1e6) {
            lines.push(("DRAM BTreeMap".into(), latencies.iter().map(|&l| (l, base)).collect()));
        }
        panel(area, PHASES[phase], "added SCM latency (ns)", "Mops/s", x.clone(), &lines)?;
    }
    root.present().map_err(err)
}

fn recovery_figure(path: &Path, rows: &[RecoveryRow]) -> Result<(), String> {
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut lines: Vec<Line> = Vec::new();
    for inline in [true, false] {
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.inline == inline)
            .map(|r| (r.records as f64 / 1e6, r.open_ms / 1e3))
            .collect();
        if !points.is_empty() {
            lines.push((format!("FPTree open, {} records", layout_name(inline)), points));
        }
    }
    // The rebuild was timed beside each layout's opens: one point per size (the first).
    let mut sizes: Vec<&RecoveryRow> = rows.iter().collect();
    sizes.sort_by_key(|r| r.records);
    sizes.dedup_by_key(|r| r.records);
    let rebuild: Vec<(f64, f64)> =
        sizes.iter().map(|r| (r.records as f64 / 1e6, r.rebuild_ms / 1e3)).collect();
    lines.push(("rebuild from a full log (DRAM BTreeMap)".into(), rebuild));
    let x_max = rows.iter().map(|r| r.records as f64 / 1e6).fold(0.0, f64::max) * 1.05;
    panel(
        &root,
        "Recovery: FPTree open vs full rebuild (Figure 7, right)",
        "records (millions)",
        "seconds",
        0.0..x_max.max(1.0),
        &lines,
    )?;
    root.present().map_err(err)
}

/// Writes the figures into `dir`; returns the files written.
pub fn write_plots(
    dir: &Path,
    throughput: &[ThroughputRow],
    recovery: &[RecoveryRow],
) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut written = Vec::new();
    let mut threads: Vec<usize> = throughput.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    for t in threads {
        let path = dir.join(format!("fptree-figure7-{t}thread.svg"));
        throughput_figure(&path, throughput, t)?;
        written.push(path);
    }
    if !recovery.is_empty() {
        let path = dir.join("fptree-figure7-recovery.svg");
        recovery_figure(&path, recovery)?;
        written.push(path);
    }
    Ok(written)
}
