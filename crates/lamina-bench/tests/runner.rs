//! The runners' accounting against the `mem` engine: counts add up, R_q >= R_p, warm-up and
//! preload excluded, comparisons alternate and ratio to the first engine.

use std::{path::Path, sync::Arc, time::Duration};

use lamina::{Db, Durability, EngineKind, Options};
use lamina_bench::{
    BenchConfig, EngineFactory, EngineInfo, EngineParams, OpKind, WorkloadConfig, WorkloadKind,
    run_bench,
    runner::{RunConfig, RunnerKind, run_workload},
};
use lamina_core::{Error, OrderedIndex, Result};

/// `mem` under the names `mem` and `mem2` (a second engine for comparisons).
struct MemFactory;

impl EngineFactory for MemFactory {
    fn engines(&self) -> Vec<EngineInfo> {
        ["mem", "mem2"].iter().map(|n| EngineInfo::new(*n, "mem")).collect()
    }

    fn check(&self, _name: &str, params: &EngineParams) -> Result<()> {
        if params.durability != Durability::None {
            return Err(Error::Unsupported { what: "mem needs durability none".into() });
        }
        Ok(())
    }

    fn open(&self, name: &str, dir: &Path, params: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
        self.check(name, params)?;
        let options = Options {
            engine: EngineKind::Mem,
            durability: params.durability,
            ..Options::default()
        };
        Ok(Arc::new(Db::open(dir, options)?))
    }
}

fn run_config(runner: RunnerKind, ops: u64, warmup: u64) -> RunConfig {
    RunConfig {
        runner,
        ops: Some(ops),
        duration: None,
        warmup_ops: warmup,
        bucket_ops: 100,
        interval: Duration::from_millis(10),
        progress: false,
    }
}

fn open_mem(dir: &Path) -> Db {
    Db::open(
        dir,
        Options { engine: EngineKind::Mem, durability: Durability::None, ..Options::default() },
    )
    .unwrap()
}

#[test]
fn closed_loop_counts_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_mem(dir.path());
    let workload =
        WorkloadConfig { preload: 1000, ..WorkloadConfig::new(WorkloadKind::Contest, 1) };
    let config = run_config(RunnerKind::Closed { threads: 3 }, 5000, 500);
    let result =
        run_workload(&db, workload.build().unwrap(), &config, None, dir.path(), "t").unwrap();
    let m = &result.measurements;
    assert_eq!(result.preloaded_ops, 1000);
    assert_eq!(m.count(), 5000, "warm-up excluded, every measured request counted once");
    let per_kind: u64 = OpKind::ALL
        .iter()
        .filter_map(|k| m.processing.get(*k))
        .map(lamina_bench::metrics::LatencyHistogram::count)
        .sum();
    assert_eq!(per_kind, 5000);
    assert_eq!(m.timeline.bucket_max_ns.len(), 50, "5000 requests in buckets of 100");
    assert_eq!(m.timeline.interval_ops.iter().sum::<u64>(), 5000);
    assert_eq!(m.queued.count(), 0, "no queues in a closed loop");
    assert!(m.elapsed_s > 0.0 && m.throughput_ops_s() > 0.0);
    assert!(m.user_bytes_written > 0);
    assert!(db.stats().keys.unwrap() > 0);
}

#[test]
fn open_system_accounting() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_mem(dir.path());
    let workload = WorkloadConfig {
        preload: 500,
        mix: "60:30:10".parse().unwrap(),
        ..WorkloadConfig::new(WorkloadKind::Gr, 2)
    };
    let runner =
        RunnerKind::Open { readers: 2, writers: 1, rate_per_s: Some(1_000_000.0), queue_slots: 64 };
    let config = run_config(runner, 4000, 200);
    let read_fraction = workload.kind.read_fraction(&workload);
    let result =
        run_workload(&db, workload.build().unwrap(), &config, read_fraction, dir.path(), "t")
            .unwrap();
    let m = &result.measurements;
    assert_eq!(m.count(), 4000);
    assert_eq!(m.queued.count(), 4000);
    assert_eq!(m.overall.count(), 4000);
    for kind in [OpKind::Get, OpKind::Put, OpKind::Delete] {
        let (p, q, o) = (
            m.processing.get(kind).unwrap(),
            m.queued.get(kind).unwrap(),
            m.overall.get(kind).unwrap(),
        );
        assert_eq!(p.count(), q.count());
        assert_eq!(q.count(), o.count());
        // Every sample has R_o >= R_q >= R_p, so each order statistic does too.
        for quantile in [0.0, 0.5, 0.9, 0.99, 1.0] {
            assert!(
                q.quantile_ns(quantile) >= p.quantile_ns(quantile),
                "{kind:?} R_q < R_p at {quantile}"
            );
            assert!(
                o.quantile_ns(quantile) >= q.quantile_ns(quantile),
                "{kind:?} R_o < R_q at {quantile}"
            );
        }
        assert!(q.mean_ns() >= p.mean_ns());
    }
    let gets = m.processing.get(OpKind::Get).unwrap().count() as f64 / 4000.0;
    assert!((gets - 0.6).abs() < 0.05, "lookup share {gets}");
}

