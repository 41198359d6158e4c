//! The human report: db_bench-style lines per run and operation type, then the
//! side-by-side comparison with ratios to the first engine.

use std::{collections::BTreeMap, fmt::Write};

use super::{BenchReport, RunReport};
use crate::{OpKind, metrics::LatencySummary};

fn fmt_us(us: f64) -> String {
    if us >= 100.0 {
        format!("{us:.0}")
    } else if us >= 10.0 {
        format!("{us:.1}")
    } else {
        format!("{us:.2}")
    }
}

/// `bytes` in B, KiB, MiB, ... with one decimal.
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

fn op_line(out: &mut String, label: &str, s: &LatencySummary, elapsed_s: f64) {
    let ops_s = if elapsed_s > 0.0 { s.count as f64 / elapsed_s } else { 0.0 };
    let _ = writeln!(
        out,
        "  {label:<8}: {:>9.3} micros/op {ops_s:>10.0} ops/sec; count {}; stddev {} us; p50 {} us; p99 {} us; p99.9 {} us; p99.99 {} us; max {} us",
        s.mean_us,
        s.count,
        fmt_us(s.stddev_us),
        fmt_us(s.p50_us),
        fmt_us(s.p99_us),
        fmt_us(s.p999_us),
        fmt_us(s.p9999_us),
        fmt_us(s.max_us),
    );
}

/// Visits `ops` in API order (get, put, delete, cas, scan, rmw), then any other name.
fn for_each_kind(
    ops: &BTreeMap<String, LatencySummary>,
    mut visit: impl FnMut(&str, &LatencySummary),
) {
    for kind in OpKind::ALL {
        if let Some(s) = ops.get(kind.name()) {
            visit(kind.name(), s);
        }
    }
    for (name, s) in ops {
        if !OpKind::ALL.iter().any(|k| k.name() == name) {
            visit(name, s);
        }
    }
}

fn latency_block(
    out: &mut String,
    title: &str,
    ops: &BTreeMap<String, LatencySummary>,
    elapsed_s: f64,
) {
    let _ = writeln!(out, "  {title}");
    for_each_kind(ops, |kind, s| op_line(out, kind, s, elapsed_s));
}

fn run_block(out: &mut String, run: &RunReport) {
    let _ = writeln!(
        out,
        "{} (round {}): {} ops in {:.3} s, {:.0} ops/sec",
        run.engine, run.round, run.measured_ops, run.elapsed_s, run.throughput_ops_s
    );
    for_each_kind(&run.ops, |kind, s| op_line(out, kind, s, run.elapsed_s));
    if let Some(queued) = &run.queued {
        latency_block(out, "R_q (processing + queueing):", queued, run.elapsed_s);
    }
    if let Some(overall) = &run.overall {
        latency_block(
            out,
            "R_o (R_q + lateness against the arrival schedule):",
            overall,
            run.elapsed_s,
        );
    }
    let io = &run.io;
    let _ = writeln!(
        out,
        "  io: {} reads ({} random), {} writes ({} random), {} read, {} written, {} syncs; write-amp {:.2}; modeled device {:.3} s; disk peak {}; rss peak {}",
        io.reads_sequential + io.reads_random,
        io.reads_random,
        io.writes_sequential + io.writes_random,
        io.writes_random,
        fmt_bytes(io.bytes_read),
        fmt_bytes(io.bytes_written),
        io.syncs,
        run.write_amplification,
        run.modeled_device_s,
        fmt_bytes(run.disk_peak_bytes),
        fmt_bytes(run.rss_peak_bytes),
    );
}

