//! Merge-execute (section 2.3): reads every materialized level among `L_0..L_m` in key order
//! in parallel and writes the new levels `L_0_new..L_m_new` in one pass.
//!
//! For each key (smallest first): a fence `f` from the deepest merged level (the only fences
//! that point below the merge, to `L_succ(m)`) is carried into `L_m_new`; the data entries
//! `S_m..S_0` are coalesced into `S`. `f` and `S` go into the last block of `L_m_new`; when it
//! is full a new block begins, whose first entry is `f` or else the fence `(key, p_last)`
//! (I2), and a fence to the new block is added to the level above, which may begin a new
//! block in turn, up to `L_0_new` (Algorithm 1, lines 35-40; `builder.rs`).
//!
//! The pass is organized in FD+FC's stages (section 4.4.2): m-stage ([`MergeRun::load`])
//! reads the next block of every old level that has no buffered entries left (each block is
//! read once); m-insert ([`MergeRun::step`]) then processes key groups while every old level
//! still has buffered entries, so a stage holds all entries of a key or none. FD+XM and FD+DS
//! simply run the stages back to back; FD+FC runs m-delete between them (`crate::fc`).

use std::collections::VecDeque;

use lamina_core::{Error, Result};

use super::builder::Builder;
use super::coalesce::coalesce;
use super::writer::LevelWriter;
use crate::entry::Entry;
use crate::level::{DiskLevel, LevelCursor};
use crate::store::BlockStore;
use crate::top::TopLevel;
use crate::tree::Tree;

/// What merge-execute produced; the tree is not changed yet.
#[derive(Debug)]
pub(crate) struct Executed {
    /// `L_0_new`: fences to the first new level.
    pub top: TopLevel,
    /// The new levels written, labels increasing (every label `1..=m` for FD+XM/DS).
    pub levels: Vec<DiskLevel>,
    /// Insert/delete pairs that cancelled out.
    pub cancellations: u64,
    /// Encoded bytes of the cancelled inserts.
    pub cancelled_bytes: u64,
    /// Whether every level was merged (`L_m_new` is the new bottom).
    pub full: bool,
}

/// Where a resumed merge-execute pass continues (FD+FC recovery, Remark A.6).
#[derive(Debug, Clone, Default)]
pub(crate) struct Resumed {
    /// First block still needed of each old merged level, top-down.
    pub old_heads: Vec<u32>,
    /// Entries up to this key were processed (`None`: no key group was processed yet).
    pub wavefront_key: Option<Vec<u8>>,
    /// `p_last` of the pass.
    pub p_last: Option<crate::entry::BlockPtr>,
    /// Cancellations so far.
    pub cancellations: u64,
    /// Their insert bytes.
    pub cancelled_bytes: u64,
}

/// What a progress record needs from a pass.
pub(crate) struct Progressed {
    pub started: bool,
    pub p_last: Option<crate::entry::BlockPtr>,
    pub cancellations: u64,
    pub cancelled_bytes: u64,
    pub new_levels: Vec<crate::fc::NewLevelProgress>,
}

/// One merged old level, read in key order.
enum Source<'a> {
    Top(std::iter::Peekable<std::vec::IntoIter<Entry>>),
    Disk(LevelCursor<'a>),
}

impl Source<'_> {
    /// The next entry if it is buffered (never reads a block).
    fn peek_buffered(&mut self) -> Result<Option<&Entry>> {
        match self {
            Source::Top(it) => Ok(it.peek()),
            Source::Disk(c) if c.has_buffered() => c.peek(),
            Source::Disk(_) => Ok(None),
        }
    }

    fn next_entry(&mut self) -> Result<Option<Entry>> {
        match self {
            Source::Top(it) => Ok(it.next()),
            Source::Disk(c) => c.next_entry(),
        }
    }
}

