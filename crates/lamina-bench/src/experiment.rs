//! `--experiment NAME`: scaled-down reproductions of the papers' headline experiments.
//!
//! - `fdfc-figure1`: FD+FC Figure 1, "completion time of an insertion request ... over
//!   the course of two million insertions, starting with an empty index ... grouped into
//!   buckets each containing 10,000 requests; we plot the longest observed time per
//!   request in each bucket". Scaled down: 200,000 uniform random inserts (the `insert`
//!   workload), one thread, buckets of 1,000.
//! - `contest`: the SIGMOD 2011 contest mix (prefix-tree paper, section 4, Table 1) with
//!   4 client threads (32 in the paper) over 100,000 preloaded sequential keys,
//!   200,000 requests.

use std::{fmt, str::FromStr};

use lamina_core::{Error, Result};

use crate::{WorkloadConfig, WorkloadKind, runner::RunnerKind};

/// A named experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// FD+FC Figure 1: max insert latency per bucket.
    FdfcFigure1,
    /// SIGMOD 2011 contest mix.
    Contest,
}

/// What an experiment fixes; the caller's explicit flags for `ops`, seed, engines and
/// durability still apply.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentPlan {
    /// The workload.
    pub workload: WorkloadConfig,
    /// The runner.
    pub runner: RunnerKind,
    /// Measured requests unless overridden.
    pub ops: u64,
    /// K of the max-latency series.
    pub bucket_ops: u64,
    /// Warm-up requests.
    pub warmup_ops: u64,
}

impl Experiment {
    /// Every experiment.
    pub const ALL: [Experiment; 2] = [Experiment::FdfcFigure1, Experiment::Contest];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::FdfcFigure1 => "fdfc-figure1",
            Experiment::Contest => "contest",
        }
    }

    /// The experiment's settings with `seed`.
    pub fn plan(self, seed: u64) -> ExperimentPlan {
        match self {
            Experiment::FdfcFigure1 => ExperimentPlan {
                workload: WorkloadConfig {
                    preload: 0,
                    ..WorkloadConfig::new(WorkloadKind::Insert, seed)
                },
                runner: RunnerKind::Closed { threads: 1 },
                ops: 200_000,
                bucket_ops: 1_000,
                warmup_ops: 0, // the figure starts from an empty index
            },
            Experiment::Contest => ExperimentPlan {
                workload: WorkloadConfig {
                    preload: 100_000,
                    ..WorkloadConfig::new(WorkloadKind::Contest, seed)
                },
                runner: RunnerKind::Closed { threads: 4 },
                ops: 200_000,
                bucket_ops: 1_000,
                warmup_ops: 10_000,
            },
        }
    }
}

impl fmt::Display for Experiment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Experiment {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Experiment::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
            let names: Vec<_> = Experiment::ALL.iter().map(|e| e.name()).collect();
            Error::option(
                "experiment",
                format!("unknown experiment `{s}`; known: {}", names.join(", ")),
            )
        })
    }
}