/// The whole human report: a header, each run, and the comparison.
pub fn render_table(report: &BenchReport) -> String {
    let p = &report.params;
    let mut out = String::new();
    let amount = match (p.ops, p.duration_s) {
        (Some(ops), _) => format!("{ops} ops"),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => "?".into(),
    };
    let runner = match p.runner.as_str() {
        "open" => format!(
            "open system, T_r {} T_w {}{}",
            p.readers.unwrap_or(0),
            p.writers.unwrap_or(0),
            p.rate_ops_s.map(|r| format!(", rate {r} ops/s")).unwrap_or_default()
        ),
        _ => {
            let threads = p.threads.unwrap_or(1);
            format!("closed loop, {threads} thread{}", if threads == 1 { "" } else { "s" })
        }
    };
    let _ = writeln!(
        out,
        "lamina bench: workload {}, {amount} (+{} warm-up), preload {}, {runner}, keys {} B, values {} B, durability {}, seed {}",
        p.workload, p.warmup_ops, p.preload, p.key_bytes, p.value_bytes, p.durability, p.seed
    );
    for skipped in &report.skipped {
        let _ = writeln!(out, "skipped {}: {}", skipped.engine, skipped.reason);
    }
    for failed in &report.failed {
        let _ = writeln!(out, "FAILED: {failed}");
    }
    out.push_str(&"-".repeat(100));
    out.push('\n');
    for run in &report.runs {
        run_block(&mut out, run);
    }
    out.push_str(&render_comparison(report));
    out
}

/// The side-by-side table: one line per engine in `--engines` order, with ratios to the
/// first engine that did not fail; a failed engine's line is its error.
pub fn render_comparison(report: &BenchReport) -> String {
    let mut out = String::new();
    if report.summary.is_empty() && report.failed.is_empty() {
        return out;
    }
    out.push_str(&"-".repeat(100));
    out.push('\n');
    match report.summary.first() {
        Some(first) => {
            let _ = writeln!(
                out,
                "comparison (ratios to {}; throughput: higher is better, latency: lower is better)",
                first.engine
            );
        }
        None => out.push_str("comparison: every engine failed\n"),
    }
    // The engine column fits the longest name, so the columns stay aligned.
    let name_width = report.params.engines.iter().map(String::len).max().unwrap_or(0).max(6);
    let _ = writeln!(
        out,
        "{:<name_width$} {:>12} {:>7} {:>10} {:>10} {:>7} {:>11} {:>7} {:>10} {:>7} {:>8} {:>11} {:>11}",
        "engine",
        "ops/sec",
        "ratio",
        "mean us",
        "p99 us",
        "ratio",
        "p99.99 us",
        "ratio",
        "max us",
        "ratio",
        "w-amp",
        "disk peak",
        "rss peak"
    );
    for engine in &report.params.engines {
        let Some(s) = report.summary.iter().find(|s| &s.engine == engine) else {
            if let Some(f) = report.failed.iter().find(|f| &f.engine == engine) {
                let _ = writeln!(
                    out,
                    "{engine:<name_width$} FAILED in round {} ({}): {}",
                    f.round, f.step, f.error
                );
            }
            continue;
        };
        let _ = writeln!(
            out,
            "{:<name_width$} {:>12.0} {:>7.2} {:>10} {:>10} {:>7.2} {:>11} {:>7.2} {:>10} {:>7.2} {:>8.2} {:>11} {:>11}",
            s.engine,
            s.throughput_ops_s,
            s.throughput_ratio,
            fmt_us(s.all.mean_us),
            fmt_us(s.all.p99_us),
            s.p99_ratio,
            fmt_us(s.all.p9999_us),
            s.p9999_ratio,
            fmt_us(s.all.max_us),
            s.max_ratio,
            s.write_amplification,
            fmt_bytes(s.disk_peak_bytes),
            fmt_bytes(s.rss_peak_bytes),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::schema::tests::sample_report;

    #[test]
    fn table_has_db_bench_lines_and_comparison() {
        let text = render_table(&sample_report());
        assert!(text.contains("get     :"), "{text}");
        assert!(text.contains("micros/op"), "{text}");
        assert!(text.contains("ops/sec"), "{text}");
        assert!(text.contains("comparison (ratios to mem"), "{text}");
        assert!(text.contains("R_q"), "{text}");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
    }

    #[test]
    fn failed_engines_get_a_row_with_their_error_in_engine_order() {
        let mut report = sample_report();
        report.params.engines = vec!["y".into(), "mem".into()];
        let text = render_comparison(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[3].starts_with("y      FAILED in round 1 (open): no space left: y.db"),
            "{text}"
        );
        assert!(lines[4].starts_with("mem "), "{text}");
        assert!(render_table(&report).contains("FAILED: y failed in round 1 (open)"));
        report.summary.clear();
        assert!(render_comparison(&report).contains("every engine failed"));
    }
}
