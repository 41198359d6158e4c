//! The JSON report, schema `lamina-bench` version [`SCHEMA_VERSION`]. Documented field by
//! field in `docs/bench-json.md`; any change that removes or renames a field, or changes
//! its meaning or unit, bumps the version (adding a field does not).

use std::collections::BTreeMap;

use lamina_core::IoStats;
use serde::{Deserialize, Serialize};

use crate::metrics::LatencySummary;

/// Value of the `schema` field.
pub const SCHEMA_NAME: &str = "lamina-bench";
/// Value of the `schema_version` field.
pub const SCHEMA_VERSION: u32 = 2;

/// A whole `lamina bench` invocation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Always [`SCHEMA_NAME`].
    pub schema: String,
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Version of the tool that wrote it.
    pub tool_version: String,
    /// Workload name.
    pub workload: String,
    /// Every parameter of the run.
    pub params: BenchParams,
    /// One entry per (engine, round), in execution order.
    pub runs: Vec<RunReport>,
    /// One entry per engine, in `--engines` order, with ratios to the first.
    pub summary: Vec<EngineSummary>,
    /// Engines left out, and why.
    pub skipped: Vec<SkippedEngine>,
    /// Engines that failed (an error from opening, a request, closing): each has no
    /// `summary` entry, is not run in later rounds, and makes `lamina bench` exit non-zero
    /// after every report is written; their completed runs stay in `runs`. Empty (absent)
    /// in reports written before it was added.
    #[serde(default)]
    pub failed: Vec<FailedEngine>,
}

/// The parameters a report was produced with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchParams {
    /// Workload name.
    pub workload: String,
    /// Seed of the generators.
    pub seed: u64,
    /// Preload requests (`--preload`; tpcc's is derived from `warehouses`).
    pub preload: u64,
    /// Measured requests, if bounded by count.
    pub ops: Option<u64>,
    /// Measured seconds, if bounded by time.
    pub duration_s: Option<f64>,
    /// Requests before measurement.
    pub warmup_ops: u64,
    /// Key size.
    pub key_bytes: usize,
    /// Value size.
    pub value_bytes: usize,
    /// gr: normalized lookup, insert, delete proportions.
    pub mix: Option<[f64; 3]>,
    /// tpcc: warehouses.
    pub warehouses: Option<u32>,
    /// ltu: lookups per 100 updates.
    pub ltu_percent: Option<f64>,
    /// replay: trace file.
    pub trace: Option<String>,
    /// `closed` or `open`.
    pub runner: String,
    /// closed: client threads.
    pub threads: Option<usize>,
    /// open: T_r.
    pub readers: Option<usize>,
    /// open: T_w.
    pub writers: Option<usize>,
    /// open: arrival rate v of the R_o schedule.
    pub rate_ops_s: Option<f64>,
    /// open: |Q_r| + |Q_w|.
    pub queue_slots: Option<usize>,
    /// `sync`, `buffered:<ms>` or `none`.
    pub durability: String,
    /// Device profile, if any.
    pub device: Option<String>,
    /// Whether the device profile was imposed.
    pub emulate: bool,
    /// Engines' memory budget (L_0, buffers), bytes (0 in reports written before it was
    /// added).
    #[serde(default)]
    pub memory_budget_bytes: u64,
    /// Engines' block cache, bytes (0 in older reports).
    #[serde(default)]
    pub cache_bytes: u64,
    /// FD+tree size ratio gamma, if set (else the engine's default).
    #[serde(default)]
    pub fdtree_size_ratio: Option<u32>,
    /// FD+tree's longest key, if set (else the API limit).
    #[serde(default)]
    pub fdtree_key_bytes_max: Option<usize>,
    /// NB-tree fanout `f`, if set (else the engine's default).
    #[serde(default)]
    pub nbtree_fanout: Option<u32>,
    /// Engines compared, in order.
    pub engines: Vec<String>,
    /// Rounds (engine order alternates between rounds).
    pub rounds: u32,
    /// K of `timeline.bucket_max_us`.
    pub bucket_ops: u64,
    /// Interval of `timeline.interval_*`, milliseconds.
    pub interval_ms: u64,
}

