//! Merge-execute (section 2.3): reads every merged level (the runs of `L_0`, then the
//! materialized levels among `L_1..L_m`) in key order in parallel and writes the new levels
//! `L_1_new..L_m_new` in one pass, with the fences for `L_0_new`.
//!
//! For each key (smallest first): a fence `f` from the deepest merged level (the only fences
//! that point below the merge, to `L_succ(m)`) is carried into `L_m_new`; the data entries
//! `S_m..S_0` are coalesced into `S` (`coalesce.rs`). `f` and `S` go into `L_m_new`
//! (`builder.rs`).
//!
//! The pass is organized in FD+FC's stages (section 4.4.2): m-stage ([`MergeRun::load`])
//! reads the next block of every old level that has no buffered entries left (each block is
//! read once); m-insert ([`MergeRun::step`]) then processes key groups while every old level
//! still has buffered entries, so a stage holds all entries of a key or none (a key's
//! entries are never split between two blocks of a level). FD+XM and FD+DS run the stages
//! back to back; FD+FC runs m-delete between them (`crate::fc`).
//!
//! Entries are never copied out of the blocks read, only into the blocks written
//! (issue 22: merges over borrowed block payloads).

use std::cmp::Ordering;
use std::collections::VecDeque;

use lamina_core::{Error, Result};

use super::builder::Builder;
use super::coalesce::coalesce;
use super::tournament::Tournament;
use crate::format::entry::{BlockPtr, EntryRef};
use crate::level::cursor::{LevelCursor, READAHEAD_BLOCKS_DEFAULT};
use crate::level::{DiskLevel, LevelWriter};
use crate::store::BlockStore;

/// Where a resumed merge-execute pass continues (FD+FC recovery, Remark A.6).
#[derive(Debug, Clone, Default)]
pub(crate) struct Resumed {
    /// First block still needed of each old source, in source order.
    pub old_heads: Vec<u32>,
    /// Entries up to this key were processed (`None`: no key group was processed yet).
    pub processed: Option<Vec<u8>>,
    /// `p_last` of the pass.
    pub p_last: Option<BlockPtr>,
}

/// What merge-execute produced; the tree is not changed yet.
#[derive(Debug)]
pub(crate) struct Executed {
    /// Fences for `L_0_new` not yet taken.
    pub top_fences: Vec<(Vec<u8>, BlockPtr)>,
    /// The new levels written, labels increasing.
    pub levels: Vec<DiskLevel>,
    /// Entries dropped because newer ones shadowed them.
    pub shadowed: u64,
    /// Whether every level was merged (`L_m_new` is the new bottom).
    pub full: bool,
}

/// A merge-execute pass in progress.
#[derive(Debug)]
pub(crate) struct MergeRun {
    store: BlockStore,
    /// The old sources, newest first: `L_0`'s runs (newest first), then `L_1..L_m`.
    sources: Vec<LevelCursor>,
    /// The deepest merged level is a source (its fences point below the merge).
    deepest_is_level: bool,
    /// `L_0`'s fences, when `L_0` is the deepest merged level (every level the merge
    /// covers below it is skipped): they point below the merge and are carried.
    top_fences: Vec<(Vec<u8>, BlockPtr)>,
    top_fence_at: usize,
    full: bool,
    /// `L_succ(m)`: file id and blocks (fences carried from `L_m` point into it).
    succ: Option<(u32, u32)>,
    builder: Builder,
    /// Per source: blocks read and not reclaimed yet, with their first keys (FD+FC's
    /// m-delete, Remark A.5).
    loaded: Vec<VecDeque<(u32, Vec<u8>)>>,
    shadowed: u64,
    /// The last key processed.
    processed: Option<Vec<u8>>,
    /// Entries up to this key were processed before a crash (a resumed FD+FC merge).
    skip_through: Option<Vec<u8>>,
    key: Vec<u8>,
    data_at: Vec<bool>,
    /// The sources whose next entry has the key being processed (`step`).
    at_min: Vec<usize>,
    /// Per source, its next entry's key in short form ([`Head`]), kept in step with the
    /// cursor: the smallest key of tens of sources is found in one flat array.
    heads: Vec<Head>,
    /// Some source ran out of buffered entries and has blocks left ([`MergeRun::at_stage_end`]).
    /// Set by `load` and by each advance of a source, so the check per key group costs
    /// nothing (a scan of every source per group was a tenth of a merge's time at 10M keys).
    stage_ended: bool,
    /// The sources ordered by their next keys ([`source_order`]), kept in step with
    /// `heads`: rebuilt by `load`, a source's path replayed after `step` moves it.
    tournament: Tournament,
}

