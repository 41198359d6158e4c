//! The `lamina-torture` binary: `lamina-torture --engine NAME --cycles N [--dir DIR]
//! [--seed S] [--kill-ms MIN-MAX]` runs the parent; `lamina-torture child ...` is the child
//! it starts (`lib.rs`); `lamina-torture scripted --engine NAME --dir DIR --ops N [--seed S]
//! [--crash]` runs the deterministic script of `scripted.rs` (killing itself after it with
//! `--crash`).

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use lamina::EngineKind;
use lamina_torture::parent::{self, Config};

const USAGE: &str = "usage: lamina-torture --engine NAME --cycles N [--dir DIR] [--seed S] \
                     [--kill-ms MIN-MAX]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lamina-torture: {e}");
            ExitCode::from(2)
        }
    }
}

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

fn run(args: &[String]) -> Result<(), String> {
    let engine_name = value_of(args, "--engine").ok_or(format!("--engine is required\n{USAGE}"))?;
    let engine = EngineKind::from_name(engine_name).map_err(|e| e.to_string())?;
    let seed: u64 = parsed(args, "--seed", Some(1))?;
    if args.first().map(String::as_str) == Some("child") {
        let dir: PathBuf = parsed(args, "--dir", None)?;
        let cycle: u64 = parsed(args, "--cycle", None)?;
        lamina_torture::child::run(&dir, engine, seed, cycle);
    }
    if args.first().map(String::as_str) == Some("scripted") {
        let dir: PathBuf = parsed(args, "--dir", None)?;
        let ops: u64 = parsed(args, "--ops", None)?;
        let crash = args.iter().any(|a| a == "--crash");
        let script = lamina_torture::scripted::script(seed, ops);
        return lamina_torture::scripted::run(&dir, engine, &script, crash)
            .map_err(|e| format!("scripted: {e}"));
    }
    let cycles: u64 = parsed(args, "--cycles", None)?;
    let dir: PathBuf = parsed(args, "--dir", Some(parent::default_dir(engine, seed)))?;
    let kill_ms = value_of(args, "--kill-ms").unwrap_or("200-1500");
    let (min, max) = kill_ms.split_once('-').ok_or(format!("--kill-ms: MIN-MAX\n{USAGE}"))?;
    let (min, max): (u64, u64) = (
        min.parse().map_err(|_| format!("--kill-ms: bad {min:?}"))?,
        max.parse().map_err(|_| format!("--kill-ms: bad {max:?}"))?,
    );
    if min >= max {
        return Err(format!("--kill-ms: {min} is not below {max}"));
    }
    parent::check_dir(&dir)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let config = Config { engine, dir: dir.clone(), cycles, seed, kill_after_ms: min..max, exe };
    let summary = parent::run(&config)?;
    println!(
        "{engine}: {} cycles, {} acknowledged operations checked, {} in flight at a kill \
         ({} found applied), {} keys present; store {}",
        summary.cycles,
        summary.acknowledged,
        summary.in_flight,
        summary.in_flight_applied,
        summary.keys_present,
        dir.display()
    );
    Ok(())
}