/// One engine, one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// Engine name.
    pub engine: String,
    /// Round number, from 1.
    pub round: u32,
    /// Workload name.
    pub workload: String,
    /// Preload requests applied (unmeasured).
    pub preload_ops: u64,
    /// Measured requests.
    pub measured_ops: u64,
    /// Seconds from the first measured request to the last completion.
    pub elapsed_s: f64,
    /// `measured_ops / elapsed_s`.
    pub throughput_ops_s: f64,
    /// Latency (R_p) per operation type.
    pub ops: BTreeMap<String, LatencySummary>,
    /// Latency (R_p) of all types together.
    pub all: LatencySummary,
    /// open runner: R_q per type.
    pub queued: Option<BTreeMap<String, LatencySummary>>,
    /// open runner: R_o per type.
    pub overall: Option<BTreeMap<String, LatencySummary>>,
    /// I/O counts of the measured phase (warm-up included).
    pub io: IoReport,
    /// User bytes written in the measured phase (the engine's count, else the bench's).
    pub user_bytes_written: u64,
    /// `io.bytes_written / user_bytes_written`; 0 when either is unknown.
    pub write_amplification: f64,
    /// Modeled device time of the measured phase, seconds.
    pub modeled_device_s: f64,
    /// Largest disk footprint (allocated bytes of the directory, sampled every 50 ms, and
    /// after close).
    pub disk_peak_bytes: u64,
    /// Median of the disk samples: the steady-state footprint (0 in reports written before
    /// it was added).
    #[serde(default)]
    pub disk_median_bytes: u64,
    /// Largest resident set of the process during the run.
    pub rss_peak_bytes: u64,
    /// Engine-specific counters at the end of the run.
    pub engine_stats: BTreeMap<String, u64>,
    /// Latency and throughput over time.
    pub timeline: TimelineReport,
}

/// [`IoStats`] as reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[allow(missing_docs)] // field for field the documented IoStats
pub struct IoReport {
    pub reads_sequential: u64,
    pub reads_random: u64,
    pub writes_sequential: u64,
    pub writes_random: u64,
    pub blocks_read: u64,
    pub blocks_written: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub syncs: u64,
    pub files_created: u64,
    pub files_deleted: u64,
    pub live_bytes: u64,
    pub live_bytes_peak: u64,
    pub modeled_device_ns: u64,
    #[serde(default)]
    pub punches: u64,
    #[serde(default)]
    pub bytes_punched: u64,
}

impl From<&IoStats> for IoReport {
    fn from(io: &IoStats) -> Self {
        IoReport {
            reads_sequential: io.reads_sequential,
            reads_random: io.reads_random,
            writes_sequential: io.writes_sequential,
            writes_random: io.writes_random,
            blocks_read: io.blocks_read,
            blocks_written: io.blocks_written,
            bytes_read: io.bytes_read,
            bytes_written: io.bytes_written,
            syncs: io.syncs,
            files_created: io.files_created,
            files_deleted: io.files_deleted,
            live_bytes: io.live_bytes,
            live_bytes_peak: io.live_bytes_peak,
            modeled_device_ns: io.modeled_device_ns,
            punches: io.punches,
            bytes_punched: io.bytes_punched,
        }
    }
}

/// Time series of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineReport {
    /// K: requests per bucket.
    pub bucket_ops: u64,
    /// Largest R_p of each bucket of K consecutive requests (FD+FC Figure 1), microseconds.
    pub bucket_max_us: Vec<f64>,
    /// Mean R_p of each bucket, microseconds (0 for an empty bucket; absent in reports
    /// written before it was added).
    #[serde(default)]
    pub bucket_mean_us: Vec<f64>,
    /// Interval length, milliseconds.
    pub interval_ms: f64,
    /// Completions per second in each interval.
    pub interval_ops_s: Vec<f64>,
    /// Largest R_p completed in each interval, microseconds.
    pub interval_max_us: Vec<f64>,
}

/// One engine across its rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineSummary {
    /// Engine name.
    pub engine: String,
    /// Rounds run.
    pub rounds: u32,
    /// Mean throughput over the rounds.
    pub throughput_ops_s: f64,
    /// `throughput_ops_s` over the first engine's (higher is better).
    pub throughput_ratio: f64,
    /// Latency of all requests of all rounds.
    pub all: LatencySummary,
    /// `all.p99_us` over the first engine's (lower is better).
    pub p99_ratio: f64,
    /// `all.p9999_us` over the first engine's.
    pub p9999_ratio: f64,
    /// `all.max_us` over the first engine's.
    pub max_ratio: f64,
    /// Mean write amplification over the rounds.
    pub write_amplification: f64,
    /// Largest disk footprint of any round.
    pub disk_peak_bytes: u64,
    /// Largest resident set of any round.
    pub rss_peak_bytes: u64,
}

/// An engine that was not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedEngine {
    /// Engine name.
    pub engine: String,
    /// Why.
    pub reason: String,
}

/// An engine that returned an error: the benchmark recorded it and went on with the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedEngine {
    /// Engine name.
    pub engine: String,
    /// Round in which it failed, from 1.
    pub round: u32,
    /// What the bench was doing: `dir` (preparing its directory), `open`, `run` (preload
    /// or requests), `close`; the `scale` experiment adds `reopen` and `verify`.
    pub step: String,
    /// The error, as the engine (or the bench) reported it.
    pub error: String,
}

