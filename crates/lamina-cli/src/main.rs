//! `lamina`: the command-line interface.
//!
//! Every command prints one clear line to stderr and exits non-zero on error; it never
//! panics with a backtrace. Exit codes: 0 success, 1 key not found (`get`, `delete`),
//! 2 error.

#![forbid(unsafe_code)]

mod args;
mod bench;
mod data;
mod encoding;
mod serve;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};

/// Exit code of a failed command.
const EXIT_ERROR: u8 = 2;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        // A panic is a bug in lamina; say so in one line rather than a backtrace.
        eprintln!("lamina: internal error (please report): {info}");
    }));
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Engines => Ok(data::engines()),
        Command::Put { ref key, ref value } => data::put(&cli.global, key, value),
        Command::Get { ref key } => data::get(&cli.global, key),
        Command::Delete { ref key } => data::delete(&cli.global, key),
        Command::Scan { ref from, ref to, limit } => {
            data::scan(&cli.global, from.as_deref(), to.as_deref(), limit)
        }
        Command::Verify => data::verify(&cli.global),
        Command::Serve(ref args) => serve::run(&cli.global, args),
        Command::Bench(ref args) => {
            match bench::run(args, cli.global.dir.as_deref(), cli.global.engine.as_deref()) {
                Ok(failed) if failed.is_empty() => Ok(ExitCode::SUCCESS),
                // Every report is written; an engine's failure still fails the command.
                Ok(failed) => Err(bench::failure_message(&failed)),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("lamina: error: {message}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
