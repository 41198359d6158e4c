//! The FD+tree's state (paper section 2.1): `L_0` (`top`), the materialized disk levels,
//! the state of a merge in progress, and the bookkeeping around them. It lives under the
//! engine's tree lock, which plays the paper's `L_0` mutex (section 4.2): lookups take it
//! shared for the `L_0` part of their search, merges exclusively for the short steps that
//! change the structure (m-delete, switching levels in).
//!
//! The counters `N_delta` and `N_nabla` are sums of the exact entry counts of the memtables,
//! runs and levels. Puts are blind (issue 22: no lookup on insert, as in the paper's
//! evaluated FD+tree), so an insert entry may shadow older ones of its key: the counters and
//! the live size derived from them are upper bounds (Remark A.1's `U-hat`), and merges make
//! them exact for the levels they write.

use std::sync::Arc;

use lamina_core::{Error, Result};

use crate::format::stats::LevelStats;
use crate::level::DiskLevel;
use crate::merge::Trigger;
use crate::options::Params;
use crate::store::BlockStore;
use crate::top::Top;

/// The counters of section 2.1 (upper bounds, see the module documentation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// `N_delta`: insert entries across all levels.
    pub inserts: u64,
    /// `N_nabla`: delete entries across all levels.
    pub deletes: u64,
    /// Encoded bytes of all insert entries.
    pub insert_bytes: u64,
    /// Encoded bytes of the inserts the delete entries were issued to cancel.
    pub cancelled_bytes: u64,
}

impl Counters {
    /// The counters of entries counted by `stats`.
    pub fn of(stats: &LevelStats) -> Self {
        Counters {
            inserts: stats.inserts,
            deletes: stats.deletes,
            insert_bytes: stats.insert_bytes,
            cancelled_bytes: stats.cancelled_bytes,
        }
    }

    /// An upper bound on the bytes of the live records: the data size of a full merge
    /// (eq. 1, `i = h - 1`).
    pub fn live_bytes(&self) -> u64 {
        self.insert_bytes.saturating_sub(self.cancelled_bytes)
    }

    /// The estimated number of elements, `N_delta - N_nabla`.
    pub fn live_keys(&self) -> u64 {
        self.inserts.saturating_sub(self.deletes)
    }

    /// (I6) no-underflow: `N_nabla / N_delta <= 1/3`.
    pub fn underflows(&self) -> bool {
        3 * self.deletes > self.inserts
    }
}

/// Counts of merges by kind, for stats and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeCounts {
    /// Overflow-triggered merges.
    pub overflow: u64,
    /// Underflow-triggered merges.
    pub underflow: u64,
    /// Merges that read every level.
    pub full: u64,
    /// Full merges that grew the tree.
    pub grew: u64,
    /// Full merges that shrank the tree.
    pub shrank: u64,
    /// New levels dropped by merge-finalize or skipped by merge-prepare (level skipping).
    pub levels_skipped: u64,
    /// New levels relabeled to a smaller number (level tightening, eq. 3).
    pub levels_tightened: u64,
    /// Memtables written out as `L_0` runs.
    pub runs_written: u64,
}

impl MergeCounts {
    /// Counts a full merge and whether it grew or shrank the tree.
    pub fn count_full(&mut self, height_before: usize, height_after: usize) {
        self.full += 1;
        match height_after.cmp(&height_before) {
            std::cmp::Ordering::Greater => self.grew += 1,
            std::cmp::Ordering::Less => self.shrank += 1,
            std::cmp::Ordering::Equal => {}
        }
    }
}

/// What the last merge did (for tests and stats).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeReport {
    /// Why it ran.
    pub trigger: Trigger,
    /// Levels `L_0..L_m` were replaced (eq. 2).
    pub m: usize,
    /// Whether it read every level.
    pub full: bool,
    /// Height before.
    pub height_before: usize,
    /// Height after.
    pub height_after: usize,
    /// `z` of merge-finalize (`L_1..L_z` skipped).
    pub z: usize,
    /// Older entries dropped because a newer entry of their key shadowed them.
    pub shadowed: u64,
    /// Materialized labels after the merge.
    pub labels_after: Vec<usize>,
}

/// An FD+tree's state.
#[derive(Debug)]
pub struct Tree {
    pub(crate) params: Params,
    pub(crate) store: BlockStore,
    /// `L_0` (`L_0^new` during a merge).
    pub(crate) top: Top,
    /// Materialized disk levels, labels strictly increasing; the last one is the bottom.
    /// During an FD+FC merge: the new levels being written, then the below-merge levels.
    pub(crate) levels: Arc<[DiskLevel]>,
    /// An FD+FC merge in progress (section 4.1).
    pub(crate) fc: Option<crate::fc::FcState>,
    /// An FD+FC merge recovery rebuilt, for the merge thread to resume (Remark A.6).
    pub(crate) fc_resume: Option<crate::fc::FcMerge>,
    /// An FD+DS merge in progress: the old view lookups use until the switch (section 3).
    pub(crate) side: Option<crate::merge::SideView>,
    pub(crate) next_file_id: u32,
    pub(crate) merges: MergeCounts,
    pub(crate) last_merge: Option<MergeReport>,
    /// Files replaced since the last commit, removed after the next one (persistent trees
    /// keep them so that the committed state stays readable after a crash).
    pub(crate) obsolete_files: Vec<u32>,
    /// The file holding `L_0`'s fences as committed (during a merge: `L_0^old`'s; 0: none).
    pub(crate) fences_file: u32,
    /// Every log record up to this sequence number is in the runs or the disk levels.
    pub(crate) applied_seq: u64,
    /// The committed progress record of an FD+FC merge in progress (0: none).
    pub(crate) merge_file: u32,
    /// Files of installed runs written but not synced yet (`flush.rs`). Invariant: every
    /// file a commit names is synced before its superblock is written; the commit takes
    /// this list with the manifest, under the tree lock, and syncs it first
    /// (`engine/commit.rs`).
    pub(crate) unsynced_files: Vec<Arc<dyn lamina_storage::StorageFile>>,
}

