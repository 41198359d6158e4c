//! Pacing the runs `L_0^new` gathers to the progress of the merge in progress.
//!
//! Writers never wait for a merge as such (`flush.rs`): a full memtable goes to disk as a
//! run of `L_0^new`. Left alone, that defers work without bound: at 50M inserts of issue
//! 22's `scale` benchmark, ingestion outran the one merge thread, `L_0` gathered about 500
//! runs (every lookup probes each run's filter, and a run is a file of the manifest, which
//! holds at most `RUNS_MAX`), and closing had to finish 258 seconds of merging. The inserts
//! were fast only because their merge work was still to be done.
//!
//! So the flush thread writes a run only while `L_0^new` holds fewer than
//! `RUNS_PACE_FLOOR + f * RUNS_PACE_SPAN` runs, `f` being the fraction of the old sources'
//! blocks the FD+FC merge has reclaimed so far (its wavefront's progress through
//! `L_0^old` and `L_1^old..L_m^old`, section 4.4.2). Beyond that it waits for the
//! wavefront to move; writers then wait only as their memtables fill. This is the paper's
//! own deamortization (FD+FC admits writers as `L_0^old` drains, section 4.2) with a
//! larger `L_0` than `kappa_0` (Remark A.17's runs): a long merge into the bottom level
//! admits up to `RUNS_PACE_FLOOR + RUNS_PACE_SPAN` memtables, spread evenly over its run
//! instead of all at its start, so writes go on at a steady rate, which is what the merge
//! thread can sustain. FD+DS reports no progress: its flush thread stops at the ceiling
//! until the merge ends. FD+XM merges inline and is not paced.
//!
//! A run is a whole memtable, so that gate alone admits writes in bursts: a writer that
//! finds both memtables full waits for a whole run to be written (measured: 200-ms stalls
//! at 10M inserts). So writers slow down before it binds ([`Pacer`], as RocksDB's delayed
//! writes): within `SLOWDOWN_RUNS` runs of the allowance, each put is spaced to the rate at
//! which the allowance grows, `RUNS_PACE_SPAN` memtables over the merge's expected length
//! (`elapsed / f`); the merge thread publishes `f` after every stage. Those waits spin on
//! the core rather than sleep (`lamina_storage::pause`: a sleep that short woke
//! milliseconds late once in a thousand; p99.99 367 -> 264 us at 10M, session 24), and
//! each is about [`WAIT_MIN_NS`], 40 us: the same total wait in more, shorter pieces.
//! At 200 us each, about 10,000 paced puts per 10M inserts (0.1%) made the p99.99 the
//! pause itself (203-223 us in four runs); at 40 us the paced puts are 0.4-0.7% of them
//! and the p99.99 was 121-186 us (`docs/results/scale.md`, session 25).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lamina_core::Result;

use super::inner::Inner;
use crate::tree::Tree;

/// Runs `L_0^new` may gather during a merge whatever its progress (a merge is due at
/// `RUNS_MERGE` runs when none is in progress).
pub const RUNS_PACE_FLOOR: usize = 12;

/// Further runs admitted in proportion to the merge's progress; the ceiling is
/// `RUNS_PACE_FLOOR + RUNS_PACE_SPAN` runs, far below the manifest's `RUNS_MAX`.
pub const RUNS_PACE_SPAN: usize = 36;

/// How often a paced flush thread looks at the merge's progress again.
const PACE_POLL: Duration = Duration::from_millis(1);

/// Writers slow down when `L_0^new` is this close (in runs) to its allowance.
pub const SLOWDOWN_RUNS: usize = 3;

/// The slowest rate writers are slowed down to (memtable bytes per second), so a merge
/// that has not reported progress yet does not stop them.
const SLOWDOWN_RATE_MIN: f64 = 2.0 * 1024.0 * 1024.0;

/// A writer waits once it is this far ahead of its slot (shorter waits accumulate): the
/// wait a paced put adds to its latency (module doc).
const WAIT_MIN_NS: u64 = 40_000;

/// Fixed-point scale of the published progress.
const PROGRESS_SCALE: f64 = 1_000_000.0;

/// What writers need to slow down without taking the tree lock: the merge's progress and
/// start, `L_0^new`'s runs, and the next free admission slot.
#[derive(Debug)]
pub(crate) struct Pacer {
    epoch: Instant,
    merging: AtomicBool,
    /// Whether the merge reports progress (FD+FC; FD+DS does not).
    reports: AtomicBool,
    start_ns: AtomicU64,
    progress_ppm: AtomicU64,
    runs: AtomicU64,
    /// Puts' slots, and the sleeps they took (`Stats`).
    pub schedule: super::schedule::Schedule,
    /// Runs whose writing waited for the merge's progress, and how long (`Stats`).
    pub runs_paced: AtomicU64,
    pub paced_us: AtomicU64,
    /// The one paced writer that may spin instead of sleeping (`lamina_storage::pause`);
    /// the flush spacing's short waits (`flush_rate::SPIN_MAX`) take it too.
    pub spin_slot: lamina_storage::pause::SpinSlot,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer {
            epoch: Instant::now(),
            merging: AtomicBool::new(false),
            reports: AtomicBool::new(false),
            start_ns: AtomicU64::new(0),
            progress_ppm: AtomicU64::new(0),
            runs: AtomicU64::new(0),
            schedule: super::schedule::Schedule::default(),
            runs_paced: AtomicU64::new(0),
            paced_us: AtomicU64::new(0),
            spin_slot: lamina_storage::pause::SpinSlot::default(),
        }
    }
}

