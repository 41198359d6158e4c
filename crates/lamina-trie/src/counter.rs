//! Striped statistics counters: every write updates a few counters (keys, bytes), and one
//! shared atomic would bounce its cache line between the cores on every write, which is
//! exactly the cross-core traffic the tree's design avoids. Each thread adds to one of
//! [`STRIPES`] cache-padded cells (chosen once per thread); reading sums them.

use std::cell::Cell;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, Ordering};

/// Cells per counter.
pub(crate) const STRIPES: usize = 16;

thread_local! {
    static STRIPE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The calling thread's stripe, assigned round-robin on first use.
fn stripe() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    STRIPE.with(|s| {
        s.get().unwrap_or_else(|| {
            let chosen = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % STRIPES;
            s.set(Some(chosen));
            chosen
        })
    })
}

/// A counter that may go up and down; its value is the wrapping sum of the cells, so a
/// decrement on one stripe of an increment made on another sums correctly.
#[derive(Debug)]
pub(crate) struct StripedCounter {
    cells: [CachePadded<AtomicU64>; STRIPES],
}

impl Default for StripedCounter {
    fn default() -> Self {
        StripedCounter { cells: std::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))) }
    }
}

impl StripedCounter {
    pub(crate) fn add(&self, n: u64) {
        self.cells[stripe()].fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sub(&self, n: u64) {
        self.cells[stripe()].fetch_sub(n, Ordering::Relaxed);
    }

    /// The current value (a sum of cells read one after the other, so only approximate
    /// while writers run; exact when they are quiet). A snapshot can catch a decrement
    /// without its increment (made on a stripe read earlier): such a transiently negative
    /// sum reads as 0, not as a wrapped value near `u64::MAX`. Real counts never reach 2^63.
    pub(crate) fn get(&self) -> u64 {
        let sum =
            self.cells.iter().fold(0u64, |sum, c| sum.wrapping_add(c.load(Ordering::Relaxed)));
        if i64::try_from(sum).is_ok() { sum } else { 0 }
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn sums_across_threads_including_cross_stripe_decrements() {
        let counter = StripedCounter::default();
        counter.add(10);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        counter.add(3);
                        counter.sub(1);
                    }
                });
            }
        });
        std::thread::scope(|s| {
            s.spawn(|| counter.sub(8));
        });
        assert_eq!(counter.get(), 10 + 4 * 2000 - 8);
    }

    /// What `get` sees when it reads the cell of a thread that inserted a key before the
    /// insert, and the cell of the thread that deleted it after the delete (the cells are
    /// read one after the other while writers run): a decrement without its increment.
    /// Observed through `Stats::keys` as 18446744073709551615 with one key being put and
    /// deleted by two threads.
    #[test]
    fn a_snapshot_never_wraps_below_zero() {
        let counter = StripedCounter::default();
        std::thread::scope(|s| {
            s.spawn(|| counter.sub(1));
        });
        assert_eq!(counter.get(), 0, "a transiently negative sum reads as 0");
    }
}