impl Tree {
    /// An empty tree (height 1: only `L_0`).
    pub fn new(params: Params, store: BlockStore) -> Self {
        let active =
            crate::memtable::Memtable::new(params.memtable_bytes_max, params.bloom_bits_per_key);
        Tree {
            params,
            store,
            top: Top::new(active),
            levels: Arc::from(Vec::new()),
            fc: None,
            fc_resume: None,
            side: None,
            next_file_id: 1,
            merges: MergeCounts::default(),
            last_merge: None,
            obsolete_files: Vec::new(),
            unsynced_files: Vec::new(),
            fences_file: 0,
            applied_seq: 0,
            merge_file: 0,
        }
    }

    /// The sizing parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The height `h`: one more than the bottom level's number.
    pub fn height(&self) -> usize {
        self.levels.last().map_or(1, |l| l.label + 1)
    }

    /// The counters `N_delta`, `N_nabla` (upper bounds; during a merge, of what lookups see
    /// behind the wavefront plus what the merge has not processed yet is not exact).
    pub fn counters(&self) -> Counters {
        let mut s = self.top.data_stats();
        for l in self.levels.iter() {
            s.merge(&l.stats);
        }
        Counters::of(&s)
    }

    /// The counters of what a merge takes as input: `L_0`'s runs and the disk levels, not
    /// the memtables. A delete still in a memtable cancels bytes that a merge starting now
    /// keeps, so counting it would let U-hat fall below what the merge writes, and level
    /// skipping could then break (I5).
    pub fn merge_input_counters(&self) -> Counters {
        let mut s = crate::format::stats::LevelStats::default();
        for l in self.top.runs.iter().chain(self.levels.iter()) {
            s.merge(&l.stats);
        }
        Counters::of(&s)
    }

    /// What the last merge did.
    pub fn last_merge(&self) -> Option<&MergeReport> {
        self.last_merge.as_ref()
    }

    /// Merge counts.
    pub fn merge_counts(&self) -> MergeCounts {
        self.merges
    }

    /// Labels of the materialized levels (0 first).
    pub fn materialized_labels(&self) -> Vec<usize> {
        std::iter::once(0).chain(self.levels.iter().map(|l| l.label)).collect()
    }

    /// Physical blocks of each disk level.
    pub fn level_blocks(&self) -> Vec<u32> {
        self.levels.iter().map(|l| l.blocks).collect()
    }

    /// Number of `L_0` runs (`L_0^new`'s during a merge).
    pub fn run_count(&self) -> usize {
        self.top.runs.len()
    }

    /// Memory held: `L_0` and every level's index (the old ones too during a merge).
    pub fn memory_bytes(&self) -> u64 {
        let mut bytes =
            self.top.memory_bytes() + self.levels.iter().map(DiskLevel::memory_bytes).sum::<u64>();
        if let Some(fc) = &self.fc {
            bytes += fc.memory_bytes();
        }
        if let Some(side) = &self.side {
            bytes += side.memory_bytes();
        }
        bytes
    }

    /// Counters of the segment cache, if there is one.
    pub fn cache_stats(&self) -> Option<lamina_storage::cache::CacheStats> {
        self.store.cache_stats()
    }

    /// Segments lookups read in place through level maps (`level_map.rs`).
    pub fn mapped_reads(&self) -> u64 {
        self.store.mapped_reads()
    }

    /// Whether a background merge is between its start and its end.
    pub fn merge_in_progress(&self) -> bool {
        self.fc.is_some() || self.side.is_some()
    }

    /// The wavefront key (I7) of an FD+FC merge in progress: `None` without one, `Some(None)`
    /// at `-infinity` (the empty key is a user key, so it cannot stand for `-infinity`).
    pub fn wavefront_key(&self) -> Option<Option<&[u8]>> {
        self.fc.as_ref().map(|fc| fc.wavefront_key.as_deref())
    }

    pub(crate) fn alloc_file_id(&mut self) -> Result<u32> {
        let id = self.next_file_id;
        self.next_file_id = id
            .checked_add(1)
            .filter(|&n| n < 100_000_000)
            .ok_or_else(|| Error::Unsupported { what: "more than 10^8 level files".into() })?;
        Ok(id)
    }

    /// Checks a key and value against the configured limits (which may be below the API's).
    pub fn check_put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_put(&self.params, key, value)
    }

    /// Checks a key against the configured limit.
    pub fn check_key(&self, key: &[u8]) -> Result<()> {
        check_key(&self.params, key)
    }
}

/// Checks a key and value against the configured limits.
pub fn check_put(params: &Params, key: &[u8], value: &[u8]) -> Result<()> {
    check_key(params, key)?;
    lamina_core::limits::check_value(value)?;
    if value.len() > params.value_bytes_max {
        return Err(lamina_core::InvalidArgument::ValueTooLong {
            len: value.len(),
            max: params.value_bytes_max,
        }
        .into());
    }
    Ok(())
}

/// Checks a key against the configured limit.
pub fn check_key(params: &Params, key: &[u8]) -> Result<()> {
    lamina_core::limits::check_key(key)?;
    if key.len() > params.key_bytes_max {
        return Err(lamina_core::InvalidArgument::KeyTooLong {
            len: key.len(),
            max: params.key_bytes_max,
        }
        .into());
    }
    Ok(())
}
