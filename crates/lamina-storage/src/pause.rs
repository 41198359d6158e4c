//! Short waits of a writer that is being slowed down (an engine's pacing), taken on the
//! processor instead of asleep.
//!
//! Why: on the 2-core VM, with an engine's background threads and the kernel's writeback
//! runnable, a thread that sleeps 100 us wakes 1-16 ms late about once in a thousand sleeps
//! (the thread that took its core keeps it for a scheduler slice). Writers that are paced
//! sleep thousands of times per million inserts, so those late wake-ups were the tail of
//! their latency: nbtree's 10M-insert p99.99 went from 862-881 us to 218-227 us once its
//! 100 us pauses spun instead, fdtree's from a median of 367 us (7 runs) to 264 us (4 runs)
//! once its merge pacer's did (`docs/results/nbtree.md` and `scale.md`, 2026-12-01).
//!
//! Limits: a spinning writer keeps its core for no longer than it would have slept, and
//! only one writer per [`SpinSlot`] spins at a time; the others sleep, so that 32 paced
//! writers on 2 cores do not take the cores from the background work they wait for. Waits
//! past [`SPIN_MAX`] always sleep for the same reason.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest wait taken spinning; longer ones sleep.
pub const SPIN_MAX: Duration = Duration::from_millis(1);

/// The right to spin, held by one waiting writer at a time (one per engine).
#[derive(Debug, Default)]
pub struct SpinSlot(AtomicBool);

impl SpinSlot {
    fn try_take(&self) -> Option<SlotGuard<'_>> {
        self.0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            .then_some(SlotGuard(self))
    }
}

struct SlotGuard<'a>(&'a SpinSlot);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        (self.0).0.store(false, Ordering::Release);
    }
}

/// Waits until `deadline` or until `done()` says the wait is over, whichever is first.
/// Spins if the wait is at most [`SPIN_MAX`] and `slot` is free; otherwise sleeps until
/// the deadline (then `done` is not asked). Returns whether `done()` ended it.
pub fn pause_until(deadline: Instant, slot: &SpinSlot, mut done: impl FnMut() -> bool) -> bool {
    let wait = deadline.saturating_duration_since(Instant::now());
    let guard = if wait <= SPIN_MAX { slot.try_take() } else { None };
    let Some(_guard) = guard else {
        std::thread::sleep(wait);
        return false;
    };
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::hint::spin_loop();
    }
}

/// Waits `duration` ([`pause_until`] with nothing that ends it early).
pub fn pause_for(duration: Duration, slot: &SpinSlot) {
    pause_until(Instant::now() + duration, slot, || false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_short_pause_asks_first_and_ends_when_it_is_done() {
        let slot = SpinSlot::default();
        let asked = Cell::new(0u32);
        let ended = pause_until(Instant::now() + SPIN_MAX, &slot, || {
            asked.set(asked.get() + 1);
            true
        });
        assert!(ended);
        assert_eq!(asked.get(), 1);
        assert!(slot.try_take().is_some(), "the slot is given back");
    }

    #[test]
    fn a_short_pause_lasts_until_its_deadline() {
        let slot = SpinSlot::default();
        let deadline = Instant::now() + Duration::from_micros(200);
        assert!(!pause_until(deadline, &slot, || false));
        assert!(Instant::now() >= deadline);
    }

    #[test]
    fn a_long_pause_sleeps_without_asking() {
        let slot = SpinSlot::default();
        let deadline = Instant::now() + SPIN_MAX + Duration::from_millis(1);
        assert!(!pause_until(deadline, &slot, || panic!("a sleep asks nothing")));
        assert!(Instant::now() >= deadline);
    }

    #[test]
    fn only_one_writer_spins_at_a_time() {
        let slot = SpinSlot::default();
        let outer_asked = Cell::new(false);
        pause_until(Instant::now() + SPIN_MAX, &slot, || {
            // While this pause holds the slot, another sleeps without asking.
            let deadline = Instant::now() + Duration::from_micros(50);
            assert!(!pause_until(deadline, &slot, || panic!("the slot is taken: it sleeps")));
            outer_asked.set(true);
            true
        });
        assert!(outer_asked.get());
    }
}