/// A source's next key, in the form most comparisons need: its first 8 bytes as a
/// big-endian integer (zero-padded) and its length. Two keys whose prefixes differ are
/// ordered by them; two keys of at most 8 bytes with one prefix are ordered by length (a
/// zero-padded key is a prefix of the other); anything else needs the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    prefix: u64,
    /// `u32::MAX`: the source has no buffered entry.
    len: u32,
}

impl Head {
    const NONE: Head = Head { prefix: 0, len: u32::MAX };

    fn of(key: Option<&[u8]>) -> Head {
        let Some(key) = key else { return Head::NONE };
        let mut first = [0u8; 8];
        let n = key.len().min(8);
        first[..n].copy_from_slice(&key[..n]);
        Head { prefix: u64::from_be_bytes(first), len: key.len() as u32 }
    }

    fn is_none(self) -> bool {
        self.len == u32::MAX
    }

    /// The order of the keys behind `self` and `other`, or `None` if it takes their bytes.
    fn cmp_short(self, other: Head) -> Option<std::cmp::Ordering> {
        match self.prefix.cmp(&other.prefix) {
            std::cmp::Ordering::Equal if self.len <= 8 && other.len <= 8 => {
                Some(self.len.cmp(&other.len))
            }
            std::cmp::Ordering::Equal => None,
            unequal => Some(unequal),
        }
    }
}

/// The order of two sources' next keys, a source without one after every other: by their
/// [`Head`]s, and by the keys' bytes when the heads cannot tell.
fn source_order(heads: &[Head], sources: &[LevelCursor], a: usize, b: usize) -> Ordering {
    let (ha, hb) = (heads[a], heads[b]);
    match (ha.is_none(), hb.is_none()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => ha.cmp_short(hb).unwrap_or_else(|| {
            let key = |j: usize| sources[j].peek().expect("a head has an entry").key();
            lamina_core::key_order::compare(key(a), key(b))
        }),
    }
}

/// A source that has no buffered entry but blocks left to read: the stage must end before
/// the next key group (the group's key may be in that block).
fn is_dry(c: &LevelCursor) -> bool {
    !c.has_buffered() && !c.read_all_blocks()
}

impl MergeRun {
    /// A pass merging `runs` (`L_0`'s, newest first, with `top_fences`, `L_0`'s fences) and
    /// the materialized `levels` with labels `<= m` into `writers` (the new levels, labels
    /// increasing), continuing from `resumed` (default: from the start). `levels` may hold
    /// levels below `m` too: the first of them is `L_succ(m)`.
    pub(crate) fn new(
        store: &BlockStore,
        runs: &[DiskLevel],
        top_fences: Vec<(Vec<u8>, BlockPtr)>,
        levels: &[DiskLevel],
        m: usize,
        writers: Vec<LevelWriter>,
        resumed: &Resumed,
    ) -> Result<Self> {
        let height = levels.last().map_or(1, |l| l.label + 1);
        let full = m + 1 >= height;
        let merged: Vec<&DiskLevel> = levels.iter().filter(|l| l.label <= m).collect();
        let succ = levels.iter().find(|l| l.label > m).map(|l| (l.file_id, l.blocks));
        let mut sources = Vec::with_capacity(runs.len() + merged.len());
        for (i, l) in runs.iter().chain(merged.iter().copied()).enumerate() {
            let start = resumed.old_heads.get(i).copied().unwrap_or(0);
            sources.push(LevelCursor::new(l, store, start, READAHEAD_BLOCKS_DEFAULT));
        }
        let n = sources.len();
        let deepest_is_level = !merged.is_empty();
        let mut top_fences = if deepest_is_level || full { Vec::new() } else { top_fences };
        if let Some(p) = &resumed.processed {
            top_fences.retain(|(k, _)| k.as_slice() > p.as_slice());
        }
        let mut run = MergeRun {
            store: store.clone(),
            sources,
            deepest_is_level,
            top_fences,
            top_fence_at: 0,
            full,
            succ,
            builder: Builder {
                writers,
                top_fences: Vec::new(),
                p_last: resumed.p_last,
                bottom: full,
            },
            loaded: vec![VecDeque::new(); n],
            shadowed: 0,
            processed: resumed.processed.clone(),
            skip_through: resumed.processed.clone(),
            key: Vec::new(),
            data_at: vec![false; n],
            at_min: Vec::with_capacity(n),
            heads: vec![Head::NONE; n],
            stage_ended: false,
            tournament: Tournament::new(n),
        };
        if full && !run.builder.writers.last().is_some_and(LevelWriter::started) {
            // The first block of the new bottom level, so L_0_new gets its -infinity fence
            // even if no entry survives.
            let corrupt = run.corrupt_fn();
            run.builder.append(b"", &[], &corrupt)?;
        }
        Ok(run)
    }

