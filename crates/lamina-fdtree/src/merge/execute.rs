//! Merge-execute (section 2.3): reads every materialized level among `L_0..L_m` in key order
//! in parallel and writes the new levels `L_0_new..L_m_new` in one pass.
//!
//! For each key (smallest first): a fence `f` from the deepest merged level (the only fences
//! that point below the merge, to `L_succ(m)`) is carried into `L_m_new`; the data entries
//! `S_m..S_0` are coalesced into `S`. `f` and `S` go into the last block of `L_m_new`; when it
//! is full a new block begins, whose first entry is `f` or else the fence `(key, p_last)`
//! (I2), and a fence to the new block is added to the level above, which may begin a new
//! block in turn, up to `L_0_new` (Algorithm 1, lines 35-40).

use std::sync::Arc;

use lamina_core::{Error, Result};
use lamina_storage::StorageFile;

use super::coalesce::coalesce;
use super::writer::LevelWriter;
use crate::entry::{BlockPtr, Entry};
use crate::level::{DiskLevel, LevelCursor};
use crate::store::BlockStore;
use crate::top::TopLevel;
use crate::tree::Tree;

/// What merge-execute produced; the tree is not changed yet.
#[derive(Debug)]
pub(crate) struct Executed {
    /// `L_0_new`: fences to `L_1_new`.
    pub top: TopLevel,
    /// `L_1_new..L_m_new`, every label materialized.
    pub levels: Vec<DiskLevel>,
    /// Insert/delete pairs that cancelled out.
    pub cancellations: u64,
    /// Encoded bytes of the cancelled inserts.
    pub cancelled_bytes: u64,
    /// Whether every level was merged (`L_m_new` is the new bottom).
    pub full: bool,
}

/// One merged old level, read in key order.
enum Source<'a> {
    Top(std::iter::Peekable<std::vec::IntoIter<Entry>>),
    Disk(LevelCursor<'a>),
}

impl Source<'_> {
    fn peek(&mut self) -> Result<Option<&Entry>> {
        match self {
            Source::Top(it) => Ok(it.peek()),
            Source::Disk(c) => c.peek(),
        }
    }

    fn next_entry(&mut self) -> Result<Option<Entry>> {
        match self {
            Source::Top(it) => Ok(it.next()),
            Source::Disk(c) => c.next_entry(),
        }
    }
}

/// The new levels being written, with `p_last`.
struct Builder<'a> {
    store: &'a BlockStore,
    writers: Vec<LevelWriter>,
    top: TopLevel,
    p_last: Option<BlockPtr>,
    m: usize,
    bottom: bool,
    corrupt: &'a dyn Fn(String) -> Error,
}

