//! Writers spaced to the flush's progress while a run is written (not in the paper; the
//! idea of RocksDB's "delayed write rate", applied to the memtable flush; issue 22's insert
//! tail).
//!
//! A writer waits for room when both memtables are full: the frozen one is still being
//! written as a run and the active one filled up meanwhile (`write.rs`, `admit`). At 3M
//! and 10M inserts on the 2-core VM the flush thread, sharing the cores with the merge
//! thread and the kernel's writeback, writes a run more slowly than one writer fills the
//! next memtable, so a put waited 20-50 ms for the rest of the flush 10-20 times per 3M
//! inserts (`room_waits` / `room_wait_us` in `Stats`; `docs/results/scale.md`).
//!
//! So from the freeze of a memtable until its run is installed, each put claims a slot on
//! a schedule that lets the active memtable reach its limit no sooner than the flush is
//! expected to end: the allowed rate is the room left (`memtable_bytes_max` minus both
//! memtables) over the flush's time left. The time left is the entries left at the rate of
//! the flush's own progress (entries written so far, reported at every block by
//! `write_run`) once it has done [`PROGRESS_MIN_PPM`] of its entries, before that what the
//! previous run's rate predicts, plus the previous run's *tail* (from its last entry to
//! its installation: the run's index and filters, the union filter, the install). A writer
//! ahead of its slot by [`SLEEP_MIN_NS`] or more waits that long: the wait one writer used
//! to take at once is spread over the run as waits of tens of microseconds (spun up to
//! [`SPIN_MAX`], slept beyond). Writers no faster than the allowed rate are never ahead of
//! their slot and never wait; outside a flush nobody is slowed.
//!
//! The prediction can be wrong, and as the room left shrinks each put's slot grows (its
//! bytes times the time left over the room left), so one misprediction late in a flush
//! became one long sleep: 586 ms for a single put in a 50M run (`docs/results/scale.md`,
//! session 23), longer than the wait for room it replaced. So a spacing sleep ends when
//! the run is installed (the caller sleeps on the control block's room epoch, as a writer
//! waiting for room does), and the slots claimed during a flush are forgotten when it
//! ends, so the next flush's first put does not inherit a slot claimed far ahead.
//!
//! Measured in alternated rounds of `lamina bench --experiment scale --ops 3000000
//! --engines fdtree-fc` (`docs/results/scale.md`, session 20): waits for room 10-20 per run
//! to 0, insert maximum 70-110 ms to 12-18 ms, at the price of 5-10% of the insert rate and
//! a higher p99.9 (32 to about 90 us) and p99.99.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A writer waits once it is this far ahead of its slot (shorter waits accumulate).
const SLEEP_MIN_NS: u64 = 25_000;

/// Spacing waits up to this long spin on the core (`lamina_storage::pause`, one writer at a
/// time) instead of sleeping: a sleep wakes the kernel's 50 us timer slack late or more,
/// so a wait of 25-35 us asleep took 80 us and up, and the 2,000-3,000 of them per 10M
/// inserts were part of the p99.99 (`docs/results/scale.md`, session 25). A spun wait does
/// not end early at the run's install as a sleep does, which at 60 us costs nothing. Longer
/// waits sleep, as spinning through them took the cores from the flush they wait for
/// (session 24).
pub const SPIN_MAX: Duration = Duration::from_micros(60);

/// Progress (parts per million of the entries) from which the flush's own rate is used.
const PROGRESS_MIN_PPM: u64 = 50_000;

/// Before that, when the flush overruns the previous run's rate, at least this fraction of
/// the predicted duration is taken to be left.
const OVERRUN_FRACTION: f64 = 0.25;

/// The flush in progress, the last flush's rate, and the writers' slot schedule.
#[derive(Debug)]
pub(crate) struct FlushRate {
    epoch: Instant,
    /// When the run being written was frozen (ns since `epoch`), 0: none in writing.
    started_ns: AtomicU64,
    /// Its entries, and how many are written (`write_run` sets it at every block).
    entries: AtomicU64,
    entries_written: AtomicU64,
    /// When a writer first saw every entry written (ns since `epoch`), 0: not yet.
    entries_done_ns: AtomicU64,
    /// Entries per second the last flush's entries were written at, 0: not measured yet.
    last_rate_eps: AtomicU64,
    /// How long the last flush took from its last entry to the run's installation (the
    /// run's index and filters, the union filter, the install), 0: not measured yet.
    last_tail_ns: AtomicU64,
    /// Puts' slots, and the sleeps they took (`Stats`).
    pub schedule: super::schedule::Schedule,
    /// Times a writer waited for room all the same (both memtables full), and how long in
    /// all, in microseconds (`Stats`): what the spacing is to avoid.
    pub room_waits: AtomicU64,
    pub room_wait_us: AtomicU64,
}

