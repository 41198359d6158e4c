//! A schedule of admission slots that writers claim, shared by the two ways writers are
//! slowed down (`pacing.rs`, ahead of a merge's allowance; `flush_rate.rs`, during a
//! flush): each put claims the next slot, after the previous claim and never in the past,
//! and sleeps when its slot is far enough ahead. Writers no faster than the rate never get
//! ahead and never sleep; shorter waits accumulate until one is worth a sleep.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The next free slot (ns on the owner's clock) and the sleeps taken.
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    next_slot_ns: AtomicU64,
    /// Puts that slept, how long in all and the longest sleep, in microseconds (`Stats`).
    pub slowed_puts: AtomicU64,
    pub slowed_us: AtomicU64,
    pub slowed_us_max: AtomicU64,
}

impl Schedule {
    /// Claims a slot of `cost_ns` at `now_ns`; sleeps (with `sleep`) if the slot starts
    /// `sleep_min_ns` or more ahead.
    pub fn claim(
        &self,
        now_ns: u64,
        cost_ns: u64,
        sleep_min_ns: u64,
        sleep: impl FnOnce(Duration),
    ) {
        let mut slot = self.next_slot_ns.load(Ordering::Relaxed);
        loop {
            let start = slot.max(now_ns);
            match self.next_slot_ns.compare_exchange_weak(
                slot,
                start.saturating_add(cost_ns),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    slot = start;
                    break;
                }
                Err(current) => slot = current,
            }
        }
        let ahead_ns = slot.saturating_sub(now_ns);
        if ahead_ns >= sleep_min_ns {
            sleep(Duration::from_nanos(ahead_ns));
            self.slowed_puts.fetch_add(1, Ordering::Relaxed);
            self.slowed_us.fetch_add(ahead_ns / 1000, Ordering::Relaxed);
            self.slowed_us_max.fetch_max(ahead_ns / 1000, Ordering::Relaxed);
        }
    }

    /// Forgets the claims made so far: the next claim starts at its own time.
    pub fn reset(&self) {
        self.next_slot_ns.store(0, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_follow_one_another_and_only_a_slot_far_enough_ahead_sleeps() {
        let s = Schedule::default();
        let slept = std::cell::Cell::new(Duration::ZERO);
        let sleep = |d| slept.set(slept.get() + d);
        s.claim(1_000, 50_000, 100_000, sleep); // at once; the next slot is at 51,000
        s.claim(1_000, 60_000, 100_000, sleep); // 50 us ahead: no sleep; the next is at 111,000
        assert_eq!(s.slowed_puts.load(Ordering::Relaxed), 0);
        s.claim(2_000, 1_000, 100_000, sleep); // 109 us ahead: sleeps
        assert_eq!(slept.get(), Duration::from_micros(109));
        assert_eq!(s.slowed_puts.load(Ordering::Relaxed), 1);
        assert_eq!(s.slowed_us.load(Ordering::Relaxed), 109);
        assert_eq!(s.slowed_us_max.load(Ordering::Relaxed), 109);
        s.claim(10_000_000, 1_000, 100_000, sleep); // a slot in the past starts now
        assert_eq!(s.slowed_puts.load(Ordering::Relaxed), 1);
        // A slot claimed far ahead is forgotten by a reset.
        s.claim(10_000_000, 1_000_000_000, 100_000, sleep);
        s.reset();
        s.claim(10_000_001, 1_000, 100_000, sleep);
        assert_eq!(s.slowed_puts.load(Ordering::Relaxed), 1);
        assert_eq!(slept.get(), Duration::from_micros(109));
    }
}
