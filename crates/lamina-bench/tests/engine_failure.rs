//! One engine failing (at open, in a request, when reopened) does not stop a comparison or
//! `--experiment scale`: its failure is recorded with the step and the error, the other
//! engines run and are summarized, and it is not run again in later rounds.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use lamina::{Db, Durability, EngineKind, Options};
use lamina_bench::{
    BenchConfig, EngineFactory, EngineInfo, EngineParams, WorkloadConfig, WorkloadKind,
    experiment::{Experiment, ExperimentRequest, Scale, run_experiment},
    report::render_table,
    run_bench,
    runner::{RunConfig, RunnerKind},
};
use lamina_core::{CasOutcome, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch};

/// Puts accepted by `fail-put` before it runs out of space.
const PUTS_BEFORE_FAILURE: u64 = 50;

/// `mem`, plus engines that fail deterministically: `fail-open` never opens, `fail-put`
/// refuses every put after [`PUTS_BEFORE_FAILURE`], `forgetful` loses everything at reopen.
struct Faulty;

fn open_mem(dir: &Path) -> Result<Db> {
    Db::open(
        dir,
        Options { engine: EngineKind::Mem, durability: Durability::None, ..Options::default() },
    )
}

impl EngineFactory for Faulty {
    fn engines(&self) -> Vec<EngineInfo> {
        ["mem", "fail-open", "fail-put", "forgetful"]
            .iter()
            .map(|n| EngineInfo::new(*n, "test"))
            .collect()
    }

    fn check(&self, _: &str, _: &EngineParams) -> Result<()> {
        Ok(())
    }

    fn open(&self, name: &str, dir: &Path, _: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
        match name {
            "fail-open" => Err(Error::NoSpace { context: "fail-open's test budget".into() }),
            "fail-put" => Ok(Arc::new(FailPut {
                db: open_mem(dir)?,
                puts_left: AtomicU64::new(PUTS_BEFORE_FAILURE),
            })),
            "forgetful" => {
                // Each open starts from scratch: a reopen finds none of the data.
                std::fs::remove_dir_all(dir).map_err(|e| Error::io("clearing", e))?;
                std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", e))?;
                Ok(Arc::new(open_mem(dir)?))
            }
            _ => Ok(Arc::new(open_mem(dir)?)),
        }
    }
}

/// `mem` that runs out of space after a number of puts.
struct FailPut {
    db: Db,
    puts_left: AtomicU64,
}

impl OrderedIndex for FailPut {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get(key)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let left =
            self.puts_left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if left.is_err() {
            return Err(Error::NoSpace { context: "fail-put's test budget".into() });
        }
        self.db.put(key, value)
    }
    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.db.delete(key)
    }
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.db.compare_and_swap(key, expected, new)
    }
    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        self.db.scan(range, limit)
    }
    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        self.db.write_batch(batch)
    }
    fn sync(&self) -> Result<()> {
        self.db.sync()
    }
    fn stats(&self) -> Stats {
        self.db.stats()
    }
    fn close(&self) -> Result<()> {
        self.db.close()
    }
}

