//! Where the flush thread spends its time, for the writers' waits for room (`Stats`).
//!
//! A writer waits for room when both memtables are full: the flush thread has not installed
//! the frozen memtable's run yet (`write.rs`, `admit`). Knowing that it waited says nothing
//! of why; at 10M inserts such a wait of 200-450 ms came in two runs of eight, early in the
//! run, and a temporary print kept for two more runs caught none (`docs/results/scale.md`,
//! session 20). So the flush thread names the stage it is in ([`FlushStage`]) as it goes,
//! the longest time it spent in each stage is kept, and the longest wait for room records
//! the stage the flush was in when the wait began and when it ended. Reading them after
//! any run, from outside the process (`lamina bench`'s report), shows where such a wait
//! came from. Cost: a few atomic stores per run written and per wait for room.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Instant;

/// What the flush thread is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum FlushStage {
    /// Waiting for work.
    Idle = 0,
    /// Waiting for the merge's progress before writing a run (`pacing.rs`).
    Pacing = 1,
    /// Freezing the active memtable, or waiting for the tree lock to begin a run.
    Starting = 2,
    /// Writing the run's files (`flush.rs`, `write_run`).
    Writing = 3,
    /// Installing the run (the tree lock).
    Installing = 4,
    /// Waiting for the commit lock (held by the merge thread's commits).
    CommitLock = 5,
    /// Committing installed runs, holding the commit lock (the runs' and superblock's
    /// syncs), then the removal of obsolete files and the log's truncation.
    Committing = 6,
}

/// How many stages there are.
const STAGES: usize = 7;

impl FlushStage {
    fn from_u8(v: u8) -> FlushStage {
        match v {
            1 => FlushStage::Pacing,
            2 => FlushStage::Starting,
            3 => FlushStage::Writing,
            4 => FlushStage::Installing,
            5 => FlushStage::CommitLock,
            6 => FlushStage::Committing,
            _ => FlushStage::Idle,
        }
    }
}

/// The flush thread's stage, the longest stay in each, and the longest wait for room.
#[derive(Debug)]
pub(crate) struct FlushStages {
    epoch: Instant,
    stage: AtomicU8,
    /// When the current stage began (ns since `epoch`).
    since_ns: AtomicU64,
    /// The longest stay in each stage so far, in microseconds (`Idle`'s is not kept: it
    /// is the time without work).
    stage_us_max: [AtomicU64; STAGES],
    /// The longest wait for room, in microseconds, and the stages (as `u8`) the flush
    /// thread was in at its beginning and at its end.
    room_wait_us_max: AtomicU64,
    room_wait_max_stages: AtomicU64,
    /// The commit thread's longest commit, in microseconds (`background.rs`): what the
    /// flush thread's commits took before it handed them over.
    commit_thread_us_max: AtomicU64,
}

impl Default for FlushStages {
    fn default() -> Self {
        FlushStages {
            epoch: Instant::now(),
            stage: AtomicU8::new(FlushStage::Idle as u8),
            since_ns: AtomicU64::new(0),
            stage_us_max: Default::default(),
            room_wait_us_max: AtomicU64::new(0),
            room_wait_max_stages: AtomicU64::new(0),
            commit_thread_us_max: AtomicU64::new(0),
        }
    }
}

impl FlushStages {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The flush thread enters `stage` (only the flush thread calls this; FD+XM's inline
    /// flush does not).
    pub fn enter(&self, stage: FlushStage) {
        let now = self.now_ns();
        let previous = self.stage.swap(stage as u8, Ordering::Relaxed);
        let since = self.since_ns.swap(now, Ordering::Relaxed);
        if previous != FlushStage::Idle as u8 {
            let stayed_us = now.saturating_sub(since) / 1_000;
            self.stage_us_max[usize::from(previous)].fetch_max(stayed_us, Ordering::Relaxed);
        }
    }

    /// The stage the flush thread is in now (a writer about to wait for room asks).
    pub fn current(&self) -> FlushStage {
        FlushStage::from_u8(self.stage.load(Ordering::Relaxed))
    }

    /// A writer waited `waited_us` for room; the flush thread was in `began` when the wait
    /// began and is in `current()` now.
    pub fn room_waited(&self, waited_us: u64, began: FlushStage) {
        let previous = self.room_wait_us_max.fetch_max(waited_us, Ordering::Relaxed);
        if waited_us > previous {
            // Two longest waits racing may pair a duration with the other's stages: a
            // diagnostic, not worth a lock.
            let stages = (began as u64) * 10 + self.current() as u64;
            self.room_wait_max_stages.store(stages, Ordering::Relaxed);
        }
    }

    /// The commit thread's commit took `took_us`.
    pub fn committed(&self, took_us: u64) {
        self.commit_thread_us_max.fetch_max(took_us, Ordering::Relaxed);
    }

    /// `(name, value)` pairs for `Stats`: `flush_<stage>_us_max` for every stage but
    /// `idle`, `room_wait_us_max`, and `room_wait_max_stages` (`10 * began + ended`, the
    /// [`FlushStage`] numbers), `commit_thread_us_max`.
    pub fn stats(&self) -> Vec<(&'static str, u64)> {
        const KEYS: [&str; STAGES] = [
            "",
            "flush_pacing_us_max",
            "flush_starting_us_max",
            "flush_writing_us_max",
            "flush_installing_us_max",
            "flush_commit_lock_us_max",
            "flush_committing_us_max",
        ];
        let mut out: Vec<(&'static str, u64)> =
            (1..STAGES).map(|s| (KEYS[s], self.stage_us_max[s].load(Ordering::Relaxed))).collect();
        out.push(("room_wait_us_max", self.room_wait_us_max.load(Ordering::Relaxed)));
        out.push(("room_wait_max_stages", self.room_wait_max_stages.load(Ordering::Relaxed)));
        out.push(("commit_thread_us_max", self.commit_thread_us_max.load(Ordering::Relaxed)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_stay_in_each_stage_is_kept() {
        let stages = FlushStages::default();
        stages.enter(FlushStage::Writing);
        std::thread::sleep(std::time::Duration::from_millis(3));
        stages.enter(FlushStage::Committing);
        stages.enter(FlushStage::Writing);
        stages.enter(FlushStage::Idle);
        let stats = stages.stats();
        let get = |k: &str| stats.iter().find(|(n, _)| *n == k).map(|(_, v)| *v).unwrap();
        assert!(get("flush_writing_us_max") >= 3_000, "{stats:?}");
        assert_eq!(get("flush_pacing_us_max"), 0);
        assert_eq!(stages.current(), FlushStage::Idle);
    }

    #[test]
    fn the_longest_wait_for_room_names_the_flush_stages() {
        let stages = FlushStages::default();
        stages.enter(FlushStage::Committing);
        stages.room_waited(500, FlushStage::Writing);
        stages.room_waited(200, FlushStage::Pacing); // shorter: not recorded
        let stats = stages.stats();
        let get = |k: &str| stats.iter().find(|(n, _)| *n == k).map(|(_, v)| *v).unwrap();
        assert_eq!(get("room_wait_us_max"), 500);
        assert_eq!(get("room_wait_max_stages"), 36);
    }
}
