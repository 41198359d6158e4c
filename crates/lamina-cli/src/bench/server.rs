//! `lamina bench --server HOST:PORT`: the memcached load generator of
//! `lamina_bench::memcached` against a running server, with the flags that apply to it
//! and a one-line refusal of those that do not.

use std::{io::Write, path::Path, time::Duration};

use lamina::{Error, Result};
use lamina_bench::memcached::{KeySpace, LoadConfig, LoadReport, Phase, run_load};

use super::BenchArgs;

/// Flags of the in-process engine benchmark, which mean nothing against a server.
fn engine_flags(args: &BenchArgs) -> Vec<(&'static str, bool)> {
    vec![
        ("engines", !args.engines.is_empty()),
        ("workload", args.workload.is_some()),
        ("experiment", args.experiment.is_some()),
        ("out", args.out.is_some()),
        ("mix", args.mix.is_some()),
        ("warehouses", args.warehouses.is_some()),
        ("ltu", args.ltu.is_some()),
        ("trace", args.trace.is_some()),
        ("record", args.record.is_some()),
        ("preload", args.preload.is_some()),
        ("warmup", args.warmup.is_some()),
        ("durability", args.durability.is_some()),
        ("device", args.device.is_some()),
        ("emulate", args.emulate),
        ("threads", args.threads.is_some()),
        ("readers", args.readers.is_some()),
        ("writers", args.writers.is_some()),
        ("rate", args.rate.is_some()),
        ("queue-slots", args.queue_slots.is_some()),
        ("rounds", args.rounds != 1),
        ("bucket-ops", args.bucket_ops.is_some()),
        ("memory-budget-bytes", args.memory_budget_bytes.is_some()),
        ("fdtree-size-ratio", args.fdtree_size_ratio.is_some()),
        ("fdtree-key-bytes-max", args.fdtree_key_bytes_max.is_some()),
        ("nbtree-fanout", args.nbtree_fanout.is_some()),
        ("cache-bytes", args.cache_bytes.is_some()),
        ("keep", args.keep),
        ("csv-timeline", args.csv_timeline.is_some() || args.plot.is_some()),
    ]
}

/// Refuses `--connections`, `--pipeline`, `--keys`, `--phases` and `--get-percent`
/// without `--server`.
pub fn refuse_server_flags(args: &BenchArgs) -> Result<()> {
    let server_only = [
        ("connections", args.connections.is_some()),
        ("pipeline", args.pipeline.is_some()),
        ("keys", args.keys.is_some()),
        ("phases", !args.phases.is_empty()),
        ("get-percent", args.get_percent.is_some()),
    ];
    match server_only.iter().find(|(_, given)| *given) {
        Some((flag, _)) if args.server.is_none() => Err(Error::option(
            "server",
            format!("--{flag} applies to a server load; add --server HOST:PORT"),
        )),
        _ => Ok(()),
    }
}

/// The load `args` ask for (`dir` and `engine` are the global flags, refused here).
pub fn load_config(
    args: &BenchArgs,
    dir: Option<&Path>,
    engine: Option<&str>,
) -> Result<LoadConfig> {
    let server = args.server.clone().expect("called for --server");
    let mut refused: Vec<&str> =
        engine_flags(args).iter().filter(|(_, given)| *given).map(|(flag, _)| *flag).collect();
    if dir.is_some() {
        refused.push("dir");
    }
    if engine.is_some() {
        refused.push("engine");
    }
    if let Some(flag) = refused.first() {
        return Err(Error::option(
            "server",
            format!(
                "--{flag} does not apply to --server (the server has its own engine and settings); the load takes --connections, --pipeline, --keys, --key-bytes, --value-bytes, --phases, --get-percent, --ops or --duration, --seed, --json, --quiet"
            ),
        ));
    }
    let mut config = LoadConfig::new(server);
    config.seed = args.seed;
    config.connections = args.connections.unwrap_or(config.connections);
    config.pipeline_depth = args.pipeline.unwrap_or(config.pipeline_depth);
    config.keys = KeySpace::new(
        args.keys.unwrap_or(config.keys.count()),
        args.key_bytes.unwrap_or(config.keys.key_bytes()),
        args.value_bytes.unwrap_or(config.keys.value_bytes()),
        args.seed,
    )?;
    if !args.phases.is_empty() {
        config.phases = args.phases.iter().map(|p| p.parse::<Phase>()).collect::<Result<_>>()?;
    }
    config.mixed_get_percent = args.get_percent.unwrap_or(config.mixed_get_percent);
    if let Some(secs) = args.duration {
        if args.ops.is_some() {
            return Err(Error::option("duration", "give --ops or --duration, not both"));
        }
        config.ops = None;
        config.duration = Some(Duration::try_from_secs_f64(secs).map_err(|_| {
            Error::option("duration", format!("must be a positive number of seconds, got {secs}"))
        })?);
    } else if let Some(ops) = args.ops {
        config.ops = Some(ops);
    }
    config.validate()?;
    Ok(config)
}