impl Pacer {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// A merge begins (`L_0`'s runs became `L_0^old`); `reports`: it will publish progress.
    pub fn begin(&self, reports: bool) {
        self.start_ns.store(self.now_ns(), Ordering::Relaxed);
        self.progress_ppm.store(0, Ordering::Relaxed);
        self.reports.store(reports, Ordering::Relaxed);
        self.runs.store(0, Ordering::Relaxed);
        self.merging.store(true, Ordering::Release);
    }

    /// The merge ended (or failed): writers go at full speed.
    pub fn end(&self) {
        self.merging.store(false, Ordering::Release);
    }

    /// The merge's progress after a stage.
    pub fn progressed(&self, fraction: f64) {
        let ppm = (fraction.clamp(0.0, 1.0) * PROGRESS_SCALE) as u64;
        self.progress_ppm.store(ppm, Ordering::Relaxed);
    }

    /// `L_0^new` holds `runs` runs now.
    pub fn set_runs(&self, runs: usize) {
        self.runs.store(runs as u64, Ordering::Relaxed);
    }

    /// Slows a put adding `bytes` of memtable down if `L_0^new` is near its allowance
    /// (module doc); `freeze_bytes` is a run's size.
    pub fn slow_down(&self, bytes: u64, freeze_bytes: u64) {
        if !self.merging.load(Ordering::Acquire) || !self.reports.load(Ordering::Relaxed) {
            return;
        }
        let f = self.progress_ppm.load(Ordering::Relaxed) as f64 / PROGRESS_SCALE;
        let runs = usize::try_from(self.runs.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
        if runs + SLOWDOWN_RUNS < runs_allowed(Some(f)) {
            return;
        }
        let now = self.now_ns();
        let elapsed_s = now.saturating_sub(self.start_ns.load(Ordering::Relaxed)) as f64 / 1e9;
        // The allowance grows by RUNS_PACE_SPAN runs over the merge's expected length.
        let rate = if f > 0.0 && elapsed_s > 0.0 {
            (RUNS_PACE_SPAN as f64 * freeze_bytes as f64 * f / elapsed_s).max(SLOWDOWN_RATE_MIN)
        } else {
            SLOWDOWN_RATE_MIN
        };
        let cost_ns = (bytes as f64 / rate * 1e9) as u64;
        // Spinning, not asleep (`lamina_storage::pause`): these waits are about
        // `WAIT_MIN_NS`, and a sleep that short woke milliseconds late once in a thousand.
        self.schedule.claim(now, cost_ns, WAIT_MIN_NS, |d| {
            lamina_storage::pause::pause_for(d, &self.spin_slot);
        });
    }
}

/// Runs allowed in `L_0^new` at merge progress `progress` (`None`: unknown, FD+DS).
pub fn runs_allowed(progress: Option<f64>) -> usize {
    let f = progress.unwrap_or(0.0).clamp(0.0, 1.0);
    let span = match progress {
        Some(_) => (f * RUNS_PACE_SPAN as f64) as usize,
        None => RUNS_PACE_SPAN,
    };
    RUNS_PACE_FLOOR + span
}

impl Inner {
    /// Waits until `L_0^new` may take another run (module doc); returns at once when no
    /// merge is in progress or the engine is stopping.
    pub(super) fn pace_run(&self) -> Result<()> {
        let mut started: Option<Instant> = None;
        loop {
            // In lockstep the merge cannot run beside this flush: nothing to pace against.
            if self.control.stopping() || self.control.lockstep() {
                break;
            }
            let (runs, merging, progress) =
                self.read(|t| Ok((t.run_count(), t.merge_in_progress(), t.fc_progress())))?;
            if !merging || runs < runs_allowed(progress) {
                break;
            }
            if self.control.check().is_err() {
                break; // a failed merge makes no progress; the error reaches the writers
            }
            started.get_or_insert_with(Instant::now);
            std::thread::sleep(PACE_POLL);
        }
        if let Some(t) = started {
            self.pacer.runs_paced.fetch_add(1, Ordering::Relaxed);
            let waited_us = u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.pacer.paced_us.fetch_add(waited_us, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl Tree {
    /// The fraction of the FD+FC merge's old sources' blocks reclaimed so far (`None`
    /// when no FD+FC merge is in progress).
    pub fn fc_progress(&self) -> Option<f64> {
        Some(crate::fc::state::reclaimed_fraction(self.fc.as_ref()?.old_sources()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowance_grows_with_progress_up_to_the_ceiling() {
        assert_eq!(runs_allowed(Some(0.0)), RUNS_PACE_FLOOR);
        assert_eq!(runs_allowed(Some(0.5)), RUNS_PACE_FLOOR + RUNS_PACE_SPAN / 2);
        assert_eq!(runs_allowed(Some(1.0)), RUNS_PACE_FLOOR + RUNS_PACE_SPAN);
        assert_eq!(runs_allowed(Some(7.0)), RUNS_PACE_FLOOR + RUNS_PACE_SPAN);
        assert_eq!(runs_allowed(None), RUNS_PACE_FLOOR + RUNS_PACE_SPAN);
        const { assert!(RUNS_PACE_FLOOR + RUNS_PACE_SPAN < crate::persist::manifest::RUNS_MAX as usize) };
        const {
            assert!(
                RUNS_PACE_FLOOR + RUNS_PACE_SPAN == crate::top::runs_filter::RUNS_COVERED as usize
            );
        };
    }
}
