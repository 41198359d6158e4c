//! What a load against a memcached-protocol server does, with its defaults and limits.

use std::{fmt, str::FromStr, time::Duration};

use lamina_core::{Error, Result};

use super::keys::KeySpace;

/// Connections (one client thread each) by default.
pub const DEFAULT_CONNECTIONS: usize = 8;
/// Most connections.
pub const CONNECTIONS_MAX: usize = 1024;
/// Requests in flight per connection by default: one, so latency is a request's own.
pub const DEFAULT_PIPELINE_DEPTH: usize = 1;
/// Most requests in flight per connection.
pub const PIPELINE_DEPTH_MAX: usize = 1024;
/// Records by default.
pub const DEFAULT_KEY_COUNT: u64 = 100_000;
/// Key size by default.
pub const DEFAULT_KEY_BYTES: usize = 16;
/// Value size by default (small cache items, as in memcached's own benchmarks).
pub const DEFAULT_VALUE_BYTES: usize = 100;
/// Gets in 100 requests of the mixed phase by default.
pub const DEFAULT_MIXED_GET_PERCENT: u32 = 90;
/// How long a connection waits on one read or write before the load fails.
pub const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest phase when bounded by time.
pub const PHASE_DURATION_MAX: Duration = Duration::from_hours(24);

/// A phase of the load, run in the order given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Every record set once, the records split between the connections.
    Set,
    /// Gets of uniformly random records.
    Get,
    /// Gets and sets of uniformly random records (`mixed_get_percent` gets).
    Mixed,
}

impl Phase {
    /// Every phase, in the default order.
    pub const ALL: [Phase; 3] = [Phase::Set, Phase::Get, Phase::Mixed];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Set => "set",
            Phase::Get => "get",
            Phase::Mixed => "mixed",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Phase {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        Phase::ALL.into_iter().find(|p| p.name() == text).ok_or_else(|| {
            Error::option("phases", format!("unknown phase `{text}`: expected set, get or mixed"))
        })
    }
}

/// A whole load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadConfig {
    /// HOST:PORT of the server.
    pub server: String,
    /// Connections, each driven by its own client thread.
    pub connections: usize,
    /// Requests a connection writes before reading their replies.
    pub pipeline_depth: usize,
    /// The records: count, key and value sizes, seed.
    pub keys: KeySpace,
    /// The phases, in order.
    pub phases: Vec<Phase>,
    /// Requests of each get and mixed phase (the set phase always sets every record once).
    pub ops: Option<u64>,
    /// Or: length of each get and mixed phase.
    pub duration: Option<Duration>,
    /// Percent of the mixed phase's requests that are gets.
    pub mixed_get_percent: u32,
    /// Seed of the random record choices (the keys' own seed is in `keys`).
    pub seed: u64,
    /// How long one read or write may wait.
    pub reply_timeout: Duration,
}

impl LoadConfig {
    /// The defaults against `server`: 8 connections, pipeline depth 1, 100,000 records of
    /// 16-byte keys and 100-byte values, phases set, get, mixed (90% gets), 100,000 requests
    /// in each of get and mixed.
    pub fn new(server: impl Into<String>) -> Self {
        LoadConfig {
            server: server.into(),
            connections: DEFAULT_CONNECTIONS,
            pipeline_depth: DEFAULT_PIPELINE_DEPTH,
            keys: KeySpace::new(DEFAULT_KEY_COUNT, DEFAULT_KEY_BYTES, DEFAULT_VALUE_BYTES, 42)
                .expect("the defaults are valid"),
            phases: Phase::ALL.to_vec(),
            ops: Some(100_000),
            duration: None,
            mixed_get_percent: DEFAULT_MIXED_GET_PERCENT,
            seed: 42,
            reply_timeout: DEFAULT_REPLY_TIMEOUT,
        }
    }

    /// Refuses out-of-range or contradictory settings, naming the option.
    pub fn validate(&self) -> Result<()> {
        if self.server.is_empty() {
            return Err(Error::option("server", "give HOST:PORT"));
        }
        if !(1..=CONNECTIONS_MAX).contains(&self.connections) {
            return Err(Error::option(
                "connections",
                format!("must be 1..={CONNECTIONS_MAX}, got {}", self.connections),
            ));
        }
        if !(1..=PIPELINE_DEPTH_MAX).contains(&self.pipeline_depth) {
            return Err(Error::option(
                "pipeline",
                format!("must be 1..={PIPELINE_DEPTH_MAX}, got {}", self.pipeline_depth),
            ));
        }
        if self.phases.is_empty() {
            return Err(Error::option("phases", "give at least one of set, get, mixed"));
        }
        match (self.ops, self.duration) {
            (Some(0), _) => return Err(Error::option("ops", "must be at least 1")),
            (Some(_), Some(_)) => {
                return Err(Error::option("duration", "give --ops or --duration, not both"));
            }
            (None, None) => return Err(Error::option("ops", "give --ops or --duration")),
            (None, Some(d)) if d.is_zero() || d > PHASE_DURATION_MAX => {
                return Err(Error::option("duration", "must be more than 0 and at most a day"));
            }
            _ => {}
        }
        if self.mixed_get_percent > 100 {
            return Err(Error::option(
                "get-percent",
                format!("must be 0..=100, got {}", self.mixed_get_percent),
            ));
        }
        if self.reply_timeout.is_zero() {
            return Err(Error::option("reply-timeout", "must be more than 0"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_limits_refused() {
        let ok = LoadConfig::new("127.0.0.1:11211");
        ok.validate().unwrap();
        let refused = |change: &dyn Fn(&mut LoadConfig), fragment: &str| {
            let mut c = ok.clone();
            change(&mut c);
            let err = c.validate().unwrap_err().to_string();
            assert!(err.contains(fragment), "{err}");
        };
        refused(&|c| c.connections = 0, "connections");
        refused(&|c| c.connections = CONNECTIONS_MAX + 1, "connections");
        refused(&|c| c.pipeline_depth = 0, "pipeline");
        refused(&|c| c.phases.clear(), "phases");
        refused(&|c| c.ops = Some(0), "ops");
        refused(&|c| c.duration = Some(Duration::from_secs(1)), "not both");
        refused(&|c| c.ops = None, "give --ops or --duration");
        refused(
            &|c| {
                c.ops = None;
                c.duration = Some(Duration::ZERO);
            },
            "duration",
        );
        refused(&|c| c.mixed_get_percent = 101, "get-percent");
        refused(&|c| c.server.clear(), "server");
        assert_eq!("mixed".parse::<Phase>().unwrap(), Phase::Mixed);
        assert!("load".parse::<Phase>().unwrap_err().to_string().contains("unknown phase"));
    }
}
