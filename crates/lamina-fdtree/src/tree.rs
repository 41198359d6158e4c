//! The FD+tree without concurrency control (paper section 2): `L_0`, the materialized disk
//! levels, the counters `N_delta`/`N_nabla`, and modification as in section 2.2 / Algorithm 1.
//! Lookup, scan, merge and verification live in their own modules as `impl Tree` blocks.

use lamina_core::{Error, Result};

use crate::entry::insert_bytes;
use crate::level::DiskLevel;
use crate::merge::Trigger;
use crate::options::Params;
use crate::store::BlockStore;
use crate::top::{DataSlot, TopLevel};

/// The counters of section 2.1, kept exact (Remark A.1: a delete first checks that the key
/// exists, so every delete entry cancels exactly one insert entry below it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// `N_delta`: insert entries across all levels.
    pub inserts: u64,
    /// `N_nabla`: delete entries across all levels.
    pub deletes: u64,
    /// Encoded bytes of all insert entries.
    pub insert_bytes: u64,
    /// Encoded bytes of the insert entries that some delete entry cancels.
    pub cancelled_bytes: u64,
}

impl Counters {
    /// Bytes of the live records: the exact data size of a full merge (eq. 1, `i = h - 1`).
    pub fn live_bytes(&self) -> u64 {
        self.insert_bytes - self.cancelled_bytes
    }

    /// The true number of elements, `N_delta - N_nabla`.
    pub fn live_keys(&self) -> u64 {
        self.inserts - self.deletes
    }

    /// Removes `pairs` insert/delete pairs that cancelled out in a merge (their inserts
    /// held `bytes` encoded bytes): both counters drop, the live size does not change.
    pub fn remove_cancelled(&mut self, pairs: u64, bytes: u64) {
        self.inserts -= pairs;
        self.deletes -= pairs;
        self.insert_bytes -= bytes;
        self.cancelled_bytes -= bytes;
    }

    /// (I6) no-underflow: `N_nabla / N_delta <= 1/3`.
    pub fn underflows(&self) -> bool {
        3 * self.deletes > self.inserts
    }
}

/// What a modification knows of its key's visible value before it applies (Remark A.1's
/// existence check), so that the check can run before the tree lock is taken (FD+FC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visible {
    /// Not looked up: the modification looks it up itself.
    Unknown,
    /// The key is absent.
    Absent,
    /// The key has a value of this length.
    Present {
        /// Length of the value.
        value_len: usize,
    },
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
    /// New levels dropped by merge-finalize (level skipping, section 2.3).
    pub levels_skipped: u64,
    /// New levels relabeled to a smaller number (level tightening, eq. 3).
    pub levels_tightened: u64,
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
    pub trigger: crate::merge::Trigger,
    /// Levels `L_0..L_m` were replaced (eq. 2).
    pub m: usize,
    /// Whether it read every level.
    pub full: bool,
    /// Height before and after.
    pub height_before: usize,
    /// Height after.
    pub height_after: usize,
    /// `z` of merge-finalize (`L_1..L_z` skipped).
    pub z: usize,
    /// Insert/delete pairs that cancelled out.
    pub cancellations: u64,
    /// Materialized labels after the merge.
    pub labels_after: Vec<usize>,
}

/// An FD+tree: `L_0` in memory, `L_1..L_(h-1)` on disk (skipped levels absent).
#[derive(Debug)]
pub struct Tree {
    pub(crate) params: Params,
    pub(crate) store: BlockStore,
    pub(crate) top: TopLevel,
    /// `L_0^old` during an FD+DS background merge (section 3): the frozen `L_0` the merge
    /// reads, through which lookups reach the old levels; `top` is then `L_0^new` and holds
    /// only the modifications made since the merge began (no fences). `None` otherwise.
    pub(crate) frozen_top: Option<std::sync::Arc<TopLevel>>,
    /// An FD+FC merge in progress (section 4.1): `top` is then `L_0^new`, `levels` the new
    /// upper levels being written followed by the below-merge levels, and this holds
    /// `L_0^old`, the wavefront fence and the old levels. `None` otherwise.
    pub(crate) fc: Option<crate::fc::FcState>,
    /// An FD+FC merge recovery rebuilt, for the merge thread to resume (Remark A.6).
    pub(crate) fc_resume: Option<crate::fc::FcPending>,
    /// Merges run in a background thread (FD+DS): modifications never merge themselves.
    pub(crate) background_merges: bool,
    /// Materialized disk levels, labels strictly increasing; the last one is the bottom.
    pub(crate) levels: Vec<DiskLevel>,
    pub(crate) counters: Counters,
    pub(crate) next_file_id: u32,
    pub(crate) merges: MergeCounts,
    /// Level files replaced since the last checkpoint, removed by the next one (persistent
    /// trees keep them so the committed state stays readable after a crash).
    pub(crate) obsolete_files: Vec<u32>,
    /// Superblock and log of a persistent tree.
    pub(crate) persist: Option<crate::persist::Persist>,
    /// Sequence number of the last log record applied.
    pub(crate) applied_seq: u64,
    pub(crate) last_merge: Option<MergeReport>,
}