impl Default for FlushRate {
    fn default() -> Self {
        FlushRate {
            epoch: Instant::now(),
            started_ns: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            entries_written: AtomicU64::new(0),
            entries_done_ns: AtomicU64::new(0),
            last_rate_eps: AtomicU64::new(0),
            last_tail_ns: AtomicU64::new(0),
            schedule: super::schedule::Schedule::default(),
            room_waits: AtomicU64::new(0),
            room_wait_us: AtomicU64::new(0),
        }
    }
}

/// What a flush has done `elapsed_ns` into it.
#[derive(Debug, Clone, Copy)]
struct Progress {
    elapsed_ns: u64,
    entries: u64,
    written: u64,
    /// Since every entry was written (0: not yet).
    since_done_ns: u64,
    /// The previous flush's entries per second and tail (0: unknown).
    last_rate_eps: u64,
    last_tail_ns: u64,
}

impl FlushRate {
    fn now_ns(&self) -> u64 {
        // At least 1: 0 means "no flush".
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX).max(1)
    }

    /// The counter `write_run` reports its progress in.
    pub fn entries_written(&self) -> &AtomicU64 {
        &self.entries_written
    }

    /// The flush thread starts writing a frozen memtable of `entries`.
    pub fn began(&self, entries: u64) {
        self.entries.store(entries, Ordering::Relaxed);
        self.entries_written.store(0, Ordering::Relaxed);
        self.entries_done_ns.store(0, Ordering::Relaxed);
        self.started_ns.store(self.now_ns(), Ordering::Release);
    }

    /// The run is installed (`installed`), or its writing failed: writers go at full speed.
    pub fn ended(&self, installed: bool) {
        let started = self.started_ns.swap(0, Ordering::AcqRel);
        self.schedule.reset();
        if !installed || started == 0 {
            return;
        }
        let now = self.now_ns();
        let done = match self.entries_done_ns.load(Ordering::Relaxed) {
            0 => now, // no writer looked meanwhile: the tail is unknown, taken as 0
            at => at,
        };
        let loop_s = done.saturating_sub(started) as f64 / 1e9;
        let entries = self.entries.load(Ordering::Relaxed);
        if loop_s > 0.0 && entries > 0 {
            self.last_rate_eps.store((entries as f64 / loop_s) as u64, Ordering::Relaxed);
        }
        self.last_tail_ns.store(now.saturating_sub(done), Ordering::Relaxed);
    }

    /// Spaces a put adding `bytes` while a run is written (module doc): `room_bytes` is
    /// what the active memtable may still take before writers must wait; `sleep` sleeps
    /// at most the given time, less if the run is installed meanwhile.
    pub fn slow_down(&self, bytes: u64, room_bytes: u64, sleep: impl FnOnce(Duration)) {
        let started = self.started_ns.load(Ordering::Acquire);
        if started == 0 {
            return;
        }
        let now = self.now_ns();
        let entries = self.entries.load(Ordering::Relaxed);
        let written = self.entries_written.load(Ordering::Relaxed);
        let mut done = self.entries_done_ns.load(Ordering::Relaxed);
        if done == 0 && written >= entries {
            // The first writer to see it dates it (`ended` measures the tail from it).
            done = match self.entries_done_ns.compare_exchange(
                0,
                now,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => now,
                Err(at) => at,
            };
        }
        let progress = Progress {
            elapsed_ns: now.saturating_sub(started),
            entries,
            written,
            since_done_ns: if done == 0 { 0 } else { now.saturating_sub(done).max(1) },
            last_rate_eps: self.last_rate_eps.load(Ordering::Relaxed),
            last_tail_ns: self.last_tail_ns.load(Ordering::Relaxed),
        };
        let Some(rate) = allowed_rate(progress, room_bytes) else { return };
        let cost_ns = (bytes as f64 / rate * 1e9) as u64;
        self.schedule.claim(now, cost_ns, SLEEP_MIN_NS, sleep);
    }
}

