//! The experiment's SVG figures: modeled time per operation against LTU (one per profile,
//! one line per engine, both axes logarithmic) and Figure 6(b), the mean buffer size ADAPT
//! empties at against LTU.

use std::path::{Path, PathBuf};

use lamina_core::{Error, Result};
use plotters::prelude::*;

use super::{Engine, Outcome};

const SIZE: (u32, u32) = (900, 520);
const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

struct Figure {
    title: String,
    y_desc: String,
    lines: Vec<(String, Vec<(f64, f64)>)>,
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

fn range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) =
        values.filter(|v| *v > 0.0).fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if hi <= 0.0 { 0.1..1.0 } else { lo / 1.5..hi * 1.5 }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // plotters passes label values by reference
fn label(v: &f64) -> String {
    if *v >= 10.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

fn draw(path: &Path, fig: &Figure) -> std::result::Result<(), String> {
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let x = range(fig.lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.0)));
    let y = range(fig.lines.iter().flat_map(|(_, p)| p.iter().map(|p| p.1)));
    let mut chart = ChartBuilder::on(&root)
        .caption(&fig.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x.log_scale(), y.log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("lookups per update, LTU (%, log)")
        .y_desc(fig.y_desc.as_str())
        .x_label_formatter(&label)
        .y_label_formatter(&label)
        .draw()
        .map_err(err)?;
    for (i, (name, points)) in fig.lines.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let points: Vec<(f64, f64)> = points.iter().copied().filter(|p| p.1 > 0.0).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 3, c.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Writes the figures into `dir`; returns the files written.
pub fn write_plots(outcomes: &[Outcome], dir: &Path) -> Result<Vec<PathBuf>> {
    let mut profiles: Vec<&'static str> = outcomes.iter().map(|o| o.profile).collect();
    profiles.dedup();
    let mut engines: Vec<Engine> = Vec::new();
    for o in outcomes {
        if !engines.contains(&o.engine) {
            engines.push(o.engine);
        }
    }
    let mut figures = Vec::new();
    for &profile in &profiles {
        let of = |engine: Engine, pick: fn(&Outcome) -> f64| -> Vec<(f64, f64)> {
            outcomes
                .iter()
                .filter(|o| o.profile == profile && o.engine == engine)
                .map(|o| (o.ltu as f64, pick(o)))
                .collect()
        };
        let lines = engines.iter().map(|&e| (e.label().to_owned(), of(e, Outcome::time_us)));
        figures.push((
            format!("latree-table4-{profile}-time"),
            Figure {
                title: format!("Uniform workload, {profile}: modeled time per operation"),
                y_desc: "modeled us per operation (log)".into(),
                lines: lines.collect(),
            },
        ));
        if outcomes.iter().any(|o| o.profile == profile && o.energy_nj > 0) {
            let lines = engines.iter().map(|&e| (e.label().to_owned(), of(e, Outcome::energy_uj)));
            figures.push((
                format!("latree-table4-{profile}-energy"),
                Figure {
                    title: format!("Uniform workload, {profile}: modeled energy per operation"),
                    y_desc: "modeled uJ per operation (log)".into(),
                    lines: lines.collect(),
                },
            ));
        }
    }
    let mut buffer_lines = Vec::new();
    for &profile in &profiles {
        let engine = Engine::LaTree(lamina_latree::adapt::SavingsRule::Paper);
        let pick = |f: fn(&Outcome) -> f64| -> Vec<(f64, f64)> {
            outcomes
                .iter()
                .filter(|o| o.profile == profile && o.engine == engine)
                .map(|o| (o.ltu as f64, f(o)))
                .collect()
        };
        buffer_lines.push((format!("{profile}: root buffer"), pick(Outcome::mean_root_emptied)));
        buffer_lines.push((format!("{profile}: lower buffers"), pick(Outcome::mean_lower_emptied)));
    }
    figures.push((
        "latree-figure6b-buffer-size".into(),
        Figure {
            title: "Figure 6(b): mean buffer size at emptying (latree, paper rule)".into(),
            y_desc: "entries (log)".into(),
            lines: buffer_lines,
        },
    ));
    let mut written = Vec::new();
    for (name, fig) in figures {
        let path = dir.join(format!("{name}.svg"));
        draw(&path, &fig).map_err(|e| {
            Error::io(format!("drawing {}", path.display()), std::io::Error::other(e))
        })?;
        written.push(path);
    }
    Ok(written)
}
