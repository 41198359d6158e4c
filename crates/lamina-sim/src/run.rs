//! Runs many seeds of one engine, turning panics into failures that name their seed.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::driver::{CYCLES_PER_SEED, Failure, Tally, run_seed};
use crate::engines::EngineName;

/// Seeds started so far by this process (a watchdog compares it over time to find a hang).
pub static SEEDS_STARTED: AtomicU64 = AtomicU64::new(0);

/// What a run of seeds did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Totals of the seeds that ran.
    pub tally: Tally,
    /// Seeds run.
    pub seeds: u64,
    /// The first failure (the run stops there).
    pub failure: Option<Failure>,
}

/// Runs `engine` from seed `first_seed` on until `crashes` crash cycles ran (the last seed
/// may run fewer cycles), stopping at the first failure. `on_seed` is told each seed before
/// it runs (for progress and watchdog messages).
pub fn run_seeds(
    engine: EngineName,
    crashes: u64,
    first_seed: u64,
    mut on_seed: impl FnMut(EngineName, u64),
) -> Outcome {
    let mut outcome = Outcome { tally: Tally::default(), seeds: 0, failure: None };
    let mut seed = first_seed;
    while outcome.tally.crashes < crashes {
        let cycles = (crashes - outcome.tally.crashes).min(CYCLES_PER_SEED);
        on_seed(engine, seed);
        SEEDS_STARTED.fetch_add(1, Ordering::Relaxed);
        let result = catch_unwind(AssertUnwindSafe(|| run_seed(engine, seed, cycles)));
        outcome.seeds += 1;
        match result {
            Ok(Ok(tally)) => outcome.tally.add(&tally),
            Ok(Err(failure)) => {
                outcome.failure = Some(failure);
                return outcome;
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                outcome.failure = Some(Failure {
                    engine,
                    seed,
                    cycle: 0,
                    plan: None,
                    what: format!("panic: {what}"),
                });
                return outcome;
            }
        }
        seed += 1;
    }
    outcome
}
