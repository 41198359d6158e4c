//! Runs `scale`: per engine and round, one store through every phase, then close and a
//! timed reopen that must find a sample of the keys.

use std::{collections::BTreeMap, fmt::Write as _, time::Instant};

use lamina_core::{Error, OrderedIndex, Result};
use serde::{Deserialize, Serialize};

use super::keys::ScaleKeys;
use crate::{
    BenchConfig, BenchOutcome, EngineFactory, Workload,
    bench::{WorkDir, assemble_report, resolve_engines, run_report},
    experiment::{ExperimentRequest, Phase, PhaseFailure, phase_config},
    metrics::{dir_size_bytes, release_free_memory, rss_bytes},
    report::{FailedEngine, RunReport, SkippedEngine},
    runner::{KindHistograms, RunResult, run_workload},
};

/// Keys read back before close and after reopen (spread evenly over every inserted key):
/// a reopen that lost data is a failure, not a fast recovery.
pub const SCALE_VERIFY_KEYS: u64 = 1000;
/// Index of the insert, lookup and two-thread insert phases.
const INSERT: usize = 0;
const LOOKUP: usize = 1;
const CONCURRENT: usize = 2;
/// The workload names the phases' reports show.
pub const PHASE_WORKLOADS: [&str; 3] = ["scale-insert", "scale-lookup", "scale-insert-2t"];

/// What one round of one engine measured besides its phases' runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundExtras {
    /// Engine name.
    pub engine: String,
    /// Round, from 1.
    pub round: u32,
    /// The process's resident set just before the engine was opened (after the previous
    /// engine's freed memory was handed back to the OS), to read the engine's peak against.
    pub rss_at_open_bytes: u64,
    /// Allocated bytes of the engine's directory right after the N inserts (store open).
    pub disk_after_load_bytes: u64,
    /// The engine's `Stats::memory_bytes` right after the N inserts (0: it reports none).
    pub memory_after_load_bytes: u64,
    /// Seconds `close` took after the last phase; null if it was not reached.
    pub close_s: Option<f64>,
    /// Seconds the reopen took (recovery); null if it was not reached.
    pub reopen_s: Option<f64>,
    /// Allocated bytes of the directory after the final close; null if not reached.
    pub disk_after_close_bytes: Option<u64>,
    /// Keys read back and compared after reopen (0 if not reached).
    pub keys_verified: u64,
}

/// The name under which failures after the last phase are reported: the check of the
/// data before close, the close, the reopen, the check after it and the final close.
pub const REOPEN_PHASE: &str = "reopen";

/// Everything `scale` ran.
#[derive(Debug)]
pub struct ScaleRun {
    /// One comparison report per phase, with the failures that happened in it.
    pub phases: Vec<(Phase, BenchOutcome)>,
    /// Per engine and round, in run order.
    pub extras: Vec<RoundExtras>,
    /// Every failure in run order, tagged with its phase ([`REOPEN_PHASE`] after the last).
    pub failed: Vec<PhaseFailure>,
}

/// A round's failure: in which phase (`None`: [`REOPEN_PHASE`]) and step, and the error.
struct Failure {
    phase: Option<usize>,
    step: &'static str,
    error: String,
}

fn failure(phase: usize, step: &'static str, error: &impl ToString) -> Failure {
    Failure { phase: Some(phase), step, error: error.to_string() }
}

fn reopen_failure(step: &'static str, error: &impl ToString) -> Failure {
    Failure { phase: None, step, error: error.to_string() }
}

/// The runs of each phase, collected across engines and rounds.
#[derive(Default)]
struct PhaseRuns {
    runs: Vec<RunReport>,
    histograms: BTreeMap<String, KindHistograms>,
    failed: Vec<FailedEngine>,
}

impl PhaseRuns {
    fn record(&mut self, engine: &str, round: u32, workload: &str, result: &RunResult) {
        self.histograms
            .entry(engine.to_string())
            .or_default()
            .merge(&result.measurements.processing);
        self.runs.push(run_report(engine, round, workload, result));
    }
}

/// The fixed parts of a round.
struct Context<'a> {
    factory: &'a dyn EngineFactory,
    configs: &'a [BenchConfig],
    keys: ScaleKeys,
    work: &'a WorkDir,
}