/// A merge-execute pass in progress.
pub(crate) struct MergeRun<'a> {
    store: &'a BlockStore,
    sources: Vec<Source<'a>>,
    full: bool,
    succ: Option<&'a DiskLevel>,
    builder: Builder,
    group: Vec<Vec<Entry>>,
    cancellations: u64,
    cancelled_bytes: u64,
    /// Whether any key group was processed (a resumed pass counts the ones before).
    started: bool,
    /// Per disk source (old level, top-down): `(block index, first key)` of the blocks read
    /// and not yet reclaimed (FD+FC's m-delete, Remark A.5).
    loaded: Vec<VecDeque<(u32, Vec<u8>)>>,
    /// Entries up to this key were processed before a crash: skipped when read (a resumed
    /// FD+FC merge, Remark A.6).
    skip_through: Option<Vec<u8>>,
    corrupt: Box<dyn Fn(String) -> Error + 'a>,
}

impl<'a> MergeRun<'a> {
    /// A pass merging `top_entries` (`L_0`, or `L_0^old`) and the materialized levels of
    /// `levels` with labels `<= m` into `writers` (the new levels, labels increasing).
    pub(crate) fn new(
        store: &'a BlockStore,
        top_entries: Vec<Entry>,
        levels: &'a [DiskLevel],
        m: usize,
        writers: Vec<LevelWriter>,
    ) -> Result<Self> {
        Self::resume(store, top_entries, levels, m, writers, &Resumed::default())
    }

    /// A pass that continues from committed progress (FD+FC recovery, Remark A.6): the old
    /// levels are read from their first needed block, entries up to the wavefront skipped,
    /// `top_entries` already hold only `L_0^old`'s unprocessed entries, and the writers
    /// continue their levels.
    pub(crate) fn resume(
        store: &'a BlockStore,
        top_entries: Vec<Entry>,
        levels: &'a [DiskLevel],
        m: usize,
        writers: Vec<LevelWriter>,
        resumed: &Resumed,
    ) -> Result<Self> {
        let height = levels.last().map_or(1, |l| l.label + 1);
        let full = m + 1 >= height;
        let merged: Vec<&DiskLevel> = levels.iter().filter(|l| l.label <= m).collect();
        let succ = levels.iter().find(|l| l.label > m);
        let deepest_file = merged.last().map(|l| l.file.clone());
        let corrupt = Box::new(move |reason: String| match &deepest_file {
            Some(f) => store.corruption(&**f, 0, reason),
            None => Error::corruption("fdtree L_0", 0, reason),
        });
        let mut sources = vec![Source::Top(top_entries.into_iter().peekable())];
        for (i, l) in merged.iter().enumerate() {
            let start = resumed.old_heads.get(i).copied().unwrap_or(0);
            sources.push(Source::Disk(LevelCursor::new(l, store, start, None)));
        }
        let n = sources.len();
        let mut run = MergeRun {
            store,
            sources,
            full,
            succ,
            builder: Builder {
                writers,
                top: TopLevel::new(),
                p_last: resumed.p_last,
                bottom: full,
            },
            group: vec![Vec::new(); n],
            cancellations: resumed.cancellations,
            cancelled_bytes: resumed.cancelled_bytes,
            started: resumed.wavefront_key.is_some(),
            loaded: vec![VecDeque::new(); n - 1],
            skip_through: resumed.wavefront_key.clone(),
            corrupt,
        };
        if full && !run.builder.writers.last().is_some_and(LevelWriter::started) {
            // The first block of the new bottom level.
            run.builder.append(store, b"", Vec::new(), &*run.corrupt)?;
        }
        Ok(run)
    }

    /// Whether the pass is a full merge.
    pub(crate) fn full(&self) -> bool {
        self.full
    }

    /// M-stage: every old level without buffered entries reads its next block (if any).
    pub(crate) fn load(&mut self) -> Result<()> {
        for (i, s) in self.sources.iter_mut().enumerate().skip(1) {
            let Source::Disk(c) = s else { unreachable!("disk levels follow L_0") };
            if c.has_buffered() || c.read_all_blocks() {
                continue;
            }
            if let Some(e) = c.peek()? {
                let first = e.key().to_vec();
                self.loaded[i - 1].push_back((c.block_index(), first));
            }
            if let Some(w) = &self.skip_through {
                // Only the first block read after a resume can hold processed entries.
                while c.has_buffered() && c.peek()?.is_some_and(|e| e.key() <= w.as_slice()) {
                    c.next_entry()?;
                }
            }
        }
        self.skip_through = None;
        Ok(())
    }