impl Tree {
    /// An empty tree (height 1: only `L_0`).
    pub fn new(params: Params, store: BlockStore) -> Self {
        Tree {
            params,
            store,
            top: TopLevel::new(),
            frozen_top: None,
            fc: None,
            fc_resume: None,
            background_merges: false,
            levels: Vec::new(),
            counters: Counters::default(),
            next_file_id: 1,
            merges: MergeCounts::default(),
            obsolete_files: Vec::new(),
            persist: None,
            applied_seq: 0,
            last_merge: None,
        }
    }

    /// The height `h`: one more than the bottom level's number.
    pub fn height(&self) -> usize {
        self.levels.last().map_or(1, |l| l.label + 1)
    }

    /// The counters.
    pub fn counters(&self) -> Counters {
        self.counters
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

    /// `B(L_0)` in blocks.
    pub fn top_size_blocks(&self) -> u64 {
        self.params.blocks_of(self.top.sized_bytes())
    }

    /// Physical blocks of each disk level.
    pub fn level_blocks(&self) -> Vec<u32> {
        self.levels.iter().map(|l| l.blocks).collect()
    }

    /// Memory held by `L_0` (both parts during a background merge).
    pub fn memory_bytes(&self) -> u64 {
        self.top.memory_bytes()
            + self.frozen_top.as_ref().map_or(0, |t| t.memory_bytes())
            + self.fc.as_ref().map_or(0, |fc| fc.old_top.memory_bytes())
    }

    /// Counters of the block cache, if there is one.
    pub fn cache_stats(&self) -> Option<lamina_storage::cache::CacheStats> {
        self.store.cache_stats()
    }

    /// Whether a background merge is between its start and its switch (FD+DS).
    pub fn merge_in_progress(&self) -> bool {
        self.frozen_top.is_some() || self.fc.is_some()
    }

    /// The wavefront key (I7) of an FD+FC merge in progress (empty: `-infinity`).
    pub fn wavefront_key(&self) -> Option<&[u8]> {
        self.fc.as_ref().map(|fc| fc.wavefront_key.as_slice())
    }

    /// Disk levels a lookup may pass: behind the wavefront (or with no merge) and beyond it.
    pub fn lookup_paths_levels(&self) -> (usize, usize) {
        (self.levels.len(), self.fc.as_ref().map_or(0, |fc| fc.old_levels.len()))
    }

    /// Blocks of the old levels an FD+FC merge in progress has reclaimed so far.
    pub fn reclaimed_old_blocks(&self) -> u64 {
        self.fc
            .as_ref()
            .map_or(0, |fc| fc.old_levels.iter().map(|l| u64::from(l.shared.head())).sum())
    }

    /// The `L_0` whose fences lead to the disk levels: `L_0^old` during a background merge.
    pub(crate) fn fence_top(&self) -> &TopLevel {
        self.frozen_top.as_deref().unwrap_or(&self.top)
    }

    pub(crate) fn alloc_file_id(&mut self) -> Result<u32> {
        let id = self.next_file_id;
        self.next_file_id = id
            .checked_add(1)
            .ok_or_else(|| Error::Unsupported { what: "more than 2^32 level files".into() })?;
        Ok(id)
    }

    /// Checks a key and value against the configured limits (which may be below the API's).
    pub fn check_put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_key(key)?;
        lamina_core::limits::check_value(value)?;
        if value.len() > self.params.value_bytes_max {
            return Err(lamina_core::InvalidArgument::ValueTooLong {
                len: value.len(),
                max: self.params.value_bytes_max,
            }
            .into());
        }
        Ok(())
    }

    /// Checks a key against the configured limit.
    pub fn check_key(&self, key: &[u8]) -> Result<()> {
        lamina_core::limits::check_key(key)?;
        if key.len() > self.params.key_bytes_max {
            return Err(lamina_core::InvalidArgument::KeyTooLong {
                len: key.len(),
                max: self.params.key_bytes_max,
            }
            .into());
        }
        Ok(())
    }

