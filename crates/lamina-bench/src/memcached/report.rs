//! The report of a load: JSON (schema [`LOAD_SCHEMA_NAME`], documented in
//! `docs/bench-json.md`) and the printed table.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{config::LoadConfig, run::PhaseOutcome};
use crate::metrics::{LatencyHistogram, LatencySummary};

/// Value of the `schema` field.
pub const LOAD_SCHEMA_NAME: &str = "lamina-bench-memcached";
/// Value of the `schema_version` field.
pub const LOAD_SCHEMA_VERSION: u32 = 1;

/// Replies that were not what the record holds (each counted once).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyErrors {
    /// Gets of a loaded record answered `END` (a miss).
    pub get_misses: u64,
    /// Gets answered with another key, several items, other flags or another value.
    pub get_wrong: u64,
    /// Sets answered `NOT_STORED`, `EXISTS` or `NOT_FOUND`.
    pub set_not_stored: u64,
    /// `ERROR`, `CLIENT_ERROR` or `SERVER_ERROR` replies.
    pub error_replies: u64,
    /// The first of them, described.
    pub first: Option<String>,
}

impl ReplyErrors {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.get_misses + self.get_wrong + self.set_not_stored + self.error_replies
    }

    /// Keeps `describe()` as the first error if there is none yet.
    pub(crate) fn note(&mut self, describe: impl FnOnce() -> String) {
        if self.first.is_none() {
            self.first = Some(describe());
        }
    }

    /// Adds `other`'s counts (its first error if this has none).
    pub(crate) fn add(&mut self, other: &ReplyErrors) {
        self.get_misses += other.get_misses;
        self.get_wrong += other.get_wrong;
        self.set_not_stored += other.set_not_stored;
        self.error_replies += other.error_replies;
        if self.first.is_none() {
            self.first.clone_from(&other.first);
        }
    }

    fn describe(&self) -> String {
        let parts = [
            (self.get_misses, "misses of loaded keys"),
            (self.get_wrong, "wrong get replies"),
            (self.set_not_stored, "sets not stored"),
            (self.error_replies, "error replies"),
        ];
        let counts: Vec<String> =
            parts.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
        format!("{}; first: {}", counts.join(", "), self.first.as_deref().unwrap_or("?"))
    }
}

/// The parameters of a load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadParams {
    /// HOST:PORT.
    pub server: String,
    /// Connections (one client thread each).
    pub connections: usize,
    /// Requests in flight per connection.
    pub pipeline_depth: usize,
    /// Records.
    pub keys: u64,
    /// Key size.
    pub key_bytes: usize,
    /// Value size.
    pub value_bytes: usize,
    /// Phases in order.
    pub phases: Vec<String>,
    /// Requests per get or mixed phase, if bounded by count.
    pub ops: Option<u64>,
    /// Seconds per get or mixed phase, if bounded by time.
    pub duration_s: Option<f64>,
    /// Gets in 100 requests of the mixed phase.
    pub mixed_get_percent: u32,
    /// Seed.
    pub seed: u64,
}

/// One phase's numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseReport {
    /// `set`, `get` or `mixed`.
    pub phase: String,
    /// Requests answered (gets + sets).
    pub requests: u64,
    /// From the start signal to the last reply.
    pub elapsed_s: f64,
    /// `requests / elapsed_s`.
    pub requests_per_s: f64,
    /// Gets answered per second.
    pub gets_per_s: f64,
    /// Sets answered per second.
    pub sets_per_s: f64,
    /// Latency of the gets (count 0 when none).
    pub gets: LatencySummary,
    /// Latency of the sets.
    pub sets: LatencySummary,
    /// Latency of every request.
    pub all: LatencySummary,
    /// Wrong replies.
    pub errors: ReplyErrors,
}

/// A whole load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Always [`LOAD_SCHEMA_NAME`].
    pub schema: String,
    /// [`LOAD_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Version of the tool that wrote it.
    pub tool_version: String,
    /// The parameters.
    pub params: LoadParams,
    /// One entry per phase, in order.
    pub phases: Vec<PhaseReport>,
}