fn run_config(ops: u64) -> RunConfig {
    RunConfig {
        runner: RunnerKind::Closed { threads: 2 },
        ops: Some(ops),
        duration: None,
        warmup_ops: 0,
        bucket_ops: 10,
        interval: Duration::from_millis(10),
        progress: false,
    }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

#[test]
fn a_comparison_records_failures_and_reports_the_other_engines() {
    let config = BenchConfig {
        engines: names(&["fail-open", "mem", "fail-put"]),
        rounds: 2,
        workload: WorkloadConfig::new(WorkloadKind::Insert, 5),
        run: run_config(500),
        engine_params: EngineParams::default(),
        dir: None,
        keep: false,
    };
    let mut notes = Vec::new();
    let outcome = run_bench(&Faulty, &config, &mut |n| notes.push(n.to_string())).unwrap();
    let report = &outcome.report;
    let failed: Vec<(&str, u32, &str)> =
        report.failed.iter().map(|f| (f.engine.as_str(), f.round, f.step.as_str())).collect();
    assert_eq!(failed, [("fail-open", 1, "open"), ("fail-put", 1, "run")]);
    assert!(report.failed[1].error.contains("fail-put's test budget"), "{:?}", report.failed);
    let runs: Vec<(&str, u32)> = report.runs.iter().map(|r| (r.engine.as_str(), r.round)).collect();
    assert_eq!(runs, [("mem", 1), ("mem", 2)], "failed engines are not run again");
    let summary: Vec<&str> = report.summary.iter().map(|s| s.engine.as_str()).collect();
    assert_eq!(summary, ["mem"]);
    assert!(
        (report.summary[0].throughput_ratio - 1.0).abs() < 1e-12,
        "ratios to the first healthy engine"
    );
    assert_eq!(outcome.histograms.len(), 1);
    assert_eq!(notes.iter().filter(|n| n.contains("failed in round 1")).count(), 2, "{notes:?}");
    let table = render_table(report);
    assert!(table.contains("fail-put  FAILED in round 1 (run): no space left"), "{table}");
    let json = serde_json::to_value(report).unwrap();
    assert_eq!(json["failed"][0]["step"], "open");
}

fn scale_request(engines: &[&str], ops: u64) -> ExperimentRequest {
    let experiment = Experiment::Scale;
    let phases = experiment.phases(9, Scale { ops: Some(ops), ..Scale::default() }).unwrap();
    ExperimentRequest {
        experiment,
        base: BenchConfig {
            engines: names(engines),
            rounds: 1,
            workload: phases[0].workload.clone(),
            run: run_config(ops),
            engine_params: EngineParams::default(),
            dir: None,
            keep: false,
        },
        phases,
        runner_override: None,
        engines_given: true,
        command: "test".into(),
    }
}

#[test]
fn scale_reports_each_engine_up_to_its_failure_and_checks_the_reopened_data() {
    let request = scale_request(&["mem", "fail-put", "forgetful", "fail-open"], 300);
    let outcome = run_experiment(&Faulty, &request, &mut |_| {}).unwrap();
    let report = &outcome.report;
    let failed: Vec<(&str, &str, &str)> = report
        .failed
        .iter()
        .map(|f| (f.phase.as_str(), f.failure.engine.as_str(), f.failure.step.as_str()))
        .collect();
    let expected = [
        ("insert", "fail-put", "run"),
        ("reopen", "forgetful", "reopen-verify"),
        ("insert", "fail-open", "open"),
    ];
    assert_eq!(failed, expected, "in run order");
    assert!(report.failed[1].failure.error.contains("key #0"), "{:?}", report.failed[1]);
    let scale = report.scale.as_ref().unwrap();
    assert_eq!((scale.inserts, scale.lookups, scale.concurrent_inserts), (300, 300, 300));
    let row = |name: &str| scale.engines.iter().find(|r| r.engine == name).unwrap();
    let mem = row("mem");
    assert!(mem.failed.is_none());
    assert_eq!(mem.keys_verified, Some(600), "every key when there are fewer than the sample");
    assert!(mem.insert.is_some() && mem.lookup.is_some() && mem.insert_2t.is_some());
    assert!(mem.reopen_s.is_some() && mem.close_s.is_some());
    let fail_put = row("fail-put");
    assert!(fail_put.insert.is_none() && fail_put.lookup.is_none() && fail_put.failed.is_some());
    let forgetful = row("forgetful");
    assert!(forgetful.insert_2t.is_some(), "its phases ran; only the reopen lost the data");
    assert!(forgetful.reopen_s.is_some() && forgetful.keys_verified.is_none());
    // Each phase report carries its own failures; summaries leave them out.
    let insert = &outcome.phases[0].1.report;
    assert_eq!(insert.workload, "scale-insert");
    let in_insert: Vec<&str> = insert.failed.iter().map(|f| f.engine.as_str()).collect();
    assert_eq!(in_insert, ["fail-put", "fail-open"]);
    let summarized: Vec<&str> = insert.summary.iter().map(|s| s.engine.as_str()).collect();
    assert_eq!(summarized, ["mem", "forgetful"]);
    let lookup = &outcome.phases[1].1.report;
    assert_eq!(lookup.params.preload, 300);
    assert_eq!(lookup.runs.iter().map(|r| r.measured_ops).collect::<Vec<_>>(), [300, 300]);
    assert!(outcome.phases[2].1.report.failed.is_empty(), "reopen failures are after the phases");
    // The insert phase's steps are 1% of the inserts.
    let steps = report.insert_steps.as_ref().unwrap();
    assert_eq!((steps.step_ops, steps.records_end.len()), (3, 100));
    let md = report.to_markdown(&outcome.phases.iter().map(|(p, _)| p.role).collect::<Vec<_>>());
    assert!(md.contains("| fail-put | failed (insert: run) |"), "{md}");
    assert!(md.contains("| forgetful |") && md.contains("failed (reopen-verify)"), "{md}");
}

#[test]
fn scale_rounds_alternate_and_skip_a_failed_engine() {
    let mut request = scale_request(&["mem", "fail-put"], 200);
    request.base.rounds = 2;
    let outcome = run_experiment(&Faulty, &request, &mut |_| {}).unwrap();
    let scale = outcome.report.scale.as_ref().unwrap();
    let rounds: Vec<(&str, u32)> =
        scale.rounds.iter().map(|r| (r.engine.as_str(), r.round)).collect();
    assert_eq!(rounds, [("mem", 1), ("fail-put", 1), ("mem", 2)], "reversed, failed skipped");
    for (_, bench) in &outcome.phases {
        let runs: Vec<(&str, u32)> =
            bench.report.runs.iter().map(|r| (r.engine.as_str(), r.round)).collect();
        assert_eq!(runs, [("mem", 1), ("mem", 2)]);
        assert_eq!(bench.report.summary[0].rounds, 2);
    }
    let mem = &scale.engines[0];
    assert_eq!(mem.keys_verified, Some(400));
    assert!(mem.rss_at_open_bytes > 0 || cfg!(not(target_os = "linux")));
}
