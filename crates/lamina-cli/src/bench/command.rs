//! Turns `lamina bench` flags into a `lamina_bench::BenchConfig`, refusing contradictory
//! combinations with one clear line, runs it and writes the requested outputs.

use std::{io::Write, path::Path, time::Duration};

use lamina::{Durability, Error, Result};
use lamina_bench::{
    BenchConfig, BenchOutcome, DEFAULT_INTERVAL, EngineFactory, EngineParams, Factories, Mix,
    PeerFactory, WorkloadConfig, WorkloadKind, default_bucket_ops, default_warmup_ops,
    experiment::{
        Experiment, ExperimentOutcome, ExperimentPlan, ExperimentRequest, Scale, run_experiment,
        write_experiment_plots,
    },
    plot::write_plots,
    report::{FailedEngine, render_table, write_timeline_csv},
    run_bench,
    runner::{RunConfig, RunnerKind},
    workload::record_trace,
};

use super::{BenchArgs, LaminaFactory, peers_built, server};

fn lamina_peers_feature_missing() -> &'static str {
    "built without the `peers` feature; rebuild with `cargo build -p lamina-cli --features peers` \
     after installing the Debian packages listed in crates/lamina-peers/README.md"
}

/// Measured requests when neither `--ops` nor `--duration` is given.
pub const DEFAULT_OPS: u64 = 100_000;
/// Open system's queue slots by default (FD+FC section 5).
pub const DEFAULT_QUEUE_SLOTS: usize = 5000;

fn bad(name: &'static str, reason: impl Into<String>) -> Error {
    Error::option(name, reason)
}

/// Parses `sync`, `none`, `buffered` (100 ms) or `buffered:MS`.
pub fn parse_durability(text: &str) -> Result<Durability> {
    let mode = match text {
        "sync" => Durability::Sync,
        "none" => Durability::None,
        "buffered" => Durability::Buffered { max_delay: Duration::from_millis(100) },
        other => match other.strip_prefix("buffered:").map(str::parse::<u64>) {
            Some(Ok(ms)) => Durability::Buffered { max_delay: Duration::from_millis(ms) },
            _ => {
                return Err(bad(
                    "durability",
                    format!("`{text}`: expected sync, buffered, buffered:MS or none"),
                ));
            }
        },
    };
    mode.validate()?;
    Ok(mode)
}

fn check_combinations(args: &BenchArgs, kind: WorkloadKind) -> Result<()> {
    let only = |given: bool, flag: &'static str, workload: WorkloadKind| {
        if given && kind != workload {
            return Err(bad(
                "workload",
                format!("--{flag} applies to --workload {workload}, not {kind}"),
            ));
        }
        Ok(())
    };
    only(args.mix.is_some(), "mix", WorkloadKind::Gr)?;
    only(args.warehouses.is_some(), "warehouses", WorkloadKind::Tpcc)?;
    only(args.ltu.is_some(), "ltu", WorkloadKind::Ltu)?;
    only(args.trace.is_some(), "trace", WorkloadKind::Replay)?;
    if kind == WorkloadKind::Replay && args.trace.is_none() {
        return Err(bad(
            "trace",
            "--workload replay needs --trace FILE (written by --record FILE)",
        ));
    }
    if args.preload.is_some() && matches!(kind, WorkloadKind::Tpcc | WorkloadKind::Replay) {
        return Err(bad(
            "preload",
            format!(
                "--preload does not apply to {kind} (its preload is defined by {})",
                if kind == WorkloadKind::Tpcc { "--warehouses" } else { "the trace" }
            ),
        ));
    }
    if args.ops.is_some() && args.duration.is_some() {
        return Err(bad("duration", "give --ops or --duration, not both"));
    }
    let open = args.readers.is_some() || args.writers.is_some();
    if open && args.threads.is_some() {
        return Err(bad(
            "threads",
            "--threads is the closed loop, --readers/--writers the open system; choose one",
        ));
    }
    if !open && (args.rate.is_some() || args.queue_slots.is_some()) {
        return Err(bad(
            "rate",
            "--rate and --queue-slots belong to the open system; add --readers and --writers",
        ));
    }
    if let Some(device) = &args.device {
        lamina_storage::DeviceProfile::from_name(device)?;
    }
    if args.emulate && args.device.is_none() {
        return Err(bad("emulate", "--emulate imposes a --device profile; give --device PROFILE"));
    }
    if args.record.is_some() {
        if args.duration.is_some() {
            return Err(bad("record", "--record needs a request count (--ops), not --duration"));
        }
        let outputs = args.json.is_some()
            || args.plot.is_some()
            || args.csv_timeline.is_some()
            || !args.engines.is_empty();
        if outputs || args.experiment.is_some() || args.rounds != 1 {
            return Err(bad(
                "record",
                "--record only writes the workload to a file; it runs no engine (drop --engines, --json, --plot, --csv-timeline, --rounds, --experiment)",
            ));
        }
    }
    Ok(())
}