impl Context<'_> {
    fn inserts(&self) -> u64 {
        self.configs[INSERT].run.ops.expect("scale phases count requests")
    }

    fn concurrent_inserts(&self) -> u64 {
        self.configs[CONCURRENT].run.ops.expect("scale phases count requests")
    }

    fn lookups(&self) -> u64 {
        self.configs[LOOKUP].run.ops.expect("scale phases count requests")
    }
}

/// Reads back [`SCALE_VERIFY_KEYS`] of the first `inserted` keys; the count checked.
fn verify(
    db: &dyn OrderedIndex,
    keys: &ScaleKeys,
    inserted: u64,
) -> std::result::Result<u64, String> {
    let sample = ScaleKeys::sample(inserted, SCALE_VERIFY_KEYS);
    for &i in &sample {
        let key = keys.key(i);
        let hex = key.iter().fold(String::new(), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        });
        match db.get(&key) {
            Ok(Some(value)) if value == keys.value(i).to_bytes() => {}
            Ok(Some(_)) => return Err(format!("key #{i} ({hex}) has another value")),
            Ok(None) => return Err(format!("key #{i} ({hex}) is missing")),
            Err(e) => return Err(format!("reading key #{i} ({hex}): {e}")),
        }
    }
    Ok(sample.len() as u64)
}

/// Closes `db` after a failure (its own error, if any, is appended) and returns the failure.
fn close_after(db: &dyn OrderedIndex, mut f: Failure) -> Failure {
    if let Err(e) = db.close() {
        f.error = format!("{}; closing afterwards also failed: {e}", f.error);
    }
    f
}

/// One round of `engine`: every phase on one store, close, reopen, verify.
fn run_round(
    ctx: &Context<'_>,
    engine: &str,
    round: u32,
    label: &str,
    phases: &mut [PhaseRuns],
    extras: &mut RoundExtras,
) -> std::result::Result<(), Failure> {
    let params = &ctx.configs[INSERT].engine_params;
    let (n, m) = (ctx.inserts(), ctx.concurrent_inserts());
    let path = ctx.work.fresh(engine).map_err(|e| failure(INSERT, "dir", &e))?;
    extras.rss_at_open_bytes = rss_bytes().unwrap_or(0);
    let db = ctx.factory.open(engine, &path, params).map_err(|e| failure(INSERT, "open", &e))?;
    let stages: [(usize, Box<dyn Workload>); 3] = [
        (INSERT, Box::new(ctx.keys.inserts(0..n))),
        (LOOKUP, Box::new(ctx.keys.lookups(n, ctx.lookups()))),
        (CONCURRENT, Box::new(ctx.keys.inserts(n..n + m))),
    ];
    for (phase, workload) in stages {
        let name = PHASE_WORKLOADS[phase];
        let run = &ctx.configs[phase].run;
        let read_fraction = Some(if phase == LOOKUP { 1.0 } else { 0.0 });
        let stage_label = format!("{label} {}", &name["scale-".len()..]);
        let result =
            match run_workload(db.as_ref(), workload, run, read_fraction, &path, &stage_label) {
                Ok(result) => result,
                Err(e) => return Err(close_after(db.as_ref(), failure(phase, "run", &e))),
            };
        if phase == INSERT {
            extras.disk_after_load_bytes = dir_size_bytes(&path);
            extras.memory_after_load_bytes = result.stats.memory_bytes;
        }
        phases[phase].record(engine, round, name, &result);
    }
    if let Err(e) = verify(db.as_ref(), &ctx.keys, n + m) {
        return Err(close_after(db.as_ref(), reopen_failure("verify", &e)));
    }
    let start = Instant::now();
    let closed = db.close();
    extras.close_s = Some(start.elapsed().as_secs_f64());
    drop(db);
    closed.map_err(|e| reopen_failure("close", &e))?;

    let start = Instant::now();
    let db = ctx.factory.open(engine, &path, params).map_err(|e| reopen_failure("reopen", &e))?;
    extras.reopen_s = Some(start.elapsed().as_secs_f64());
    match verify(db.as_ref(), &ctx.keys, n + m) {
        Ok(count) => extras.keys_verified = count,
        Err(e) => return Err(close_after(db.as_ref(), reopen_failure("reopen-verify", &e))),
    }
    db.close().map_err(|e| reopen_failure("reopen-close", &e))?;
    drop(db);
    extras.disk_after_close_bytes = Some(dir_size_bytes(&path));
    Ok(())
}

