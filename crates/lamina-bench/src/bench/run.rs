//! `run_bench`: every engine in turn, every round, each from an empty directory.

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use lamina_core::{Durability, Error, Result};

use super::{WorkDir, assemble_report, resolve_engines, run_report};
use crate::{
    EngineFactory, EngineParams,
    metrics::{dir_size_bytes, release_free_memory},
    report::{BenchReport, FailedEngine},
    runner::{KindHistograms, RunConfig, RunResult, run_workload},
    workload::{Workload, WorkloadConfig},
};

/// Most rounds.
pub const ROUNDS_MAX: u32 = 100;

/// Everything `lamina bench` needs besides the engines.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchConfig {
    /// Engines to compare, in order (names or aliases); empty: every engine the factory
    /// offers that accepts the parameters (the others are skipped with a note).
    pub engines: Vec<String>,
    /// Rounds.
    pub rounds: u32,
    /// The workload.
    pub workload: WorkloadConfig,
    /// How requests are issued and for how long.
    pub run: RunConfig,
    /// Settings every engine is opened with.
    pub engine_params: EngineParams,
    /// Engine `E` keeps its files in `dir/E` (kept afterwards); `None`: a temporary
    /// directory, removed afterwards unless `keep`.
    pub dir: Option<PathBuf>,
    /// Keep the temporary directory.
    pub keep: bool,
}

impl BenchConfig {
    /// Checks the workload, the run and the rounds.
    pub fn validate(&self) -> Result<()> {
        self.workload.validate()?;
        self.run.validate()?;
        if !(1..=ROUNDS_MAX).contains(&self.rounds) {
            return Err(Error::option(
                "rounds",
                format!("must be 1..={ROUNDS_MAX}, got {}", self.rounds),
            ));
        }
        Ok(())
    }
}

/// The report plus what plots need beyond it.
#[derive(Debug, Clone)]
pub struct BenchOutcome {
    /// The report (JSON and table). `report.failed` lists the engines that failed.
    pub report: BenchReport,
    /// R_p histograms per engine (all rounds merged), in summary order.
    pub histograms: Vec<(String, KindHistograms)>,
    /// Where the engines' files are, if kept.
    pub kept_dir: Option<PathBuf>,
}

/// How `durability` is written in reports and on the command line.
pub fn durability_name(durability: Durability) -> String {
    match durability {
        Durability::Sync => "sync".into(),
        Durability::Buffered { max_delay } => format!("buffered:{}", max_delay.as_millis()),
        Durability::None => "none".into(),
    }
}

/// One engine, one round: open in an empty directory, run `workload`, close. The error
/// says which step failed.
fn run_engine(
    factory: &dyn EngineFactory,
    config: &BenchConfig,
    work: &WorkDir,
    engine: &str,
    workload: Box<dyn Workload>,
    label: &str,
) -> std::result::Result<RunResult, (&'static str, Error)> {
    let read_fraction = config.workload.kind.read_fraction(&config.workload);
    let path = work.fresh(engine).map_err(|e| ("dir", e))?;
    let db = factory.open(engine, &path, &config.engine_params).map_err(|e| ("open", e))?;
    let outcome = run_workload(db.as_ref(), workload, &config.run, read_fraction, &path, label);
    let closed = db.close();
    drop(db);
    let mut result = outcome.map_err(|e| ("run", e))?;
    closed.map_err(|e| ("close", e))?;
    result.disk_peak_bytes = result.disk_peak_bytes.max(dir_size_bytes(&path));
    Ok(result)
}

/// Runs the comparison. `note` receives one-line remarks (skipped and failed engines, kept
/// directories) as they happen.
///
/// Errors are for the comparison as a whole (bad settings, an unknown engine, an unusable
/// `--dir`); an engine that fails (opening, a request, closing) is recorded in
/// `report.failed` with its error, and the other engines run and are reported.
pub fn run_bench(
    factory: &dyn EngineFactory,
    config: &BenchConfig,
    note: &mut dyn FnMut(&str),
) -> Result<BenchOutcome> {
    config.validate()?;
    let (engines, skipped) = resolve_engines(factory, &config.engines, &config.engine_params)?;
    for s in &skipped {
        note(&format!("skipping engine {}: {}", s.engine, s.reason));
    }
    let work = WorkDir::new(config.dir.as_deref(), &engines)?;

    let mut runs = Vec::new();
    let mut failed: Vec<FailedEngine> = Vec::new();
    let mut histograms: BTreeMap<String, KindHistograms> = BTreeMap::new();
    let mut preload = config.workload.preload;
    for round in 1..=config.rounds {
        let order: Vec<&String> =
            if round % 2 == 1 { engines.iter().collect() } else { engines.iter().rev().collect() };
        for engine in order {
            if failed.iter().any(|f| &f.engine == engine) {
                continue; // a failed engine's row is its failure; later rounds skip it
            }
            let label = if config.rounds > 1 {
                format!("{engine} {round}/{}", config.rounds)
            } else {
                engine.clone()
            };
            // The workload is the bench's input, not the engine's: failing to build it (a
            // missing trace) ends the comparison.
            let workload = config.workload.build()?;
            let outcome = run_engine(factory, config, &work, engine, workload, &label);
            release_free_memory(); // the engine is gone: its memory is not the next one's
            match outcome {
                Ok(result) => {
                    preload = result.preloaded_ops;
                    histograms
                        .entry(engine.clone())
                        .or_default()
                        .merge(&result.measurements.processing);
                    runs.push(run_report(engine, round, config.workload.kind.name(), &result));
                }
                Err((step, e)) => {
                    let failure = FailedEngine {
                        engine: engine.clone(),
                        round,
                        step: step.into(),
                        error: e.to_string(),
                    };
                    note(&failure.to_string());
                    failed.push(failure);
                }
            }
        }
    }

    let kept_dir = work.finish(config.keep, note)?;
    let (report, histograms) =
        assemble_report(config, &engines, preload, runs, histograms, skipped, failed);
    Ok(BenchOutcome { report, histograms, kept_dir })
}

/// Default warm-up for `ops` measured requests: 5%, at most 10,000 (FD+FC section 5 warms
/// up with 10K requests).
pub fn default_warmup_ops(ops: Option<u64>) -> u64 {
    ops.map_or(10_000, |ops| (ops / 20).min(10_000))
}

/// Default K for `ops` measured requests: about 500 buckets, at most 10,000 requests each
/// (FD+FC Figure 1's bucket).
pub fn default_bucket_ops(ops: Option<u64>) -> u64 {
    ops.map_or(10_000, |ops| (ops / 500).clamp(1, 10_000))
}

/// The default sampling interval of the throughput timeline.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);