    /// [`corrupt_in`] over a clone of the store, for callers that go on to move or borrow
    /// the builder mutably (once per merge; `step` borrows instead).
    fn corrupt_fn(&self) -> impl Fn(String) -> Error + use<> {
        let store = self.store.clone();
        let file = self.builder.writers.last().map(LevelWriter::file_id);
        move |reason: String| corrupt_in(&store, file)(reason)
    }

    /// Whether the pass is a full merge.
    pub(crate) fn full(&self) -> bool {
        self.full
    }

    /// The last key processed.
    pub(crate) fn processed(&self) -> Option<&[u8]> {
        self.processed.as_deref()
    }

    /// The new levels.
    pub(crate) fn writers(&self) -> &[LevelWriter] {
        &self.builder.writers
    }

    /// The new levels, mutably (progress commits sync them).
    pub(crate) fn writers_mut(&mut self) -> &mut [LevelWriter] {
        &mut self.builder.writers
    }

    /// Entries dropped so far because newer ones shadowed them.
    pub(crate) fn shadowed(&self) -> u64 {
        self.shadowed
    }

    /// `p_last`.
    pub(crate) fn p_last(&self) -> Option<BlockPtr> {
        self.builder.p_last
    }

    /// M-stage: every old level without buffered entries reads its next block (if any).
    pub(crate) fn load(&mut self) -> Result<()> {
        for (i, c) in self.sources.iter_mut().enumerate() {
            if c.has_buffered() || c.read_all_blocks() {
                continue;
            }
            let indexes = c.load_block()?;
            let first = c.peek().map(|e| e.key().to_vec()).unwrap_or_default();
            for index in indexes {
                self.loaded[i].push_back((index, first.clone()));
            }
            if let Some(w) = &self.skip_through {
                // Only the first block read after a resume can hold processed entries.
                while c.peek().is_some_and(|e| e.key() <= w.as_slice()) {
                    c.advance()?;
                }
            }
            self.heads[i] = Head::of(c.peek().map(|e| e.key()));
        }
        self.stage_ended = self.sources.iter().any(is_dry);
        let (heads, sources) = (&self.heads, &self.sources);
        self.tournament.rebuild(|a, b| source_order(heads, sources, a, b));
        Ok(())
    }

    /// Whether some old level ran out of buffered entries and has blocks left: the stage
    /// ends here (the next key may be in that level's next block).
    pub(crate) fn at_stage_end(&self) -> bool {
        debug_assert_eq!(self.stage_ended, self.sources.iter().any(is_dry));
        self.stage_ended
    }

    /// Sets `at_min` to the sources whose next key is the smallest of all sources' (only
    /// those can hold an entry of the key), from the winner tree: about `log2 n`
    /// comparisons of the keys' short forms (`heads`), which decide almost every comparison
    /// without the cursors.
    fn find_sources_at_min(&mut self) {
        debug_assert!(
            self.heads
                .iter()
                .zip(&self.sources)
                .all(|(h, c)| { *h == Head::of(c.peek().map(|e| e.key())) })
        );
        self.at_min.clear();
        if let Some(w) = self.tournament.winner()
            && !self.heads[w].is_none()
        {
            let (heads, sources) = (&self.heads, &self.sources);
            self.tournament
                .winners(|i| source_order(heads, sources, i, w).is_eq(), &mut self.at_min);
        }
        debug_assert_eq!(
            {
                let mut found = self.at_min.clone();
                found.sort_unstable();
                found
            },
            self.sources_at_min_by_scan(),
            "the winner tree agrees with a scan of every source"
        );
    }

