//! `--csv-timeline`: every run's time series in one long-format CSV,
//! `engine,round,series,x,y`, with series
//! - `bucket_max_us`: x = index of the bucket's first measured request, y = its largest
//!   latency in microseconds (FD+FC Figure 1);
//! - `interval_ops_s`: x = seconds since the measurement started, y = requests per second;
//! - `interval_max_us`: x = seconds, y = largest latency completed in the interval.

use std::{fmt::Write, path::Path};

use lamina_core::{Error, Result};

use super::BenchReport;

/// The CSV text.
pub fn timeline_csv(report: &BenchReport) -> String {
    let mut out = String::from("engine,round,series,x,y\n");
    for run in &report.runs {
        let t = &run.timeline;
        for (i, y) in t.bucket_max_us.iter().enumerate() {
            let _ = writeln!(
                out,
                "{},{},bucket_max_us,{},{y}",
                run.engine,
                run.round,
                i as u64 * t.bucket_ops
            );
        }
        for (i, y) in t.interval_ops_s.iter().enumerate() {
            let _ = writeln!(
                out,
                "{},{},interval_ops_s,{},{y}",
                run.engine,
                run.round,
                i as f64 * t.interval_ms / 1000.0
            );
        }
        for (i, y) in t.interval_max_us.iter().enumerate() {
            let _ = writeln!(
                out,
                "{},{},interval_max_us,{},{y}",
                run.engine,
                run.round,
                i as f64 * t.interval_ms / 1000.0
            );
        }
    }
    out
}

/// Writes [`timeline_csv`] to `path`.
pub fn write_timeline_csv(report: &BenchReport, path: &Path) -> Result<()> {
    std::fs::write(path, timeline_csv(report))
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::schema::tests::sample_report;

    #[test]
    fn long_format_rows() {
        let text = timeline_csv(&sample_report());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "engine,round,series,x,y");
        assert_eq!(lines[1], "mem,1,bucket_max_us,0,1.5");
        assert_eq!(lines[2], "mem,1,bucket_max_us,2,2.5");
        assert!(lines.contains(&"mem,1,interval_ops_s,0,60"));
        assert_eq!(lines.len(), 1 + 3 + 1 + 1);
    }
}
