//! One Bloom filter over every key of a set of `L_0` runs, beside each run's own.
//!
//! Why: during a long FD+FC merge a lookup of a key beyond the wavefront probes every run of
//! `L_0^old` (up to `RUNS_PACE_FLOOR + RUNS_PACE_SPAN`, 48), and every lookup probes the runs
//! `L_0^new` gathers meanwhile: a filter line each, in a different allocation each. At 10M
//! inserts, right after the inserts, those probes were a third of a lookup's time (skipping
//! `L_0^old`'s runs outright, a wrong answer kept only to measure it, made lookups 30%
//! faster: `docs/results/scale.md`, session 17). With the union a lookup makes one probe for
//! the whole set and probes the runs' own filters only when it says "maybe": for the keys in
//! no run, nearly all of them at 10M keys.
//!
//! Invariant: a filter [`CoveredRuns::covers`] a set of runs only if every key of every run
//! in it was added before the run was installed. The tree keeps the set it covers beside it
//! (`Top::runs_filter`) and compares it with the current set by pointer: any change of the
//! runs that does not go through `install_run` with this filter (recovery, a merge's
//! leftover run, FD+DS) drops the filter, and lookups probe each run as before. Extra keys
//! (a run whose write failed) cost only false positives.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_storage::bloom::{Bloom, PipelinedInserts, key_hash};

use crate::level::DiskLevel;

/// Runs a filter is sized for: the most `L_0^new` gathers during a merge
/// (`RUNS_PACE_FLOOR + RUNS_PACE_SPAN`, asserted in `engine/pacing.rs`).
pub const RUNS_COVERED: u64 = 48;

/// A filter is given up once it holds this many times the keys it was sized for (its
/// false-positive rate is then too high to save probes).
const OVERFILL_FACTOR: u64 = 2;

/// The union filter of a set of runs (module documentation).
#[derive(Debug)]
pub struct RunsFilter {
    bloom: Bloom,
    keys_sized: u64,
    keys_added: AtomicU64,
}

impl RunsFilter {
    /// A filter for [`RUNS_COVERED`] runs of about `keys_per_run` keys each (a full
    /// memtable's, so a small first run does not leave it too small for the rest).
    pub fn new(keys_per_run: u64, bits_per_key: u32) -> RunsFilter {
        let keys_sized = keys_per_run.max(1).saturating_mul(RUNS_COVERED);
        RunsFilter { bloom: Bloom::new(keys_sized, bits_per_key), keys_sized, keys_added: 0.into() }
    }

    /// Counts `keys` more keys in if they fit (the filter stays useful); `false` leaves
    /// the count as it was. Called once per run, under the tree lock.
    pub fn reserve(&self, keys: u64) -> bool {
        let added = self.keys_added.load(Ordering::Relaxed).saturating_add(keys);
        let fits = added <= self.keys_sized.saturating_mul(OVERFILL_FACTOR);
        if fits {
            self.keys_added.store(added, Ordering::Relaxed);
        }
        fits
    }

    /// Adds a key of a run about to be installed (its run's keys were reserved first).
    pub fn insert(&self, key: &[u8]) {
        self.bloom.insert_hash(key_hash(key));
    }

    /// Adds a key by its hash through `pipe`, perhaps later: the filter is megabytes
    /// (`RUNS_COVERED` runs' keys) and each direct insert waited for its line's cache miss,
    /// a third of the flush thread's time at 3M keys (`perf annotate write_run`, session 18).
    /// [`RunsFilter::drain`] before the run is installed.
    pub fn insert_pipelined(&self, pipe: &mut PipelinedInserts, hash: u64) {
        pipe.insert_hash(&self.bloom, hash);
    }

    /// Sets the bits of every key `pipe` held back.
    pub fn drain(&self, pipe: &mut PipelinedInserts) {
        pipe.drain(&self.bloom);
    }

    /// Whether some run of the set may hold a key of this hash (false: none does).
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        self.bloom.may_contain_hash(hash)
    }

    /// Starts loading the line [`RunsFilter::may_contain_hash`] will read.
    pub fn prefetch(&self, hash: u64) {
        self.bloom.prefetch(hash);
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> u64 {
        self.bloom.memory_bytes()
    }
}

/// A filter and the set of runs it covers (compared by pointer).
#[derive(Debug, Clone)]
pub struct CoveredRuns {
    /// The filter.
    pub filter: Arc<RunsFilter>,
    /// The runs whose every key it holds.
    pub runs: Arc<[DiskLevel]>,
}

impl CoveredRuns {
    /// The filter, if it covers exactly `runs`.
    pub fn covers(&self, runs: &Arc<[DiskLevel]>) -> Option<&Arc<RunsFilter>> {
        Arc::ptr_eq(&self.runs, runs).then_some(&self.filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_keys_are_never_ruled_out_and_most_others_are() {
        let filter = RunsFilter::new(1000, 10);
        for i in 0..1000u64 * RUNS_COVERED {
            filter.insert(&i.to_be_bytes());
        }
        for i in 0..1000u64 * RUNS_COVERED {
            assert!(filter.may_contain_hash(key_hash(&i.to_be_bytes())));
        }
        let others = 100_000u64;
        let false_positives = (0..others)
            .filter(|i| filter.may_contain_hash(key_hash(&(u64::MAX - i).to_be_bytes())))
            .count();
        assert!(false_positives < 3_000, "{false_positives} of {others} at 10 bits per key");
    }

    #[test]
    fn a_filter_takes_keys_up_to_twice_its_size() {
        let filter = RunsFilter::new(10, 10);
        let sized = 10 * RUNS_COVERED;
        assert!(!filter.reserve(sized * OVERFILL_FACTOR + 1));
        assert!(filter.reserve(sized * OVERFILL_FACTOR - 1), "a refusal counted nothing");
        assert!(!filter.reserve(2));
        assert!(filter.reserve(1));
        assert!(!filter.reserve(1));
    }
}