/// Runs `scale` (`request.phases` from [`crate::experiment::Experiment::phases`]) on
/// `engines` (names or aliases; empty: every engine that accepts the settings).
///
/// As with `run_bench`, errors are for the experiment as a whole; an engine that fails is
/// recorded in the report of the phase it failed in, skipped in later rounds, and the
/// others go on.
pub fn run_scale(
    factory: &dyn EngineFactory,
    request: &ExperimentRequest,
    engines: &[String],
    note: &mut dyn FnMut(&str),
) -> Result<ScaleRun> {
    let names: Vec<&str> = request.phases.iter().map(|p| p.name.as_str()).collect();
    if names != ["insert", "lookup", "insert-2t"] {
        return Err(Error::option(
            "experiment",
            format!("scale's phases are fixed, got {names:?}"),
        ));
    }
    let configs: Vec<BenchConfig> =
        request.phases.iter().map(|p| phase_config(request, p, engines)).collect();
    for config in &configs {
        config.validate()?;
    }
    let params = &configs[INSERT].engine_params;
    let (engines, skipped): (Vec<String>, Vec<SkippedEngine>) =
        resolve_engines(factory, engines, params)?;
    for s in &skipped {
        note(&format!("skipping engine {}: {}", s.engine, s.reason));
    }
    let base = &request.base;
    let work = WorkDir::new(base.dir.as_deref(), &engines)?;
    let ctx = Context {
        factory,
        configs: &configs,
        keys: ScaleKeys::new(&request.phases[0].workload),
        work: &work,
    };

    let mut phases: Vec<PhaseRuns> = (0..configs.len()).map(|_| PhaseRuns::default()).collect();
    let mut extras = Vec::new();
    let mut failed: Vec<PhaseFailure> = Vec::new();
    for round in 1..=base.rounds {
        let order: Vec<&String> =
            if round % 2 == 1 { engines.iter().collect() } else { engines.iter().rev().collect() };
        for engine in order {
            if failed.iter().any(|f| &f.failure.engine == engine) {
                continue; // a failed engine's row is its failure; later rounds skip it
            }
            let label = if base.rounds > 1 {
                format!("{engine} {round}/{}", base.rounds)
            } else {
                engine.clone()
            };
            let mut round_extras = RoundExtras {
                engine: engine.clone(),
                round,
                rss_at_open_bytes: 0,
                disk_after_load_bytes: 0,
                memory_after_load_bytes: 0,
                close_s: None,
                reopen_s: None,
                disk_after_close_bytes: None,
                keys_verified: 0,
            };
            let outcome = run_round(&ctx, engine, round, &label, &mut phases, &mut round_extras);
            release_free_memory(); // the engine is gone: its memory is not the next one's
            extras.push(round_extras);
            if let Err(f) = outcome {
                let failure = FailedEngine {
                    engine: engine.clone(),
                    round,
                    step: f.step.into(),
                    error: f.error,
                };
                let phase = f.phase.map_or(REOPEN_PHASE, |i| request.phases[i].name.as_str());
                note(&format!("phase {phase}: {failure}"));
                if let Some(i) = f.phase {
                    phases[i].failed.push(failure.clone());
                }
                failed.push(PhaseFailure { phase: phase.into(), failure });
            }
        }
    }

    let n = ctx.inserts();
    work.finish(base.keep, note)?;
    // Records in the store before each phase, and the phases' workload names.
    let preloads = [0, n, n];
    let outcomes = request
        .phases
        .iter()
        .zip(&configs)
        .zip(phases)
        .zip(preloads.into_iter().zip(PHASE_WORKLOADS))
        .map(|(((phase, config), runs), (preload, workload))| {
            let (mut report, histograms) = assemble_report(
                config,
                &engines,
                preload,
                runs.runs,
                runs.histograms,
                skipped.clone(),
                runs.failed,
            );
            report.workload = workload.into();
            report.params.workload = workload.into();
            (phase.clone(), BenchOutcome { report, histograms, kept_dir: None })
        })
        .collect();
    Ok(ScaleRun { phases: outcomes, extras, failed })
}
