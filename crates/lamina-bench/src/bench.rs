//! A whole comparison: the same workload (same seed, so the same requests) against each
//! engine in turn, for `rounds` rounds with the engine order reversed every other round
//! (so no engine always runs first, on a cold machine, or last, on a hot one), summarized
//! with ratios to the first engine (DESIGN.md: comparisons are ratios measured side by
//! side in one run).

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::Duration,
};

use lamina_core::{Durability, Error, Result};

use crate::{
    EngineFactory, EngineParams,
    metrics::{LatencyHistogram, dir_size_bytes},
    report::{
        BenchParams, BenchReport, EngineSummary, IoReport, RunReport, SCHEMA_NAME, SCHEMA_VERSION,
        SkippedEngine, TimelineReport,
    },
    runner::{KindHistograms, RunConfig, RunResult, RunnerKind, run_workload},
    workload::{WorkloadConfig, WorkloadKind},
};

/// Most rounds.
pub const ROUNDS_MAX: u32 = 100;

/// Everything `lamina bench` needs besides the engines.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchConfig {
    /// Engines to compare, in order; empty: every engine the factory offers that accepts
    /// the parameters (the others are skipped with a note).
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

/// The report plus what plots need beyond it.
#[derive(Debug, Clone)]
pub struct BenchOutcome {
    /// The report (JSON and table).
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

/// Resolves the engine list: explicit names must exist and accept the parameters (else an
/// error); with no names, every engine that accepts them, the others skipped with a reason.
fn resolve_engines(
    factory: &dyn EngineFactory,
    config: &BenchConfig,
) -> Result<(Vec<String>, Vec<SkippedEngine>)> {
    let known: Vec<String> = factory.engines().into_iter().map(|e| e.name).collect();
    let mut skipped = Vec::new();
    let mut engines = Vec::new();
    if config.engines.is_empty() {
        for name in known {
            match factory.check(&name, &config.engine_params) {
                Ok(()) => engines.push(name),
                Err(e) => skipped.push(SkippedEngine { engine: name, reason: e.to_string() }),
            }
        }
        if engines.is_empty() {
            let reasons: Vec<String> =
                skipped.iter().map(|s| format!("{}: {}", s.engine, s.reason)).collect();
            return Err(Error::option(
                "engines",
                format!("no engine accepts these settings ({})", reasons.join("; ")),
            ));
        }
        return Ok((engines, skipped));
    }
    for name in &config.engines {
        if !known.contains(name) {
            return Err(Error::option(
                "engines",
                format!("unknown engine `{name}`; known: {}", known.join(", ")),
            ));
        }
        if engines.contains(name) {
            return Err(Error::option("engines", format!("engine `{name}` is listed twice")));
        }
        factory
            .check(name, &config.engine_params)
            .map_err(|e| Error::option("engines", format!("engine `{name}` cannot run: {e}")))?;
        engines.push(name.clone());
    }
    Ok((engines, skipped))
}

fn params(config: &BenchConfig, engines: &[String], preload: u64) -> BenchParams {
    let w = &config.workload;
    let r = &config.run;
    let (runner, threads, readers, writers, rate, slots) = match r.runner {
        RunnerKind::Closed { threads } => ("closed", Some(threads), None, None, None, None),
        RunnerKind::Open { readers, writers, rate_per_s, queue_slots } => {
            ("open", None, Some(readers), Some(writers), rate_per_s, Some(queue_slots))
        }
    };
    BenchParams {
        workload: w.kind.name().into(),
        seed: w.seed,
        preload,
        ops: r.ops,
        duration_s: r.duration.map(|d| d.as_secs_f64()),
        warmup_ops: r.warmup_ops,
        key_bytes: w.key_bytes,
        value_bytes: w.value_bytes,
        mix: (w.kind == WorkloadKind::Gr).then(|| w.mix.normalized()),
        warehouses: (w.kind == WorkloadKind::Tpcc).then_some(w.warehouses),
        ltu_percent: (w.kind == WorkloadKind::Ltu).then_some(w.ltu_percent),
        trace: w.trace.as_ref().map(|p| p.display().to_string()),
        runner: runner.into(),
        threads,
        readers,
        writers,
        rate_ops_s: rate,
        queue_slots: slots,
        durability: durability_name(config.engine_params.durability),
        device: config.engine_params.device.clone(),
        emulate: config.engine_params.emulate,
        memory_budget_bytes: config.engine_params.memory_budget_bytes,
        cache_bytes: config.engine_params.cache_bytes,
        fdtree_size_ratio: config.engine_params.fdtree_size_ratio,
        fdtree_key_bytes_max: config.engine_params.fdtree_key_bytes_max,
        engines: engines.to_vec(),
        rounds: config.rounds,
        bucket_ops: r.bucket_ops,
        interval_ms: r.interval.as_millis() as u64,
    }
}

fn run_report(engine: &str, round: u32, workload: &str, result: &RunResult) -> RunReport {
    let m = &result.measurements;
    let user_bytes = if result.engine_user_bytes_written > 0 {
        result.engine_user_bytes_written
    } else {
        m.user_bytes_written
    };
    let write_amplification = if user_bytes > 0 && result.io.bytes_written > 0 {
        result.io.bytes_written as f64 / user_bytes as f64
    } else {
        0.0
    };
    let open = m.queued.count() > 0;
    let us = |ns: &u64| *ns as f64 / 1000.0;
    RunReport {
        engine: engine.into(),
        round,
        workload: workload.into(),
        preload_ops: result.preloaded_ops,
        measured_ops: m.count(),
        elapsed_s: m.elapsed_s,
        throughput_ops_s: m.throughput_ops_s(),
        ops: m.processing.summaries(),
        all: m.processing.all().summary(),
        queued: open.then(|| m.queued.summaries()),
        overall: open.then(|| m.overall.summaries()),
        io: IoReport::from(&result.io),
        user_bytes_written: user_bytes,
        write_amplification,
        modeled_device_s: result.io.modeled_device_ns as f64 / 1e9,
        disk_peak_bytes: result.disk_peak_bytes,
        disk_median_bytes: result.disk_median_bytes,
        rss_peak_bytes: result.rss_peak_bytes,
        engine_stats: result.stats.extra.iter().map(|(k, v)| ((*k).to_string(), *v)).collect(),
        timeline: TimelineReport {
            bucket_ops: m.timeline.bucket_ops,
            bucket_max_us: m.timeline.bucket_max_ns.iter().map(us).collect(),
            bucket_mean_us: m.timeline.bucket_mean_ns().iter().map(|ns| ns / 1000.0).collect(),
            interval_ms: m.timeline.interval_ns as f64 / 1e6,
            interval_ops_s: m.timeline.interval_ops_per_s(),
            interval_max_us: m.timeline.interval_max_ns.iter().map(us).collect(),
        },
    }
}

fn ratio(value: f64, base: f64) -> f64 {
    if base > 0.0 { value / base } else { 0.0 }
}

fn summarize(
    engines: &[String],
    runs: &[RunReport],
    histograms: &BTreeMap<String, KindHistograms>,
) -> Vec<EngineSummary> {
    let mut out: Vec<EngineSummary> = Vec::new();
    for engine in engines {
        let mine: Vec<&RunReport> = runs.iter().filter(|r| &r.engine == engine).collect();
        let rounds = mine.len() as f64;
        let all = histograms
            .get(engine)
            .map_or_else(LatencyHistogram::new, KindHistograms::all)
            .summary();
        out.push(EngineSummary {
            engine: engine.clone(),
            rounds: mine.len() as u32,
            throughput_ops_s: mine.iter().map(|r| r.throughput_ops_s).sum::<f64>() / rounds,
            throughput_ratio: 0.0,
            all,
            p99_ratio: 0.0,
            p9999_ratio: 0.0,
            max_ratio: 0.0,
            write_amplification: mine.iter().map(|r| r.write_amplification).sum::<f64>() / rounds,
            disk_peak_bytes: mine.iter().map(|r| r.disk_peak_bytes).max().unwrap_or(0),
            rss_peak_bytes: mine.iter().map(|r| r.rss_peak_bytes).max().unwrap_or(0),
        });
    }
    if let Some(first) = out.first().cloned() {
        for s in &mut out {
            s.throughput_ratio = ratio(s.throughput_ops_s, first.throughput_ops_s);
            s.p99_ratio = ratio(s.all.p99_us, first.all.p99_us);
            s.p9999_ratio = ratio(s.all.p9999_us, first.all.p9999_us);
            s.max_ratio = ratio(s.all.max_us, first.all.max_us);
        }
    }
    out
}

fn fresh_dir(path: &Path) -> Result<()> {
    if path.exists() {
        std::fs::remove_dir_all(path)
            .map_err(|e| Error::io(format!("clearing {}", path.display()), e))?;
    }
    std::fs::create_dir_all(path).map_err(|e| Error::io(format!("creating {}", path.display()), e))
}

/// Runs the comparison. `note` receives one-line remarks (skipped engines, kept
/// directories) as they happen.
pub fn run_bench(
    factory: &dyn EngineFactory,
    config: &BenchConfig,
    note: &mut dyn FnMut(&str),
) -> Result<BenchOutcome> {
    config.workload.validate()?;
    config.run.validate()?;
    if !(1..=ROUNDS_MAX).contains(&config.rounds) {
        return Err(Error::option(
            "rounds",
            format!("must be 1..={ROUNDS_MAX}, got {}", config.rounds),
        ));
    }
    let (engines, skipped) = resolve_engines(factory, config)?;
    for s in &skipped {
        note(&format!("skipping engine {}: {}", s.engine, s.reason));
    }
    let read_fraction = config.workload.kind.read_fraction(&config.workload);

    let temp;
    let base: PathBuf = match &config.dir {
        Some(dir) => {
            for engine in &engines {
                let path = dir.join(engine);
                let occupied = std::fs::read_dir(&path).is_ok_and(|mut d| d.next().is_some());
                if occupied {
                    return Err(Error::option(
                        "dir",
                        format!(
                            "{} is not empty; remove it or choose another --dir",
                            path.display()
                        ),
                    ));
                }
            }
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
            temp = None;
            dir.clone()
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("lamina-bench-")
                .tempdir()
                .map_err(|e| Error::io("creating a temporary directory", e))?;
            let path = t.path().to_path_buf();
            temp = Some(t);
            path
        }
    };

    let mut runs = Vec::new();
    let mut histograms: BTreeMap<String, KindHistograms> = BTreeMap::new();
    let mut preload = config.workload.preload;
    for round in 1..=config.rounds {
        let order: Vec<&String> =
            if round % 2 == 1 { engines.iter().collect() } else { engines.iter().rev().collect() };
        for engine in order {
            let path = base.join(engine);
            fresh_dir(&path)?;
            let db = factory.open(engine, &path, &config.engine_params)?;
            let workload = config.workload.build()?;
            let label = if config.rounds > 1 {
                format!("{engine} {round}/{}", config.rounds)
            } else {
                engine.clone()
            };
            let outcome =
                run_workload(db.as_ref(), workload, &config.run, read_fraction, &path, &label);
            let closed = db.close();
            drop(db);
            let mut result = outcome?;
            closed?;
            result.disk_peak_bytes = result.disk_peak_bytes.max(dir_size_bytes(&path));
            preload = result.preloaded_ops;
            histograms.entry(engine.clone()).or_default().merge(&result.measurements.processing);
            runs.push(run_report(engine, round, config.workload.kind.name(), &result));
        }
    }

    let summary = summarize(&engines, &runs, &histograms);
    let kept_dir = match temp {
        Some(t) if config.keep => {
            let path = t.keep();
            note(&format!("kept engine files in {}", path.display()));
            Some(path)
        }
        Some(t) => {
            t.close().map_err(|e| Error::io("removing the temporary directory", e))?;
            None
        }
        None => Some(base),
    };
    let report = BenchReport {
        schema: SCHEMA_NAME.into(),
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        workload: config.workload.kind.name().into(),
        params: params(config, &engines, preload),
        runs,
        summary,
        skipped,
    };
    let histograms =
        engines.iter().map(|e| (e.clone(), histograms.remove(e).unwrap_or_default())).collect();
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