fn workload_config(args: &BenchArgs, kind: WorkloadKind) -> Result<WorkloadConfig> {
    let mut w = WorkloadConfig::new(kind, args.seed);
    if let Some(preload) = args.preload {
        w.preload = preload;
    }
    if let Some(k) = args.key_bytes {
        w.key_bytes = k;
    }
    if let Some(v) = args.value_bytes {
        w.value_bytes = v;
    }
    if let Some(mix) = &args.mix {
        w.mix = mix.parse::<Mix>()?;
    }
    if let Some(n) = args.warehouses {
        w.warehouses = n;
    }
    if let Some(ltu) = args.ltu {
        w.ltu_percent = ltu;
    }
    w.trace.clone_from(&args.trace);
    w.validate()?;
    Ok(w)
}

/// The engines' settings: the flags, else what the experiment fixes, else the defaults.
fn engine_params(args: &BenchArgs, experiment: Option<Experiment>) -> Result<EngineParams> {
    let defaults = EngineParams::default();
    let tuning = experiment.map(Experiment::engine_tuning).unwrap_or_default();
    Ok(EngineParams {
        durability: parse_durability(args.durability.as_deref().unwrap_or("none"))?,
        memory_budget_bytes: args
            .memory_budget_bytes
            .or(tuning.memory_budget_bytes)
            .unwrap_or(defaults.memory_budget_bytes),
        cache_bytes: args.cache_bytes.or(tuning.cache_bytes).unwrap_or(defaults.cache_bytes),
        device: args.device.clone(),
        emulate: args.emulate,
        fdtree_size_ratio: args.fdtree_size_ratio.or(tuning.fdtree_size_ratio),
        fdtree_key_bytes_max: args.fdtree_key_bytes_max.or(tuning.fdtree_key_bytes_max),
        nbtree_fanout: args.nbtree_fanout,
    })
}

/// The command line's say in an experiment's size.
fn scale(args: &BenchArgs) -> Scale {
    Scale {
        ops: args.ops,
        preload: args.preload,
        key_bytes: args.key_bytes,
        value_bytes: args.value_bytes,
    }
}

fn duration(args: &BenchArgs) -> Result<Option<Duration>> {
    args.duration
        .map(|secs| {
            Duration::try_from_secs_f64(secs).ok().filter(|d| !d.is_zero()).ok_or_else(|| {
                bad("duration", format!("must be a positive number of seconds, got {secs}"))
            })
        })
        .transpose()
}

/// The closed loop (`--threads`, default 1) or, with `--readers`/`--writers`, the open
/// system; an experiment's runner unless overridden.
fn runner_kind(
    args: &BenchArgs,
    plan: Option<&ExperimentPlan>,
    workload: &WorkloadConfig,
) -> Result<RunnerKind> {
    let kind = workload.kind;
    let runner = if args.readers.is_some() || args.writers.is_some() {
        RunnerKind::Open {
            readers: args.readers.unwrap_or(0),
            writers: args.writers.unwrap_or(0),
            rate_per_s: args.rate,
            queue_slots: args.queue_slots.unwrap_or(DEFAULT_QUEUE_SLOTS),
        }
    } else {
        match (args.threads, plan) {
            (Some(threads), _) => RunnerKind::Closed { threads },
            (None, Some(plan)) => plan.runner,
            (None, None) => RunnerKind::Closed { threads: 1 },
        }
    };
    if let RunnerKind::Open { readers, writers, .. } = runner {
        let reads = kind.read_fraction(workload);
        if readers == 0 && reads != Some(0.0) {
            return Err(bad(
                "readers",
                format!("workload {kind} issues lookups; give --readers T_r of at least 1"),
            ));
        }
        if writers == 0 && reads != Some(1.0) {
            return Err(bad(
                "writers",
                format!("workload {kind} issues modifications; give --writers T_w of at least 1"),
            ));
        }
    }
    Ok(runner)
}