/// Runs the load, prints its table and writes `--json`. Wrong replies fail the command
/// after every report is written.
pub fn run(args: &BenchArgs, dir: Option<&Path>, engine: Option<&str>) -> Result<()> {
    let config = load_config(args, dir, engine)?;
    if let Some(parent) = args.json.as_deref().and_then(Path::parent)
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::io(format!("creating {}", parent.display()), e))?;
    }
    let quiet = args.quiet;
    let outcomes = run_load(&config, &mut |note| {
        if !quiet {
            eprintln!("lamina bench: {note}");
        }
    })?;
    let report = LoadReport::new(&config, &outcomes);
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::io("encoding the JSON report", std::io::Error::other(e)))?;
        std::fs::write(path, json + "\n")
            .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    }
    std::io::stdout()
        .lock()
        .write_all(report.to_table().as_bytes())
        .map_err(|e| Error::io("printing the report", e))?;
    if report.errors_total() > 0 {
        return Err(Error::io(
            format!("checking the replies of {}", config.server),
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} wrong replies ({}); every report was written",
                    report.errors_total(),
                    report.error_lines().join("; ")
                ),
            ),
        ));
    }
    Ok(())
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

    fn config(line: &str) -> Result<LoadConfig> {
        load_config(&args(line), None, None)
    }

    #[test]
    fn flags_reach_the_load() {
        let c = config("--server 127.0.0.1:1").unwrap();
        assert_eq!(c, LoadConfig::new("127.0.0.1:1"));
        let c = config(
            "--server h:2 --connections 3 --pipeline 4 --keys 500 --key-bytes 8 --value-bytes 10 --phases get,mixed --get-percent 50 --duration 2.5 --seed 7",
        )
        .unwrap();
        assert_eq!((c.server.as_str(), c.connections, c.pipeline_depth), ("h:2", 3, 4));
        assert_eq!(c.keys, KeySpace::new(500, 8, 10, 7).unwrap());
        assert_eq!(c.phases, [Phase::Get, Phase::Mixed]);
        assert_eq!((c.mixed_get_percent, c.seed), (50, 7));
        assert_eq!((c.ops, c.duration), (None, Some(Duration::from_millis(2500))));
        assert_eq!(config("--server h:2 --ops 9").unwrap().ops, Some(9));
    }

    #[test]
    fn flags_that_do_not_apply_are_refused_in_one_line() {
        let refused = |line: &str, fragment: &str| {
            let err = config(line).expect_err(line).to_string();
            assert!(err.contains(fragment), "`{line}`: {err}");
            assert!(!err.contains('\n'));
        };
        refused("--server h:1 --engines mem", "--engines does not apply");
        refused("--server h:1 --durability sync", "--durability does not apply");
        refused("--server h:1 --rounds 3", "--rounds does not apply");
        refused("--server h:1 --threads 3", "--threads does not apply");
        refused("--server h:1 --phases set,load", "unknown phase");
        refused("--server h:1 --ops 5 --duration 1", "not both");
        refused("--server h:1 --duration=-1", "duration");
        refused("--server h:1 --connections 0", "connections");
        refused("--server h:1 --keys 1000 --key-bytes 3", "key-bytes");
        refused("--server h:1 --get-percent 101", "get-percent");
        let err = load_config(&args("--server h:1"), Some(Path::new("d")), None).unwrap_err();
        assert!(err.to_string().contains("--dir does not apply"), "{err}");
        for line in ["--connections 2", "--keys 5", "--phases get", "--pipeline 2"] {
            let err = refuse_server_flags(&args(line)).unwrap_err().to_string();
            assert!(err.contains("add --server"), "{err}");
        }
        refuse_server_flags(&args("--server h:1 --keys 5")).unwrap();
    }
}