impl Builder<'_> {
    /// Adds the records of one key to `L_m_new` and propagates fences up (bottom-up).
    fn append(&mut self, key: &[u8], mut records: Vec<Entry>) -> Result<()> {
        let mut level = self.m;
        loop {
            if level == 0 {
                for r in records {
                    match r {
                        Entry::Fence { key, ptr } => self.top.add_fence(key, ptr),
                        _ => unreachable!("merge-execute puts only fences into L_0_new"),
                    }
                }
                return Ok(());
            }
            let w = &mut self.writers[level - 1];
            let bytes = records.iter().map(Entry::encoded_len).sum();
            if w.fits(bytes) {
                for r in records {
                    w.push(r);
                }
                return Ok(());
            }
            if !w.started() && !key.is_empty() {
                return Err((self.corrupt)("merged levels lack the -infinity fence (I2)".into()));
            }
            let mut it = records.into_iter().peekable();
            let leading = if matches!(it.peek(), Some(Entry::Fence { .. })) {
                it.next()
            } else if level == self.m && self.bottom {
                None // the bottom level has no fences
            } else {
                let ptr = self.p_last.ok_or_else(|| (self.corrupt)("no p_last fence".into()))?;
                Some(Entry::Fence { key: key.to_vec(), ptr })
            };
            let ptr = w.start_block(self.store, leading)?;
            for r in it {
                w.push(r);
            }
            records = vec![Entry::Fence { key: key.to_vec(), ptr }];
            level -= 1;
        }
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
    assert_eq!(ids.len(), m, "one new file per new level");
    let mut writers = Vec::with_capacity(m);
    let mut result = Ok(());
    for (label, &id) in (1..=m).zip(ids) {
        match store.create(id) {
            Ok(f) => writers.push(LevelWriter::new(label, id, f, payload_bytes)),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let created: Vec<u32> = writers.iter().map(LevelWriter::file_id).collect();
    let result = result.and_then(|()| execute_into(store, top, levels, m, writers));
    if result.is_err() {
        for id in created {
            let _ = store.remove(id); // best effort: the error that matters is returned
        }
    }
    result
}

fn execute_into(
    store: &BlockStore,
    top: &TopLevel,
    levels: &[DiskLevel],
    m: usize,
    writers: Vec<LevelWriter>,
) -> Result<Executed> {
    let height = levels.last().map_or(1, |l| l.label + 1);
    let full = m + 1 >= height;
    let merged: Vec<&DiskLevel> = levels.iter().filter(|l| l.label <= m).collect();
    let succ = levels.iter().find(|l| l.label > m);
    let deepest_file: Option<Arc<dyn StorageFile>> = merged.last().map(|l| l.file.clone());
    let corrupt = move |reason: String| match &deepest_file {
        Some(f) => store.corruption(&**f, 0, reason),
        None => Error::corruption("fdtree L_0", 0, reason),
    };
    let mut sources = vec![Source::Top(top.entries().into_iter().peekable())];
    sources.extend(merged.iter().map(|l| Source::Disk(LevelCursor::new(l, store, 0, None))));
    let deepest = sources.len() - 1;
    let mut b = Builder {
        store,
        writers,
        top: TopLevel::new(),
        p_last: None,
        m,
        bottom: full,
        corrupt: &corrupt,
    };
    if full {
        b.append(b"", Vec::new())?; // the first block of the new bottom level
    }
    let (mut cancellations, mut cancelled_bytes) = (0, 0);
    let mut group: Vec<Vec<Entry>> = vec![Vec::new(); sources.len()];
    loop {
        let mut key: Option<Vec<u8>> = None;
        for s in &mut sources {
            if let Some(e) = s.peek()?
                && key.as_deref().is_none_or(|k| e.key() < k)
            {
                key = Some(e.key().to_vec());
            }
        }
        let Some(key) = key else { break };
        let mut f = None;
        for (idx, s) in sources.iter_mut().enumerate() {
            while s.peek()?.is_some_and(|e| e.key() == key.as_slice()) {
                match s.next_entry()?.expect("peeked") {
                    // Fences of upper merged levels point into the merged levels: dropped.
                    Entry::Fence { ptr, .. } if idx == deepest && !full => f = Some(ptr),
                    Entry::Fence { .. } => {}
                    e => group[idx].push(e),
                }
            }
        }
        let net = coalesce(&key, group.iter_mut().rev().map(std::mem::take))
            .map_err(|r| corrupt(format!("{r} (key {key:?})")))?;
        if full && net.delete {
            return Err(corrupt(format!("delete entry with no insert to cancel (key {key:?})")));
        }
        cancellations += net.cancellations;
        cancelled_bytes += net.cancelled_bytes;
        let mut records = Vec::with_capacity(3);
        if let Some(ptr) = f {
            let succ = succ.expect("not a full merge");
            if ptr.file != succ.file_id
                || ptr.index >= succ.blocks
                || b.p_last.is_some_and(|p| p.index > ptr.index)
            {
                return Err(corrupt(format!("bad fence {ptr:?} to level {}", succ.label)));
            }
            // A fence to the block p_last already points to is redundant (lookups reach
            // that block through the earlier fence): dropped, which keeps fences from
            // accumulating in L_m over successive merges.
            if b.p_last != Some(ptr) {
                b.p_last = Some(ptr);
                records.push(Entry::Fence { key: key.clone(), ptr });
            }
        }
        records.extend(net.into_entries(&key));
        if !records.is_empty() {
            b.append(&key, records)?;
        }
    }
    if !full && !b.writers[m - 1].started() {
        return Err(corrupt("merged levels lack the -infinity fence (I2)".into()));
    }
    let mut levels = Vec::with_capacity(m);
    for w in b.writers {
        levels.push(w.finish(store)?);
    }
    Ok(Executed { top: b.top, levels, cancellations, cancelled_bytes, full })
}