impl LoadReport {
    /// The report of `outcomes`, run with `config`.
    pub fn new(config: &LoadConfig, outcomes: &[PhaseOutcome]) -> Self {
        let phases = outcomes
            .iter()
            .map(|o| {
                let elapsed_s = o.elapsed.as_secs_f64();
                let rate = |n: u64| if elapsed_s > 0.0 { n as f64 / elapsed_s } else { 0.0 };
                let mut all = LatencyHistogram::new();
                all.merge(&o.gets);
                all.merge(&o.sets);
                PhaseReport {
                    phase: o.phase.name().to_string(),
                    requests: o.requests(),
                    elapsed_s,
                    requests_per_s: rate(o.requests()),
                    gets_per_s: rate(o.gets.count()),
                    sets_per_s: rate(o.sets.count()),
                    gets: o.gets.summary(),
                    sets: o.sets.summary(),
                    all: all.summary(),
                    errors: o.errors.clone(),
                }
            })
            .collect();
        LoadReport {
            schema: LOAD_SCHEMA_NAME.to_string(),
            schema_version: LOAD_SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            params: LoadParams {
                server: config.server.clone(),
                connections: config.connections,
                pipeline_depth: config.pipeline_depth,
                keys: config.keys.count(),
                key_bytes: config.keys.key_bytes(),
                value_bytes: config.keys.value_bytes(),
                phases: config.phases.iter().map(|p| p.name().to_string()).collect(),
                ops: config.ops,
                duration_s: config.duration.map(|d| d.as_secs_f64()),
                mixed_get_percent: config.mixed_get_percent,
                seed: config.seed,
            },
            phases,
        }
    }

    /// Wrong replies over every phase.
    pub fn errors_total(&self) -> u64 {
        self.phases.iter().map(|p| p.errors.total()).sum()
    }

    /// One line per phase with errors, empty when every reply was right.
    pub fn error_lines(&self) -> Vec<String> {
        self.phases
            .iter()
            .filter(|p| p.errors.total() > 0)
            .map(|p| format!("phase {}: {}", p.phase, p.errors.describe()))
            .collect()
    }

    /// The printed table: one row per phase and request kind, `all` for a mixed phase.
    pub fn to_table(&self) -> String {
        let p = &self.params;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "memcached load on {}: {} connections, pipeline depth {}, {} records, keys {} B, values {} B",
            p.server, p.connections, p.pipeline_depth, p.keys, p.key_bytes, p.value_bytes
        );
        let _ = writeln!(
            out,
            "{:<6} {:<4} {:>9} {:>8} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
            "phase",
            "req",
            "count",
            "secs",
            "req/s",
            "mean us",
            "p50 us",
            "p99 us",
            "p99.9 us",
            "max us",
            "errors"
        );
        for phase in &self.phases {
            let rows = [
                ("get", &phase.gets, phase.gets_per_s),
                ("set", &phase.sets, phase.sets_per_s),
                ("all", &phase.all, phase.requests_per_s),
            ];
            let kinds = usize::from(phase.gets.count > 0) + usize::from(phase.sets.count > 0);
            let mut errors = Some(phase.errors.total());
            for (name, s, rate) in rows {
                let shown = if name == "all" { kinds > 1 } else { s.count > 0 };
                if !shown {
                    continue;
                }
                let _ = writeln!(
                    out,
                    "{:<6} {:<4} {:>9} {:>8.2} {:>10.0} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.0} {:>7}",
                    phase.phase,
                    name,
                    s.count,
                    phase.elapsed_s,
                    rate,
                    s.mean_us,
                    s.p50_us,
                    s.p99_us,
                    s.p999_us,
                    s.max_us,
                    errors.take().map(|n| n.to_string()).unwrap_or_default(),
                );
            }
        }
        for line in self.error_lines() {
            let _ = writeln!(out, "ERRORS in {line}");
        }
        out
    }
}
