//! `lamina-linearizability --engine NAME --rounds N [--seed S] [--clients C] [--keys K]
//! [--ops OPS_PER_CLIENT] [--states-max N] [--fault stale-reads|non-atomic-cas]`: records
//! and checks N histories on the engine (even
//! rounds `Durability::None`, odd rounds `Sync`), one line per round, and exits 1 on the
//! first history that is not linearizable or undecided (`--fault` breaks the store on
//! purpose, to see a violation reported).

use std::process::ExitCode;

use lamina::EngineKind;
use lamina_linearizability::engine::durability_of;
use lamina_linearizability::{Fault, Limits, Verdict, Workload, run_round};

const USAGE: &str = "usage: lamina-linearizability --engine NAME --rounds N [--seed S] \
                     [--clients C] [--keys K] [--ops OPS_PER_CLIENT] [--states-max N] \
                     [--fault stale-reads|non-atomic-cas]";

fn value_of<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

fn parsed<T: std::str::FromStr>(
    args: &[String],
    name: &str,
    default: Option<T>,
) -> Result<T, String> {
    match value_of(args, name) {
        Some(text) => text.parse().map_err(|_| format!("{name}: bad value {text:?}\n{USAGE}")),
        None => default.ok_or(format!("{name} is required\n{USAGE}")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("lamina-linearizability: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the rounds: whether every history was linearizable.
fn run(args: &[String]) -> Result<bool, String> {
    let engine_name = value_of(args, "--engine").ok_or(format!("--engine is required\n{USAGE}"))?;
    let engine = EngineKind::from_name(engine_name).map_err(|e| e.to_string())?;
    let rounds: u64 = parsed(args, "--rounds", None)?;
    let seed: u64 = parsed(args, "--seed", Some(1))?;
    let base = Workload {
        clients: parsed(args, "--clients", Some(8))?,
        keys: parsed(args, "--keys", Some(4))?,
        ops_per_client: parsed(args, "--ops", Some(1000))?,
        seed,
        filler: true,
    };
    base.validate()?;
    let fault_name = value_of(args, "--fault").unwrap_or("none");
    let fault =
        Fault::from_name(fault_name).ok_or(format!("--fault: unknown {fault_name:?}\n{USAGE}"))?;
    let defaults = Limits::default();
    let limits = Limits {
        states_visited_per_key_max: parsed(
            args,
            "--states-max",
            Some(defaults.states_visited_per_key_max),
        )?,
        ..defaults
    };
    let (mut operations, mut overlapping, mut states) = (0usize, 0usize, 0u64);
    for round in 0..rounds {
        let durability = durability_of(round);
        let workload = Workload { seed: seed.wrapping_mul(1_000_003).wrapping_add(round), ..base };
        let s = run_round(engine, durability, &workload, fault, &limits)?;
        operations += s.report.operations;
        overlapping += s.overlapping;
        states += s.report.states_visited;
        println!(
            "{engine} round {round} ({durability:?}, seed {}): {} operations on {} keys, {} \
             overlapping another, {} search states, {} filler writes, {} bytes written, {}: {}",
            workload.seed,
            s.report.operations,
            s.report.keys,
            s.overlapping,
            s.report.states_visited,
            s.filler_ops,
            s.bytes_written,
            s.background
                .iter()
                .map(|(name, n)| format!("{name} {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            match &s.report.verdict {
                Verdict::Linearizable => "linearizable".to_string(),
                Verdict::NotLinearizable(v) => format!("NOT LINEARIZABLE\n{v}"),
                Verdict::Undecided { key, reason } => format!("UNDECIDED (key {key}: {reason})"),
            }
        );
        if s.report.verdict != Verdict::Linearizable {
            return Ok(false);
        }
    }
    println!(
        "{engine}: {rounds} histories linearizable, {operations} operations ({overlapping} \
         overlapping another on the same key), {} clients, {} keys, {states} search states",
        base.clients, base.keys
    );
    Ok(true)
}