/// The rate (bytes per second) writers may fill `room_bytes` at during a flush that has
/// made `progress`; `None`: no limit (nothing to predict from, or no room left, where
/// `admit` makes the writer wait anyway).
fn allowed_rate(progress: Progress, room_bytes: u64) -> Option<f64> {
    let Progress { elapsed_ns, entries, written, since_done_ns, last_rate_eps, last_tail_ns } =
        progress;
    if room_bytes == 0 || entries == 0 {
        return None;
    }
    let elapsed_s = elapsed_ns as f64 / 1e9;
    let last_tail_s = last_tail_ns as f64 / 1e9;
    let left_s = if written >= entries {
        // Only the tail is left.
        (last_tail_s - since_done_ns as f64 / 1e9).max(OVERRUN_FRACTION * last_tail_s)
    } else if written.saturating_mul(1_000_000) >= entries.saturating_mul(PROGRESS_MIN_PPM) {
        (entries - written) as f64 * elapsed_s / written as f64 + last_tail_s
    } else if last_rate_eps > 0 {
        let predicted_s = entries as f64 / last_rate_eps as f64;
        (predicted_s - elapsed_s).max(OVERRUN_FRACTION * predicted_s) + last_tail_s
    } else {
        return None;
    };
    (left_s > 0.0).then(|| room_bytes as f64 / left_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(elapsed_ms: u64, entries: u64, written: u64, last_rate_eps: u64) -> Progress {
        Progress {
            elapsed_ns: elapsed_ms * 1_000_000,
            entries,
            written,
            since_done_ns: 0,
            last_rate_eps,
            last_tail_ns: 0,
        }
    }

    #[test]
    fn the_allowed_rate_fills_the_room_as_the_flush_ends() {
        // Its own progress: half of the entries in 100 ms, 100 ms left, 8 MB of room.
        let rate = allowed_rate(progress(100, 1000, 500, 0), 8_000_000).unwrap();
        assert!((rate - 80_000_000.0).abs() < 1.0, "{rate}");
        // Too little progress yet: the previous flush's rate, 1000 entries in 0.5 s.
        let rate = allowed_rate(progress(100, 1000, 10, 2000), 8_000_000).unwrap();
        assert!((rate - 20_000_000.0).abs() < 1.0, "{rate}");
        // Overrunning that prediction: a quarter of it is taken to be left.
        let rate = allowed_rate(progress(2000, 1000, 10, 2000), 1_000_000).unwrap();
        assert!((rate - 8_000_000.0).abs() < 1.0, "{rate}");
        assert_eq!(allowed_rate(progress(1, 1000, 0, 0), 8_000_000), None, "nothing known");
        assert_eq!(allowed_rate(progress(1, 1000, 500, 0), 0), None, "no room: admit waits");
        assert_eq!(allowed_rate(progress(1, 1000, 1000, 0), 8), None, "no tail measured");
        // The last flush's tail was 40 ms: with 10 ms of it gone, 30 ms are left.
        let tail = Progress {
            since_done_ns: 10_000_000,
            last_tail_ns: 40_000_000,
            ..progress(100, 1000, 1000, 0)
        };
        let rate = allowed_rate(tail, 3_000_000).unwrap();
        assert!((rate - 100_000_000.0).abs() < 1.0, "{rate}");
        // And it is added to the entries' time left: 100 + 40 ms.
        let with_tail = Progress { last_tail_ns: 40_000_000, ..progress(100, 1000, 500, 0) };
        let rate = allowed_rate(with_tail, 14_000_000).unwrap();
        assert!((rate - 100_000_000.0).abs() < 1.0, "{rate}");
    }

    #[test]
    fn writers_are_slowed_only_while_a_run_is_written() {
        let f = FlushRate::default();
        f.slow_down(1 << 20, 1 << 20, std::thread::sleep);
        assert_eq!(f.schedule.slowed_puts.load(Ordering::Relaxed), 0, "no flush");
        // A flush of 10^6 entries, 5% of them written in at least 1 ms: 19 ms or more
        // left, planned as 28.5 ms; with 64 KiB of room writers may go at most about
        // 2.3 MB/s, so a put of 1 KiB takes 0.44 ms or more of the schedule.
        f.began(1_000_000);
        std::thread::sleep(Duration::from_millis(1));
        f.entries_written().store(50_000, Ordering::Relaxed);
        f.slow_down(1024, 64 << 10, std::thread::sleep); // the first put takes its slot at once
        f.slow_down(1024, 64 << 10, std::thread::sleep); // the second is a slot ahead and sleeps
        assert_eq!(f.schedule.slowed_puts.load(Ordering::Relaxed), 1);
        f.ended(false);
        f.slow_down(1024, 64 << 10, std::thread::sleep);
        assert_eq!(f.schedule.slowed_puts.load(Ordering::Relaxed), 1, "the flush ended");
    }
}