    /// Syncs the blocks the new levels have written (before a progress commit).
    pub(crate) fn sync_new_levels(&self) -> Result<()> {
        self.builder.writers.iter().try_for_each(|w| w.sync(self.store))
    }

    /// What a progress record needs from the pass: `p_last`, the cancellations, and each
    /// new level's progress.
    pub(crate) fn progress_parts(&self) -> Progressed {
        Progressed {
            started: self.started,
            p_last: self.builder.p_last,
            cancellations: self.cancellations,
            cancelled_bytes: self.cancelled_bytes,
            new_levels: self.builder.writers.iter().map(LevelWriter::progress).collect(),
        }
    }

    /// Whether some old level ran out of buffered entries and has blocks left: the stage
    /// ends here (the next key may be in that level's next block).
    pub(crate) fn at_stage_end(&self) -> bool {
        self.sources
            .iter()
            .any(|s| matches!(s, Source::Disk(c) if !c.has_buffered() && !c.read_all_blocks()))
    }

    /// M-insert of one key group: the smallest buffered key's entries from every old level,
    /// coalesced and appended to the new levels. Returns the key, or `None` if every old
    /// level is exhausted. Call only when [`MergeRun::at_stage_end`] is false.
    pub(crate) fn step(&mut self) -> Result<Option<Vec<u8>>> {
        debug_assert!(!self.at_stage_end(), "a group is processed only within a stage");
        let mut key: Option<Vec<u8>> = None;
        for s in &mut self.sources {
            if let Some(e) = s.peek_buffered()?
                && key.as_deref().is_none_or(|k| e.key() < k)
            {
                key = Some(e.key().to_vec());
            }
        }
        let Some(key) = key else { return Ok(None) };
        self.started = true;
        let deepest = self.sources.len() - 1;
        let mut f = None;
        for (idx, s) in self.sources.iter_mut().enumerate() {
            // A key's entries in one level are in one block, so they are all buffered.
            while s.peek_buffered()?.is_some_and(|e| e.key() == key.as_slice()) {
                match s.next_entry()?.expect("peeked") {
                    // Fences of upper merged levels point into the merged levels: dropped.
                    Entry::Fence { ptr, .. } if idx == deepest && !self.full => f = Some(ptr),
                    Entry::Fence { .. } => {}
                    e => self.group[idx].push(e),
                }
            }
        }
        let corrupt = &*self.corrupt;
        let net = coalesce(&key, self.group.iter_mut().rev().map(std::mem::take))
            .map_err(|r| corrupt(format!("{r} (key {key:?})")))?;
        if self.full && net.delete {
            return Err(corrupt(format!("delete entry with no insert to cancel (key {key:?})")));
        }
        self.cancellations += net.cancellations;
        self.cancelled_bytes += net.cancelled_bytes;
        let mut records = Vec::with_capacity(3);
        if let Some(ptr) = f {
            let succ = self.succ.expect("not a full merge");
            if ptr.file != succ.file_id
                || ptr.index >= succ.blocks
                || self.builder.p_last.is_some_and(|p| p.index > ptr.index)
            {
                return Err(corrupt(format!("bad fence {ptr:?} to level {}", succ.label)));
            }
            // A fence to the block p_last already points to is redundant (lookups reach
            // that block through the earlier fence): dropped, which keeps fences from
            // accumulating in L_m over successive merges.
            if self.builder.p_last != Some(ptr) {
                self.builder.p_last = Some(ptr);
                records.push(Entry::Fence { key: key.clone(), ptr });
            }
        }
        records.extend(net.into_entries(&key));
        if !records.is_empty() {
            self.builder.append(self.store, &key, records, corrupt)?;
        }
        Ok(Some(key))
    }

