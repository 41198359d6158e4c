//! `lamina-sim ENGINE|all [CRASHES] [SEED]`: the deterministic crash simulation (see the
//! crate docs). Prints one line per engine; on the first failure prints the seed, the engine
//! and the command replaying it, and exits 1. A watchdog ends the process (exit 3) naming the
//! seed when no seed finished for `HANG_SECS` seconds: a hang is a failure too.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lamina_sim::run::SEEDS_STARTED;
use lamina_sim::{EngineName, run_seeds};
use parking_lot_free::Current;

/// Seconds without a new seed after which the run counts as hung.
const HANG_SECS: u64 = 120;

mod parking_lot_free {
    use std::sync::Mutex;

    /// The seed running now, for the watchdog's message.
    #[derive(Debug, Default)]
    pub struct Current(pub Mutex<Option<(&'static str, u64)>>);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: lamina-sim ENGINE|all [CRASHES] [SEED]";
    let Some(which) = args.first() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let parse = |i: usize, default: u64| {
        args.get(i).map_or(Ok(default), |s| s.parse::<u64>()).unwrap_or_else(|_| {
            eprintln!("{usage}");
            std::process::exit(2)
        })
    };
    let (crashes, seed) = (parse(1, 10_000), parse(2, 1));
    let engines: Vec<EngineName> = if which == "all" {
        EngineName::ALL.to_vec()
    } else if let Some(engine) = EngineName::parse(which) {
        vec![engine]
    } else {
        let names: Vec<_> = EngineName::ALL.iter().map(|e| e.name()).collect();
        eprintln!("unknown engine {which:?}; engines: {} or all", names.join(" "));
        std::process::exit(2);
    };
    let current = Arc::new(Current::default());
    start_watchdog(current.clone());
    let started = Instant::now();
    for engine in engines {
        let t0 = Instant::now();
        let outcome = run_seeds(engine, crashes, seed, |engine, seed| {
            *current.0.lock().unwrap() = Some((engine.name(), seed));
        });
        let secs = t0.elapsed().as_secs_f64();
        let t = outcome.tally;
        println!(
            "{:<13} crashes {:>6} ({:.0}/s, {:.1} s; {} in recovery, {} in the workload) seeds {} \
             writes acked {} keys checked {} recoveries checked {} | eio {} enospc {} (refused {}, \
             kept working {}) flips {} (clear errors {}, older keys {}, fresh stores {}) | medium ops {} digest {:016x}",
            engine.name(),
            t.crashes,
            t.crashes as f64 / secs.max(1e-9),
            secs,
            t.crashes_in_recovery,
            t.crashes_in_workload,
            outcome.seeds,
            t.writes_acked,
            t.keys_checked,
            t.recoveries_checked,
            t.eio_cycles,
            t.enospc_cycles,
            t.no_space_errors,
            t.no_space_recovered,
            t.flip_cycles,
            t.clear_errors,
            t.flip_older_keys,
            t.fresh_stores,
            t.medium_ops,
            t.ops_digest,
        );
        if let Some(failure) = outcome.failure {
            println!("{failure}");
            std::process::exit(1);
        }
    }
    println!("all passed in {:.1} s", started.elapsed().as_secs_f64());
}

fn start_watchdog(current: Arc<Current>) {
    std::thread::spawn(move || {
        let mut last = (SEEDS_STARTED.load(Ordering::Relaxed), Instant::now());
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let seen = SEEDS_STARTED.load(Ordering::Relaxed);
            if seen != last.0 {
                last = (seen, Instant::now());
            } else if last.1.elapsed() > Duration::from_secs(HANG_SECS) {
                let running = *current.0.lock().unwrap();
                if let Some((engine, seed)) = running {
                    println!(
                        "FAILED engine {engine} seed {seed}: hung (no progress for {HANG_SECS} s)\n  \
                         replay: scripts/simulate {engine} {} {seed}",
                        lamina_sim::CYCLES_PER_SEED
                    );
                }
                std::process::exit(3);
            }
        }
    });
}
