//! Turning runs into a report: each run's figures, the per-engine summary with ratios to
//! the first engine, the parameters.

use std::collections::BTreeMap;

use super::{BenchConfig, durability_name};
use crate::{
    metrics::LatencyHistogram,
    report::{
        BenchParams, BenchReport, EngineSummary, FailedEngine, IoReport, RunReport, SCHEMA_NAME,
        SCHEMA_VERSION, SkippedEngine, TimelineReport,
    },
    runner::{KindHistograms, RunResult, RunnerKind},
    workload::WorkloadKind,
};

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
        nbtree_fanout: config.engine_params.nbtree_fanout,
        engines: engines.to_vec(),
        rounds: config.rounds,
        bucket_ops: r.bucket_ops,
        interval_ms: r.interval.as_millis() as u64,
    }
}

/// The report of one run of `engine` in `round`.
pub(crate) fn run_report(
    engine: &str,
    round: u32,
    workload: &str,
    result: &RunResult,
) -> RunReport {
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

/// One summary per engine of `engines` with runs (in that order), ratios to the first.
fn summarize(
    engines: &[&String],
    runs: &[RunReport],
    histograms: &BTreeMap<String, KindHistograms>,
) -> Vec<EngineSummary> {
    let mut out: Vec<EngineSummary> = Vec::new();
    for engine in engines {
        let mine: Vec<&RunReport> = runs.iter().filter(|r| &r.engine == *engine).collect();
        if mine.is_empty() {
            continue;
        }
        let rounds = mine.len() as f64;
        let all = histograms
            .get(*engine)
            .map_or_else(LatencyHistogram::new, KindHistograms::all)
            .summary();
        out.push(EngineSummary {
            engine: (*engine).clone(),
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

/// The report of a comparison of `engines` under `config`, and each summarized engine's
/// histograms in summary order. Engines in `failed` get no summary (their completed runs
/// stay in `runs`), so ratios are to the first engine that did not fail.
pub(crate) fn assemble_report(
    config: &BenchConfig,
    engines: &[String],
    preload: u64,
    runs: Vec<RunReport>,
    mut histograms: BTreeMap<String, KindHistograms>,
    skipped: Vec<SkippedEngine>,
    failed: Vec<FailedEngine>,
) -> (BenchReport, Vec<(String, KindHistograms)>) {
    let healthy: Vec<&String> =
        engines.iter().filter(|e| !failed.iter().any(|f| &f.engine == *e)).collect();
    let summary = summarize(&healthy, &runs, &histograms);
    let histograms = summary
        .iter()
        .map(|s| (s.engine.clone(), histograms.remove(&s.engine).unwrap_or_default()))
        .collect();
    let report = BenchReport {
        schema: SCHEMA_NAME.into(),
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        workload: config.workload.kind.name().into(),
        params: params(config, engines, preload),
        runs,
        summary,
        skipped,
        failed,
    };
    (report, histograms)
}