impl std::fmt::Display for FailedEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed in round {} ({}): {}", self.engine, self.round, self.step, self.error)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn summary(x: f64) -> LatencySummary {
        LatencySummary {
            count: 3,
            mean_us: x,
            stddev_us: 0.5,
            min_us: 0.25,
            p50_us: x,
            p90_us: x,
            p99_us: 2.0 * x,
            p999_us: 4.0 * x,
            p9999_us: 8.0 * x,
            max_us: 16.0 * x,
        }
    }

    pub(crate) fn sample_report() -> BenchReport {
        let mut ops = BTreeMap::new();
        ops.insert("get".to_string(), summary(1.5));
        ops.insert("put".to_string(), summary(2.5));
        let run = RunReport {
            engine: "mem".into(),
            round: 1,
            workload: "contest".into(),
            preload_ops: 10,
            measured_ops: 6,
            elapsed_s: 0.5,
            throughput_ops_s: 12.0,
            ops: ops.clone(),
            all: summary(2.0),
            queued: Some(ops.clone()),
            overall: None,
            io: IoReport { bytes_written: 4096, syncs: 2, ..IoReport::default() },
            user_bytes_written: 1024,
            write_amplification: 4.0,
            modeled_device_s: 0.0,
            disk_peak_bytes: 1 << 20,
            disk_median_bytes: 1 << 19,
            rss_peak_bytes: 1 << 24,
            engine_stats: [("merges".to_string(), 3)].into_iter().collect(),
            timeline: TimelineReport {
                bucket_ops: 2,
                bucket_max_us: vec![1.5, 2.5, 0.0],
                bucket_mean_us: vec![1.0, 2.0, 0.0],
                interval_ms: 100.0,
                interval_ops_s: vec![60.0],
                interval_max_us: vec![2.5],
            },
        };
        BenchReport {
            schema: SCHEMA_NAME.into(),
            schema_version: SCHEMA_VERSION,
            tool_version: "0.1.0".into(),
            workload: "contest".into(),
            params: BenchParams {
                workload: "contest".into(),
                seed: 42,
                preload: 10,
                ops: Some(6),
                duration_s: None,
                warmup_ops: 0,
                key_bytes: 8,
                value_bytes: 8,
                mix: Some([0.5, 0.25, 0.25]),
                warehouses: None,
                ltu_percent: None,
                trace: None,
                runner: "closed".into(),
                threads: Some(4),
                memory_budget_bytes: 4 << 20,
                cache_bytes: 15 << 20,
                fdtree_size_ratio: Some(24),
                fdtree_key_bytes_max: Some(256),
                nbtree_fanout: Some(3),
                readers: None,
                writers: None,
                rate_ops_s: None,
                queue_slots: None,
                durability: "none".into(),
                device: None,
                emulate: false,
                engines: vec!["mem".into()],
                rounds: 1,
                bucket_ops: 2,
                interval_ms: 100,
            },
            summary: vec![EngineSummary {
                engine: "mem".into(),
                rounds: 1,
                throughput_ops_s: 12.0,
                throughput_ratio: 1.0,
                all: summary(2.0),
                p99_ratio: 1.0,
                p9999_ratio: 1.0,
                max_ratio: 1.0,
                write_amplification: 4.0,
                disk_peak_bytes: 1 << 20,
                rss_peak_bytes: 1 << 24,
            }],
            runs: vec![run],
            skipped: vec![SkippedEngine { engine: "x".into(), reason: "unsupported".into() }],
            failed: vec![FailedEngine {
                engine: "y".into(),
                round: 1,
                step: "open".into(),
                error: "no space left: y.db".into(),
            }],
        }
    }

    #[test]
    fn json_roundtrip() {
        let report = sample_report();
        let text = serde_json::to_string_pretty(&report).unwrap();
        let back: BenchReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(serde_json::to_string_pretty(&back).unwrap(), text);
    }

    #[test]
    fn json_has_the_documented_fields() {
        let value = serde_json::to_value(sample_report()).unwrap();
        assert_eq!(value["schema"], SCHEMA_NAME);
        assert_eq!(value["schema_version"], SCHEMA_VERSION);
        let run = &value["runs"][0];
        for field in [
            "engine",
            "workload",
            "throughput_ops_s",
            "io",
            "write_amplification",
            "disk_peak_bytes",
            "disk_median_bytes",
            "rss_peak_bytes",
        ] {
            assert!(!run[field].is_null(), "runs[0].{field} missing");
        }
        for field in
            ["count", "mean_us", "stddev_us", "p50_us", "p99_us", "p999_us", "p9999_us", "max_us"]
        {
            assert!(run["ops"]["get"][field].is_number(), "ops.get.{field} missing");
        }
        assert!(value["params"]["seed"].is_number());
        let failed = &value["failed"][0];
        for field in ["engine", "round", "step", "error"] {
            assert!(!failed[field].is_null(), "failed[0].{field} missing");
        }
        // Reports written before `failed` existed still read.
        let mut old = value.clone();
        old.as_object_mut().unwrap().remove("failed");
        let back: BenchReport = serde_json::from_value(old).unwrap();
        assert!(back.failed.is_empty());
    }
}