    /// Runs a whole stage: m-stage, then m-insert until the stage ends. Returns the last key
    /// processed (if any) and whether every old level is exhausted.
    pub(crate) fn run_stage(&mut self) -> Result<(Option<Vec<u8>>, bool)> {
        self.load()?;
        let mut last = None;
        while !self.at_stage_end() {
            match self.step()? {
                Some(key) => last = Some(key),
                None => return Ok((last, true)),
            }
        }
        Ok((last, false))
    }

    /// The fences for `L_0_new` produced since the last call (FD+FC publishes them at
    /// m-delete, together with the wavefront they are behind).
    pub(crate) fn take_top_fences(&mut self) -> TopLevel {
        std::mem::take(&mut self.builder.top)
    }

    /// For each old disk level (top-down), the blocks read and not yet reclaimed, with their
    /// first keys (m-delete pops the ones it reclaims).
    pub(crate) fn loaded_blocks(&mut self) -> &mut [VecDeque<(u32, Vec<u8>)>] {
        &mut self.loaded
    }

    /// Writes the last blocks, syncs the new levels and returns what the merge produced.
    pub(crate) fn finish(self) -> Result<Executed> {
        if !self.full && !self.builder.writers.last().is_some_and(LevelWriter::started) {
            return Err((self.corrupt)("merged levels lack the -infinity fence (I2)".into()));
        }
        let mut levels = Vec::with_capacity(self.builder.writers.len());
        for w in self.builder.writers {
            levels.push(w.finish(self.store)?);
        }
        Ok(Executed {
            top: self.builder.top,
            levels,
            cancellations: self.cancellations,
            cancelled_bytes: self.cancelled_bytes,
            full: self.full,
        })
    }
}

impl Tree {
    /// Runs merge-execute for `L_0..L_m`. On error, the new files are removed and the tree
    /// is unchanged.
    pub(crate) fn execute(&mut self, m: usize) -> Result<Executed> {
        let ids = (0..m).map(|_| self.alloc_file_id()).collect::<Result<Vec<u32>>>()?;
        execute_detached(&self.store, self.params.payload_bytes, &self.top, &self.levels, m, &ids)
    }
}

/// Creates the writers of new levels `labels` in the new files `ids`; on error, removes
/// the files created.
pub(crate) fn create_writers(
    store: &BlockStore,
    payload_bytes: u32,
    labels: &[usize],
    ids: &[u32],
) -> Result<Vec<LevelWriter>> {
    assert_eq!(ids.len(), labels.len(), "one new file per new level");
    let mut writers = Vec::with_capacity(labels.len());
    for (&label, &id) in labels.iter().zip(ids) {
        match store.create(id) {
            Ok(f) => writers.push(LevelWriter::new(label, id, f, payload_bytes)),
            Err(e) => {
                for w in &writers {
                    let _ = store.remove(w.file_id()); // best effort: the error is returned
                }
                return Err(e);
            }
        }
    }
    Ok(writers)
}

/// Merge-execute for `L_0..L_m` of the tree made of `top` and `levels`, writing new level
/// `i` into the new file `ids[i - 1]`. Reads the old levels without changing them and needs
/// no access to the tree, so FD+DS runs it in the background on a snapshot of the levels and
/// `L_0^old` (section 3). On error, the new files are removed.
pub(crate) fn execute_detached(
    store: &BlockStore,
    payload_bytes: u32,
    top: &TopLevel,
    levels: &[DiskLevel],
    m: usize,
    ids: &[u32],
) -> Result<Executed> {
    let labels: Vec<usize> = (1..=m).collect();
    let writers = create_writers(store, payload_bytes, &labels, ids)?;
    let result = MergeRun::new(store, top.entries(), levels, m, writers).and_then(|mut run| {
        while !run.run_stage()?.1 {}
        run.finish()
    });
    if result.is_err() {
        for &id in ids {
            let _ = store.remove(id); // best effort: the error that matters is returned
        }
    }
    result
}
