//! The synchronization primitives the tree uses, in one place so that the `shuttle` feature
//! can swap them for shuttle's and explore interleavings of the real protocol
//! (`tests/shuttle.rs`). Memory reclamation (crossbeam-epoch) is not swapped: see the
//! module doc of [`crate::node`] for why that is sound and what it leaves untested.

#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, fence};
#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::{Mutex, RwLock};

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, fence};
#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::{Mutex, RwLock};

pub(crate) use std::sync::atomic::Ordering;

/// Gives the processor to another thread (a shuttle yield point under the feature).
pub(crate) fn yield_now() {
    #[cfg(not(feature = "shuttle"))]
    std::thread::yield_now();
    #[cfg(feature = "shuttle")]
    shuttle::thread::yield_now();
}

/// Spin, then yield, then sleep: for node locks, whose critical sections are short in
/// memory (a few rounds of `spin_loop`: the holder is usually running on another core) but
/// last a log sync in the durable engine (the holder waits for `fdatasync`; yielding, then
/// sleeping, leaves the cores to the flusher and to threads with work).
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    rounds: u32,
}

impl Backoff {
    /// Spins before this many rounds.
    const SPIN_ROUNDS_MAX: u32 = 6;
    /// Yields before this many rounds, sleeps after.
    const YIELD_ROUNDS_MAX: u32 = 6 + 32;
    /// How long one sleeping round lasts.
    const SLEEP: std::time::Duration = std::time::Duration::from_micros(20);

    pub(crate) fn snooze(&mut self) {
        if cfg!(feature = "shuttle") {
            yield_now();
            return;
        }
        if self.rounds < Self::SPIN_ROUNDS_MAX {
            for _ in 0..(1u32 << self.rounds) {
                std::hint::spin_loop();
            }
        } else if self.rounds < Self::YIELD_ROUNDS_MAX {
            yield_now();
        } else {
            std::thread::sleep(Self::SLEEP);
        }
        self.rounds = self.rounds.saturating_add(1);
    }
}