    /// Insert or overwrite (section 2.2: an update is a deletion followed by an insertion).
    /// Merges triggered by the modification run before this returns (FD+XM).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.apply_put(key, value)?;
        self.run_triggered_merges()
    }

    /// Delete; returns whether the key existed. Merges triggered run before this returns.
    pub fn delete(&mut self, key: &[u8]) -> Result<bool> {
        let existed = self.apply_delete(key)?;
        self.run_triggered_merges()?;
        Ok(existed)
    }

    /// The put of section 2.2 on `L_0` only, without running merges.
    pub fn apply_put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.apply_put_known(key, value, Visible::Unknown)
    }

    /// [`Tree::apply_put`] with the key's visible value already looked up (`known`: the
    /// length of the current value, if any), so that no lookup runs here (FD+FC looks it up
    /// before taking the tree lock; modifications are serialized, so it stays exact).
    pub(crate) fn apply_put_known(
        &mut self,
        key: &[u8],
        value: &[u8],
        known: Visible,
    ) -> Result<()> {
        // Deletion part: removes a visible record (an insert in L_0, or a delete entry that
        // cancels the one below). Then the insertion part adds the new insert entry.
        let mut slot = self.delete_visible(key, known)?.unwrap_or_default();
        slot.insert = Some(value.to_vec());
        self.counters.inserts += 1;
        self.counters.insert_bytes += insert_bytes(key.len(), value.len()) as u64;
        self.top.set_slot(key, Some(slot));
        Ok(())
    }

    /// The delete of section 2.2 on `L_0` only, without running merges.
    pub fn apply_delete(&mut self, key: &[u8]) -> Result<bool> {
        self.apply_delete_known(key, Visible::Unknown)
    }

    /// [`Tree::apply_delete`] with the key's visible value already looked up.
    pub(crate) fn apply_delete_known(&mut self, key: &[u8], known: Visible) -> Result<bool> {
        let before = self.counters;
        let slot = self.delete_visible(key, known)?;
        let existed = self.counters != before;
        self.top.set_slot(key, slot);
        Ok(existed)
    }

    /// Removes the visible record of `key`, if any, updating the counters, and returns the
    /// `L_0` slot to store (not yet stored). `known`: the visible value's length, looked up
    /// by the caller, or `None` to look it up here.
    fn delete_visible(&mut self, key: &[u8], known: Visible) -> Result<Option<DataSlot>> {
        if let Some(slot) = self.top.slot(key) {
            let mut slot = slot.clone();
            if let Some(old) = slot.insert.take() {
                // Algorithm 1 line 12: delete the insert entry from L_0.
                self.counters.inserts -= 1;
                self.counters.insert_bytes -= insert_bytes(key.len(), old.len()) as u64;
            }
            // A delete-only slot: the key is already absent.
            return Ok(Some(slot));
        }
        // Remark A.1: look the key up before adding a delete entry, so that N_nabla counts
        // only deletes that cancel an insert.
        let current = match known {
            Visible::Present { value_len } => Some(value_len),
            Visible::Absent => None,
            Visible::Unknown => self.get(key)?.map(|v| v.len()),
        };
        match current {
            Some(len) => {
                self.counters.deletes += 1;
                self.counters.cancelled_bytes += insert_bytes(key.len(), len) as u64;
                Ok(Some(DataSlot { delete: true, insert: None }))
            }
            None => Ok(None),
        }
    }

    /// Runs the merges section 2.2 triggers, then verifies (if configured) and checkpoints
    /// a persistent tree (`persist.rs`). The underflow
    /// check comes first: its full merge also empties `L_0`, and an overflow merge never
    /// raises `N_nabla / N_delta` (it removes cancelled pairs), so checking (I6) first avoids
    /// an overflow merge right before a full one without changing the invariants kept.
    pub fn run_triggered_merges(&mut self) -> Result<()> {
        if self.background_merges || self.fc.is_some() {
            // The merge thread is woken by the engine (FD+DS, FD+FC); an FD+FC merge being
            // recovered is finished first (`FdTree::with_storage`).
            return Ok(());
        }
        let mut merged = false;
        if self.counters.underflows() {
            self.merge_unverified(Trigger::Underflow)?;
            merged = true;
        }
        if self.top_size_blocks() > self.params.kappa0_blocks {
            self.merge_unverified(Trigger::Overflow)?;
            merged = true;
        }
        if merged {
            self.verify_if_configured()?;
            self.checkpoint()?;
        }
        Ok(())
    }
}