    /// [`MergeRun::find_sources_at_min`]'s answer by comparing every source (checks).
    fn sources_at_min_by_scan(&self) -> Vec<usize> {
        let mut at_min: Vec<usize> = Vec::new();
        for i in 0..self.sources.len() {
            if self.heads[i].is_none() {
                continue;
            }
            match at_min.first().map(|&m| source_order(&self.heads, &self.sources, i, m)) {
                None | Some(Ordering::Less) => at_min = vec![i],
                Some(Ordering::Equal) => at_min.push(i),
                Some(Ordering::Greater) => {}
            }
        }
        at_min
    }

    /// M-insert of one key group: the smallest buffered key's entries from every old level,
    /// coalesced and appended to the new levels. Returns false if every old level is
    /// exhausted. Call only when [`MergeRun::at_stage_end`] is false.
    pub(crate) fn step(&mut self) -> Result<bool> {
        debug_assert!(!self.at_stage_end(), "a group is processed only within a stage");
        self.find_sources_at_min();
        let top_fence = self.top_fences.get(self.top_fence_at).map(|(k, _)| k.as_slice());
        let source_min: Option<&[u8]> = self
            .at_min
            .first()
            .map(|&i| self.sources[i].peek().expect("a head has an entry").key());
        let min = match (source_min, top_fence) {
            (Some(m), Some(t)) if lamina_core::key_order::compare(t, m).is_lt() => {
                self.at_min.clear();
                t
            }
            (Some(m), _) => m,
            (None, Some(t)) => t,
            (None, None) => return Ok(false),
        };
        self.key.clear();
        self.key.extend_from_slice(min);
        self.skip_through = None;
        let key = std::mem::take(&mut self.key);
        let deepest = self.sources.len() - 1;
        // Fences first (a key's fence precedes its data entry): only the deepest merged
        // level's point below the merge; those of upper merged levels point into it.
        let mut carried = None;
        if let Some((k, ptr)) = self.top_fences.get(self.top_fence_at)
            && *k == key
        {
            carried = Some(*ptr);
            self.top_fence_at += 1;
        }
        for &i in &self.at_min {
            let c = &mut self.sources[i];
            if let Some(EntryRef::Fence { key: k, ptr }) = c.peek()
                && k == key.as_slice()
            {
                if i == deepest && self.deepest_is_level && !self.full {
                    carried = Some(ptr);
                }
                c.advance()?;
                self.heads[i] = Head::of(c.peek().map(|e| e.key()));
                self.stage_ended |= is_dry(c);
            }
        }
        self.data_at.fill(false);
        for &i in &self.at_min {
            let c = &self.sources[i];
            self.data_at[i] = c.peek().is_some_and(|e| e.is_data() && e.key() == key.as_slice());
        }
        // Borrows the store (no clone per key: three reference counts touched per key
        // were a twentieth of the merge thread's time).
        let corrupt =
            corrupt_in(&self.store, self.builder.writers.last().map(LevelWriter::file_id));
        let net = coalesce(
            self.sources
                .iter()
                .zip(&self.data_at)
                .filter(|(_, d)| **d)
                .map(|(c, _)| c.peek().expect("has a data entry")),
            self.full,
        );
        self.shadowed += net.shadowed;
        let mut fence = None;
        if let Some(ptr) = carried {
            let (succ_file, succ_blocks) =
                self.succ.ok_or_else(|| corrupt("fence below a full merge".into()))?;
            if ptr.file != succ_file
                || ptr.index >= succ_blocks
                || self.builder.p_last.is_some_and(|p| p.index > ptr.index)
            {
                return Err(corrupt(format!("bad fence {ptr:?} carried from L_m (key {key:?})")));
            }
            // A fence to the block p_last already points to is redundant (lookups reach
            // that block through the earlier fence): dropped, which keeps fences from
            // accumulating in L_m over successive merges.
            if self.builder.p_last != Some(ptr) {
                self.builder.p_last = Some(ptr);
                fence = Some(EntryRef::Fence { key: &key, ptr });
            }
        }
        // The key's records, fence first, without a vector per key.
        match (fence, net.entry) {
            (Some(f), Some(d)) => self.builder.append(&key, &[f, d], &corrupt)?,
            (Some(one), None) | (None, Some(one)) => self.builder.append(&key, &[one], &corrupt)?,
            (None, None) => {}
        }
        for &i in &self.at_min {
            if self.data_at[i] {
                let c = &mut self.sources[i];
                c.advance()?;
                self.heads[i] = Head::of(c.peek().map(|e| e.key()));
                self.stage_ended |= is_dry(c);
            }
        }
        // Every source at the key moved past it: replay their paths in the winner tree.
        let (heads, sources) = (&self.heads, &self.sources);
        for &i in &self.at_min {
            self.tournament.update(i, |a, b| source_order(heads, sources, a, b));
        }
        match &mut self.processed {
            Some(p) => {
                p.clear();
                p.extend_from_slice(&key);
            }
            None => self.processed = Some(key.clone()),
        }
        self.key = key;
        Ok(true)
    }