/// `--experiment` and `--out` go together; flags an experiment fixes itself are refused.
fn check_experiment_flags(args: &BenchArgs, experiment: Option<Experiment>) -> Result<()> {
    match (&experiment, &args.out) {
        (Some(_), None) => {
            return Err(bad("out", "--experiment writes its report into --out DIR; give --out"));
        }
        (None, Some(_)) => {
            return Err(bad(
                "out",
                "--out goes with --experiment (use --json/--plot/--csv-timeline otherwise)",
            ));
        }
        _ => {}
    }
    if experiment.is_some() && args.workload.is_some() {
        return Err(bad("experiment", "--experiment fixes the workload; drop --workload"));
    }
    let Some(experiment) = experiment else {
        return Ok(());
    };
    if experiment == Experiment::Scale && args.threads.is_some() {
        return Err(bad(
            "threads",
            "--threads does not apply to --experiment scale (its phases use 1 and 2 client threads); scale it with --ops",
        ));
    }
    let fixed = [
        ("mix", args.mix.is_some()),
        ("duration", args.duration.is_some()),
        ("warmup", args.warmup.is_some()),
        ("bucket-ops", args.bucket_ops.is_some()),
        ("readers", args.readers.is_some()),
        ("writers", args.writers.is_some()),
        ("rate", args.rate.is_some()),
        ("queue-slots", args.queue_slots.is_some()),
        ("json", args.json.is_some()),
        ("plot", args.plot.is_some()),
        ("csv-timeline", args.csv_timeline.is_some()),
    ];
    if let Some((flag, _)) = fixed.iter().find(|(_, given)| *given) {
        return Err(bad(
            "experiment",
            format!(
                "--{flag} does not apply to --experiment (it fixes the workload and writes into --out; scale it with --ops, --preload, --threads)"
            ),
        ));
    }
    Ok(())
}

/// The whole configuration for `args` (global `--dir` and `--engine` given separately).
pub fn bench_config(
    args: &BenchArgs,
    dir: Option<&Path>,
    engine: Option<&str>,
) -> Result<(BenchConfig, Option<Experiment>)> {
    server::refuse_server_flags(args)?;
    let experiment = args.experiment.as_deref().map(str::parse::<Experiment>).transpose()?;
    check_experiment_flags(args, experiment)?;
    if dir.is_some() && args.keep {
        return Err(bad(
            "keep",
            "--keep is for the temporary directory; files under --dir are always kept",
        ));
    }
    let mut engines = args.engines.clone();
    if let Some(engine) = engine {
        if !engines.is_empty() {
            return Err(bad("engines", "give --engines A,B or --engine A, not both"));
        }
        engines.push(engine.to_string());
    }
    if engines.iter().any(String::is_empty) {
        return Err(bad("engines", "empty engine name in --engines"));
    }
    // A build without the peers lists none of them; asking for one says what to rebuild.
    if let Some(peer) = engines.iter().find(|e| PeerFactory::is_peer(e))
        && !peers_built()
    {
        return Err(Error::Unsupported {
            what: format!("peer engine `{peer}`: {}", lamina_peers_feature_missing()),
        });
    }
    let plan = experiment.map(|e| e.plan(args.seed, scale(args))).transpose()?;
    let kind = match (&plan, &args.workload) {
        (Some(plan), _) => plan.workload.kind,
        (None, Some(name)) => name.parse::<WorkloadKind>()?,
        (None, None) => WorkloadKind::Contest,
    };
    check_combinations(args, kind)?;
    let mut workload = workload_config(args, kind)?;
    if let Some(plan) = &plan {
        if args.preload.is_none() {
            workload.preload = plan.workload.preload;
        }
        if args.value_bytes.is_none() {
            workload.value_bytes = plan.workload.value_bytes;
        }
    }
    let duration = duration(args)?;
    let ops = match (args.ops, duration, &plan) {
        (Some(ops), _, _) => Some(ops),
        (None, Some(_), _) => None,
        (None, None, Some(plan)) => Some(plan.ops),
        (None, None, None) => Some(DEFAULT_OPS),
    };
    let runner = runner_kind(args, plan.as_ref(), &workload)?;
    let warmup_ops = args
        .warmup
        .or(plan.as_ref().map(|p| p.warmup_ops))
        .unwrap_or_else(|| default_warmup_ops(ops));
    let bucket_ops = args
        .bucket_ops
        .or(plan.as_ref().map(|p| p.bucket_ops))
        .unwrap_or_else(|| default_bucket_ops(ops));
    let run = RunConfig {
        runner,
        ops,
        duration,
        warmup_ops,
        bucket_ops,
        interval: if args.interval_ms == 0 {
            DEFAULT_INTERVAL
        } else {
            Duration::from_millis(args.interval_ms)
        },
        progress: !args.quiet,
    };
    if args.interval_ms == 0 {
        return Err(bad("interval-ms", "must be at least 1"));
    }
    run.validate()?;
    let config = BenchConfig {
        engines,
        rounds: args.rounds,
        workload,
        run,
        engine_params: engine_params(args, experiment)?,
        dir: dir.map(Path::to_path_buf),
        keep: args.keep,
    };
    Ok((config, experiment))
}

fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

fn write_outputs(
    args: &BenchArgs,
    outcome: &BenchOutcome,
    experiment: Option<Experiment>,
) -> Result<Vec<FailedEngine>> {
    let table = render_table(&outcome.report);
    let json = serde_json::to_string_pretty(&outcome.report)
        .map_err(|e| Error::io("encoding the JSON report", std::io::Error::other(e)))?;
    if let Some(path) = &args.json {
        write_file(path, &(json.clone() + "\n"))?;
    }
    if let Some(path) = &args.csv_timeline {
        write_timeline_csv(&outcome.report, path)?;
    }
    if let Some(dir) = &args.plot {
        write_plots(outcome, dir)?;
    }
    if let (Some(experiment), Some(out)) = (experiment, &args.out) {
        std::fs::create_dir_all(out)
            .map_err(|e| Error::io(format!("creating {}", out.display()), e))?;
        let command: Vec<String> = std::env::args().collect();
        let markdown = format!(
            "# lamina bench --experiment {experiment}\n\nCommand: `{}`\n\nFiles: `report.json` (schema in docs/bench-json.md), `timeline.csv`, `plots/`.\n\n```\n{table}```\n",
            command.join(" ")
        );
        write_file(&out.join("report.md"), &markdown)?;
        write_file(&out.join("report.json"), &(json + "\n"))?;
        write_timeline_csv(&outcome.report, &out.join("timeline.csv"))?;
        write_plots(outcome, &out.join("plots"))?;
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(table.as_bytes()).map_err(|e| Error::io("printing the report", e))?;
    Ok(outcome.report.failed.clone())
}

/// Every engine this build can benchmark: lamina's own, then (feature `peers`) the peer
/// engines, added here as one more member.
fn engines() -> Factories {
    let mut members: Vec<Box<dyn EngineFactory>> = vec![Box::new(LaminaFactory)];
    if peers_built() {
        members.push(Box::new(PeerFactory));
    }
    Factories::new(members)
}

/// Creates the directories the outputs go to before anything runs, so a bad path fails
/// at once rather than after the benchmark.
fn prepare_output_dirs(args: &BenchArgs) -> Result<()> {
    let parents = [&args.json, &args.csv_timeline].into_iter().flatten().filter_map(|p| p.parent());
    let dirs = [&args.plot, &args.out].into_iter().flatten().map(std::path::PathBuf::as_path);
    for dir in parents.chain(dirs).filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    Ok(())
}

/// Runs `lamina bench`. `dir` and `engine` are the global `--dir` and `--engine`.
///
/// Returns the engines that failed: the benchmark went on without them and every report
/// was written, with their rows showing the error; the caller exits non-zero
/// ([`failure_message`]). With `--server`, loads that server instead (no engine runs);
/// wrong replies are an error returned after the reports are written.
pub fn run(
    args: &BenchArgs,
    dir: Option<&Path>,
    engine: Option<&str>,
) -> Result<Vec<FailedEngine>> {
    if args.server.is_some() {
        return server::run(args, dir, engine).map(|()| Vec::new());
    }
    run_with(&engines(), args, dir, engine)
}

/// [`run`] against `factory`'s engines.
fn run_with(
    factory: &dyn EngineFactory,
    args: &BenchArgs,
    dir: Option<&Path>,
    engine: Option<&str>,
) -> Result<Vec<FailedEngine>> {
    let (config, experiment) = bench_config(args, dir, engine)?;
    if let Some(path) = &args.record {
        let ops = config.run.total_ops().expect("validated: --record has a request count");
        let records = record_trace(config.workload.build()?.as_mut(), ops, path)?;
        eprintln!(
            "lamina bench: wrote {records} requests ({ops} after the preload) to {}",
            path.display()
        );
        return Ok(Vec::new());
    }
    prepare_output_dirs(args)?;
    if let (Some(experiment), Some(out)) = (experiment, &args.out)
        && experiment != Experiment::FdfcFigure1
    {
        return run_named_experiment(factory, args, experiment, config, out);
    }
    let outcome = run_bench(factory, &config, &mut |note| eprintln!("lamina bench: {note}"))?;
    write_outputs(args, &outcome, experiment)
}

/// The experiment's phases at the scale the command line asked for.
fn experiment_request(
    args: &BenchArgs,
    experiment: Experiment,
    base: BenchConfig,
) -> Result<ExperimentRequest> {
    Ok(ExperimentRequest {
        experiment,
        phases: experiment.phases(args.seed, scale(args))?,
        runner_override: args.threads.map(|threads| RunnerKind::Closed { threads }),
        engines_given: !base.engines.is_empty(),
        base,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    })
}

/// The one line `lamina bench` ends with when engines failed (each failure was already
/// printed as it happened, and the reports show it in the engine's row).
pub fn failure_message(failed: &[FailedEngine]) -> String {
    let mut engines: Vec<&str> = Vec::new();
    for f in failed {
        if !engines.contains(&f.engine.as_str()) {
            engines.push(&f.engine);
        }
    }
    let (count, noun) = if engines.len() == 1 { (1, "engine") } else { (engines.len(), "engines") };
    format!(
        "{count} {noun} failed ({}); every report was written, with the error in the engine's row",
        engines.join(", ")
    )
}

/// Runs a multi-phase experiment and writes `report.md`, `report.json`,
/// `<phase>/timeline.csv` and `plots/` into `out`; prints the markdown.
fn run_named_experiment(
    factory: &dyn EngineFactory,
    args: &BenchArgs,
    experiment: Experiment,
    base: BenchConfig,
    out: &Path,
) -> Result<Vec<FailedEngine>> {
    let request = experiment_request(args, experiment, base)?;
    let outcome: ExperimentOutcome =
        run_experiment(factory, &request, &mut |note| eprintln!("lamina bench: {note}"))?;
    let roles: Vec<_> = outcome.phases.iter().map(|(p, _)| p.role).collect();
    let markdown = outcome.report.to_markdown(&roles);
    let json = serde_json::to_string_pretty(&outcome.report)
        .map_err(|e| Error::io("encoding the JSON report", std::io::Error::other(e)))?;
    write_file(&out.join("report.md"), &markdown)?;
    write_file(&out.join("report.json"), &(json + "\n"))?;
    for (phase, bench) in &outcome.phases {
        let dir = out.join(&phase.name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        write_timeline_csv(&bench.report, &dir.join("timeline.csv"))?;
    }
    write_experiment_plots(&outcome, &out.join("plots"))?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(markdown.as_bytes()).map_err(|e| Error::io("printing the report", e))?;
    Ok(outcome.report.failed.iter().map(|f| f.failure.clone()).collect())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        bench: BenchArgs,
    }

    fn args(line: &str) -> BenchArgs {
        Cli::try_parse_from(std::iter::once("bench").chain(line.split_whitespace()))
            .expect("clap accepts the flags")
            .bench
    }

    fn config(line: &str) -> Result<(BenchConfig, Option<Experiment>)> {
        bench_config(&args(line), None, None)
    }

    /// lamina's engines plus `broken`, which never opens (a test-only engine: the CLI
    /// offers no failing engine of its own).
    struct WithBroken;

    impl EngineFactory for WithBroken {
        fn engines(&self) -> Vec<lamina_bench::EngineInfo> {
            let mut all = LaminaFactory.engines();
            all.push(lamina_bench::EngineInfo::new("broken", "fails to open"));
            all
        }
        fn check(&self, name: &str, params: &EngineParams) -> Result<()> {
            if name == "broken" { Ok(()) } else { LaminaFactory.check(name, params) }
        }
        fn open(
            &self,
            name: &str,
            dir: &Path,
            params: &EngineParams,
        ) -> Result<std::sync::Arc<dyn lamina::OrderedIndex>> {
            if name == "broken" {
                return Err(Error::NoSpace {
                    context: format!("test engine in {}", dir.display()),
                });
            }
            LaminaFactory.open(name, dir, params)
        }
    }

    #[test]
    fn a_failed_engine_is_reported_after_every_output_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let line = format!(
            "--quiet --engines broken,fdtree --workload insert --ops 300 --json {}",
            json.display()
        );
        let failed = run_with(&WithBroken, &args(&line), None, None).unwrap();
        assert_eq!(failed.len(), 1);
        assert_eq!((failed[0].engine.as_str(), failed[0].step.as_str()), ("broken", "open"));
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(report["failed"][0]["engine"], "broken");
        assert!(report["failed"][0]["error"].as_str().unwrap().contains("no space left"));
        assert_eq!(report["summary"][0]["engine"], "fdtree-fc", "the alias resolves");
        assert_eq!(report["summary"].as_array().unwrap().len(), 1);
        let message = failure_message(&failed);
        assert!(message.starts_with("1 engine failed (broken)"), "{message}");

        let out = dir.path().join("scale");
        let line = format!(
            "--quiet --experiment scale --ops 200 --engines mem,broken --out {}",
            out.display()
        );
        let failed = run_with(&WithBroken, &args(&line), None, None).unwrap();
        assert_eq!(failed.iter().map(|f| f.engine.as_str()).collect::<Vec<_>>(), ["broken"]);
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        assert_eq!(report["failed"][0]["phase"], "insert");
        assert_eq!(report["failed"][0]["step"], "open");
        assert_eq!(report["scale"]["engines"][1]["failed"]["engine"], "broken");
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("| broken | failed (insert: open) |"), "{md}");
        assert!(out.join("plots/insert_max_vs_size.png").exists());
    }

    fn refused(line: &str, fragment: &str) {
        let err = config(line).expect_err(line).to_string();
        assert!(err.contains(fragment), "`{line}`: {err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }

    #[test]
    fn defaults_are_a_small_contest_comparison() {
        let (c, e) = config("").unwrap();
        assert!(e.is_none());
        assert!(c.engines.is_empty(), "all available engines");
        assert_eq!(c.workload.kind, WorkloadKind::Contest);
        assert_eq!(c.run.ops, Some(DEFAULT_OPS));
        assert_eq!(c.run.runner, RunnerKind::Closed { threads: 1 });
        assert_eq!(c.engine_params.durability, Durability::None);
        assert_eq!(c.run.warmup_ops, 5000);
    }

    #[test]
    fn flags_reach_the_config() {
        let (c, _) = config("--engines mem --workload gr --mix 2:1:1 --ops 10 --readers 2 --writers 1 --rate 1000 --durability buffered:50").unwrap();
        assert_eq!(c.engines, vec!["mem".to_string()]);
        assert_eq!(c.workload.mix.weights.map(|w| w as u32), [2, 1, 1]);
        assert_eq!(
            c.run.runner,
            RunnerKind::Open {
                readers: 2,
                writers: 1,
                rate_per_s: Some(1000.0),
                queue_slots: DEFAULT_QUEUE_SLOTS
            }
        );
        assert_eq!(
            c.engine_params.durability,
            Durability::Buffered { max_delay: Duration::from_millis(50) }
        );
        let (c, e) = config("--experiment fdfc-figure1 --out x").unwrap();
        assert_eq!(e, Some(Experiment::FdfcFigure1));
        assert_eq!(c.workload.kind, WorkloadKind::Insert);
        assert_eq!(c.run.bucket_ops, 1000);
        let (c, _) = config("--experiment fdfc-figure1 --out x --ops 2000000").unwrap();
        assert_eq!((c.run.ops, c.run.bucket_ops), (Some(2_000_000), 10_000));
        let (c, e) = config("--experiment fdfc-figure6 --out x --preload 100 --ops 1000").unwrap();
        assert_eq!(e, Some(Experiment::FdfcFigure6));
        assert_eq!((c.workload.kind, c.workload.preload), (WorkloadKind::Gr, 100));
        let open = RunnerKind::Open { readers: 6, writers: 2, rate_per_s: None, queue_slots: 5000 };
        assert_eq!(c.run.runner, open);
        let p = &c.engine_params;
        assert_eq!((p.memory_budget_bytes, p.cache_bytes), (256 << 10, 15 << 20));
        assert_eq!((p.fdtree_size_ratio, p.fdtree_key_bytes_max), (Some(24), Some(256)));
        let (c, _) = config(
            "--experiment fdfc-figure6 --out x --fdtree-size-ratio 8 --memory-budget-bytes 1048576",
        )
        .unwrap();
        assert_eq!(
            (c.engine_params.fdtree_size_ratio, c.engine_params.memory_budget_bytes),
            (Some(8), 1 << 20)
        );
        let (c, _) = config("--experiment contest --out x").unwrap();
        assert_eq!(c.engine_params.fdtree_size_ratio, None);
        let (c, e) = config("--experiment contest --out x").unwrap();
        assert_eq!(e, Some(Experiment::Contest));
        assert_eq!(c.run.runner, RunnerKind::Closed { threads: 32 });
        let (c, e) = config("--experiment scale --out x").unwrap();
        assert_eq!(e, Some(Experiment::Scale));
        assert_eq!((c.run.ops, c.run.bucket_ops), (Some(1_000_000), 10_000));
        let p = &c.engine_params;
        assert_eq!((p.cache_bytes, p.memory_budget_bytes), (64 << 20, 32 << 20));
        assert_eq!(p.durability, Durability::None);
        let (c, _) = config("--experiment scale --out x --ops 500 --cache-bytes 2097152").unwrap();
        assert_eq!((c.run.ops, c.engine_params.cache_bytes), (Some(500), 2 << 20));
        let (c, e) = config("--experiment nbtree-insert --out x --ops 1000").unwrap();
        assert_eq!(e, Some(Experiment::NbtreeInsert));
        assert_eq!((c.workload.kind, c.run.ops), (WorkloadKind::Insert, Some(1000)));
        let (c, _) = config("--engines fdtree-xm --fdtree-size-ratio 24").unwrap();
        assert_eq!(c.engine_params.fdtree_size_ratio, Some(24));
        assert_eq!(c.engine_params.nbtree_fanout, None);
        let (c, _) = config("--experiment nbtree-insert --out x --nbtree-fanout 5").unwrap();
        assert_eq!(c.engine_params.nbtree_fanout, Some(5));
        let (c, _) = config("--duration 1.5").unwrap();
        assert_eq!((c.run.ops, c.run.duration), (None, Some(Duration::from_millis(1500))));
    }

    #[test]
    fn bad_combinations_are_refused_in_one_line() {
        refused("--ops 10 --duration 1", "not both");
        refused("--threads 2 --readers 1", "choose one");
        refused("--rate 10", "open system");
        refused("--mix 1:1:1", "--mix applies to --workload gr");
        refused("--workload contest --warehouses 3", "--warehouses applies");
        refused("--workload tpcc --preload 5", "--preload does not apply");
        refused("--workload replay", "needs --trace");
        refused("--trace t.bin", "--trace applies");
        refused("--experiment contest", "give --out");
        refused("--out d", "--out goes with --experiment");
        refused("--experiment contest --out d --workload gr", "drop --workload");
        refused("--experiment nope --out d", "unknown experiment");
        refused("--experiment fdfc-vs-btree --out d --mix 1:1:1", "--mix does not apply");
        refused("--experiment contest --out d --json j", "--json does not apply");
        refused("--experiment nbtree-insert --out d --duration 3", "--duration does not apply");
        refused("--experiment scale --out d --threads 4", "--threads does not apply");
        refused("--experiment scale --out d --preload 10", "empty store");
        refused("--experiment scale --out d --key-bytes 4", "at least 8");
        refused("--workload nope", "unknown workload");
        refused("--emulate", "give --device");
        refused("--device floppy", "known profiles: host");
        refused("--durability maybe", "expected sync");
        refused("--durability buffered:0", "durability");
        refused("--workload gr --mix 1:x:1", "mix");
        refused("--workload gr --mix 0:0:0", "all zero");
        refused("--key-bytes 4", "key-bytes");
        refused("--workload tpcc --key-bytes 8", "4 bytes");
        refused("--value-bytes 5000", "value-bytes");
        refused("--workload tpcc --warehouses 300", "warehouses");
        refused("--threads 0", "threads");
        refused("--ops 0", "ops");
        refused("--duration=-1", "duration");
        refused("--readers 2", "--writers");
        refused("--workload insert --readers 1 --writers 0", "--writers");
        refused("--record t --duration 1", "--record");
        refused("--record t --engines mem", "--record");
        refused("--interval-ms 0", "interval");
        refused("--readers 1 --writers 1 --rate 0", "rate");
        refused("--workload contest --preload 0", "preload");
    }
}