#[test]
fn open_system_refuses_reads_without_readers() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_mem(dir.path());
    let workload = WorkloadConfig { preload: 100, ..WorkloadConfig::new(WorkloadKind::Contest, 2) };
    let runner = RunnerKind::Open { readers: 0, writers: 1, rate_per_s: None, queue_slots: 16 };
    let err = run_workload(
        &db,
        workload.build().unwrap(),
        &run_config(runner, 1000, 0),
        None,
        dir.path(),
        "t",
    )
    .unwrap_err();
    assert!(err.to_string().contains("--readers is 0"), "{err}");
}

#[test]
fn duration_bounded_run_stops() {
    let dir = tempfile::tempdir().unwrap();
    let db = open_mem(dir.path());
    let workload = WorkloadConfig::new(WorkloadKind::Insert, 3);
    let config = RunConfig {
        ops: None,
        duration: Some(Duration::from_millis(200)),
        ..run_config(RunnerKind::Closed { threads: 2 }, 1, 10)
    };
    let result =
        run_workload(&db, workload.build().unwrap(), &config, None, dir.path(), "t").unwrap();
    assert!(result.measurements.count() > 0);
}

fn bench_config(engines: &[&str], rounds: u32) -> BenchConfig {
    BenchConfig {
        engines: engines.iter().map(|s| (*s).to_string()).collect(),
        rounds,
        workload: WorkloadConfig { preload: 500, ..WorkloadConfig::new(WorkloadKind::YcsbA, 4) },
        run: run_config(RunnerKind::Closed { threads: 2 }, 2000, 100),
        engine_params: EngineParams::default(),
        dir: None,
        keep: false,
    }
}

#[test]
fn comparison_alternates_order_and_reports_ratios() {
    let mut notes = Vec::new();
    let outcome = run_bench(&MemFactory, &bench_config(&["mem", "mem2"], 2), &mut |n| {
        notes.push(n.to_string());
    })
    .unwrap();
    let order: Vec<(String, u32)> =
        outcome.report.runs.iter().map(|r| (r.engine.clone(), r.round)).collect();
    let expected =
        [("mem", 1), ("mem2", 1), ("mem2", 2), ("mem", 2)].map(|(e, r)| (e.to_string(), r));
    assert_eq!(order, expected);
    assert!(outcome.report.runs.iter().all(|r| r.measured_ops == 2000 && r.preload_ops == 500));
    let summary = &outcome.report.summary;
    assert_eq!(summary.len(), 2);
    assert!((summary[0].throughput_ratio - 1.0).abs() < 1e-12);
    assert!(summary[1].throughput_ratio > 0.0);
    assert_eq!(summary[0].all.count, 4000, "both rounds merged");
    assert_eq!(outcome.histograms.len(), 2);
}

#[test]
fn engine_selection_errors_and_skips() {
    let mut params = EngineParams { durability: Durability::Sync, ..EngineParams::default() };
    let mut config = bench_config(&["mem"], 1);
    config.engine_params = params.clone();
    let err = run_bench(&MemFactory, &config, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("engine `mem` cannot run"), "{err}");
    config.engines.clear();
    let err = run_bench(&MemFactory, &config, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("no engine accepts"), "{err}");
    params.durability = Durability::None;
    config.engine_params = params;
    config.engines = vec!["nope".into()];
    let err = run_bench(&MemFactory, &config, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("unknown engine `nope`"), "{err}");
    config.engines = vec!["mem".into(), "mem".into()];
    assert!(run_bench(&MemFactory, &config, &mut |_| {}).is_err());
}

#[test]
fn dir_holds_engine_subdirectories_and_refuses_to_overwrite() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = bench_config(&["mem"], 1);
    config.dir = Some(dir.path().to_path_buf());
    run_bench(&MemFactory, &config, &mut |_| {}).unwrap();
    assert_eq!(Db::engine_of(dir.path().join("mem")).unwrap(), Some(EngineKind::Mem), "reopenable");
    let err = run_bench(&MemFactory, &config, &mut |_| {}).unwrap_err();
    assert!(err.to_string().contains("is not empty"), "{err}");
}