    /// Runs a whole stage: m-stage, then m-insert until the stage ends. Returns whether
    /// every old level is exhausted.
    pub(crate) fn run_stage(&mut self) -> Result<bool> {
        self.load()?;
        while !self.at_stage_end() {
            if !self.step()? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The fences for `L_0_new` produced since the last call.
    pub(crate) fn take_top_fences(&mut self) -> Vec<(Vec<u8>, BlockPtr)> {
        std::mem::take(&mut self.builder.top_fences)
    }

    /// For each old source, the blocks read and not yet reclaimed, with their first keys
    /// (m-delete pops the ones it reclaims).
    pub(crate) fn loaded_blocks(&mut self) -> &mut [VecDeque<(u32, Vec<u8>)>] {
        &mut self.loaded
    }

    /// For each old source, the first block still needed (its blocks before it are
    /// reclaimed or reclaimable).
    pub(crate) fn old_heads(&self) -> Vec<u32> {
        self.loaded
            .iter()
            .zip(&self.sources)
            .map(|(l, c)| l.front().map_or_else(|| c.next_block(), |(b, _)| *b))
            .collect()
    }

    /// Writes the last blocks, syncs the new levels and returns what the merge produced.
    pub(crate) fn finish(self) -> Result<Executed> {
        let corrupt = self.corrupt_fn();
        if !self.full && !self.builder.writers.last().is_some_and(LevelWriter::started) {
            return Err(corrupt("merged levels lack the -infinity fence (I2)".into()));
        }
        let mut levels = Vec::with_capacity(self.builder.writers.len());
        for w in self.builder.writers {
            levels.push(w.finish()?);
        }
        Ok(Executed {
            top_fences: self.builder.top_fences,
            levels,
            shadowed: self.shadowed,
            full: self.full,
        })
    }
}

/// How a structural problem found by the merge is reported: a corruption in the new data
/// level's file `file` (the path is made only if it is needed).
fn corrupt_in(store: &BlockStore, file: Option<u32>) -> impl Fn(String) -> Error + '_ {
    move |reason: String| match file {
        Some(id) => Error::corruption(
            store.path(id, crate::store::FileKind::Level),
            0,
            format!("merge: {reason}"),
        ),
        None => Error::corruption("fdtree merge", 0, reason),
    }
}

#[cfg(test)]
mod tests {
    use super::Head;
    use proptest::prelude::*;

    proptest! {
        /// The short form orders keys as their bytes do whenever it answers at all, and it
        /// answers for every pair of keys of at most 8 bytes.
        #[test]
        fn heads_order_keys_as_bytes_do(
            a in proptest::collection::vec(0u8..4, 0..12),
            b in proptest::collection::vec(0u8..4, 0..12),
        ) {
            let (ha, hb) = (Head::of(Some(&a)), Head::of(Some(&b)));
            match ha.cmp_short(hb) {
                Some(order) => prop_assert_eq!(order, a.cmp(&b)),
                None => prop_assert!(a.len() > 8 || b.len() > 8),
            }
        }
    }

    #[test]
    fn a_source_without_entries_has_no_head() {
        assert!(Head::of(None).is_none());
        assert!(!Head::of(Some(b"")).is_none());
        assert_eq!(
            Head::of(Some(b"")).cmp_short(Head::of(Some(b"\0"))),
            Some(std::cmp::Ordering::Less)
        );
    }
}
