//! Shuttle's atomic as a [`VersionWord`], and the runner the shuttle tests share: every
//! version-word operation (and every `schedule_point`) is a place where shuttle's seeded
//! random and PCT schedulers may switch threads.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use lamina_fptree::inner::VersionWord;
use shuttle::scheduler::{PctScheduler, RandomScheduler};
use shuttle::{Config, Runner, thread};

/// Schedules per model and scheduler: enough to find the races the tests plant when a
/// protocol is broken, small enough for `cargo test`.
pub const ITERATIONS: usize = 300;
/// The schedulers' seed.
pub const SEED: u64 = 19;

/// A version word made of shuttle's atomic.
#[derive(Debug)]
pub struct ShuttleWord(pub shuttle::sync::atomic::AtomicU64);

impl VersionWord for ShuttleWord {
    fn new(value: u64) -> Self {
        Self(shuttle::sync::atomic::AtomicU64::new(value))
    }
    fn load(&self, order: Ordering) -> u64 {
        self.0.load(order)
    }
    fn store(&self, value: u64, order: Ordering) {
        self.0.store(value, order);
    }
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        self.0.compare_exchange(current, new, success, failure)
    }
    fn schedule_point() {
        thread::yield_now();
    }
    fn backoff() {
        thread::yield_now();
    }
}

/// Runs `test` under the random scheduler and then the PCT scheduler (depth 3).
pub fn check(test: impl Fn() + Send + Sync + 'static) {
    let test = Arc::new(test);
    let random = Arc::clone(&test);
    Runner::new(RandomScheduler::new_from_seed(SEED, ITERATIONS), Config::new())
        .run(move || random());
    Runner::new(PctScheduler::new_from_seed(SEED, 3, ITERATIONS), Config::new())
        .run(move || test());
}
