//! Ordered range scans (not in the paper). Every part of the tree that may hold a key of
//! the range is read forward in parallel: the memtables, `L_0`'s runs and the disk levels,
//! each from the block its index says holds the range's start. For each key the newest part
//! holding a data entry decides: an insert entry is the value, a delete entry hides the key.
//!
//! During an FD+FC merge the range is split at the wavefront key (I7): keys up to it are
//! read from `L_0^new` and the new levels, larger keys from `L_0^new`, `L_0^old` and the old
//! levels. A scan does not wait for the merge: it reads each segment under its block's
//! latch, and if the merge has reclaimed a block it needs (the wavefront has passed it), it
//! stops with [`Scanned::Reclaimed`] and the engine scans again, after the last pair
//! returned, with the views of the moved wavefront (as a lookup restarts, section 4.3).
//! Every pair returned was read from segments that were current when read. (Scans used to
//! hold the merge's stage gate: in the contest mix at 2M keys they waited 3.4 ms on average
//! for a stage to end.) During an FD+DS merge scans read the old levels.

use std::ops::Bound;
use std::sync::Arc;

use lamina_core::{Entry as Pair, KeyRange, Result};

use crate::format::entry::EntryRef;
use crate::level::DiskLevel;
use crate::memtable::Memtable;
use crate::scan_cursor::SegmentCursor;
use crate::store::BlockStore;
use crate::tree::Tree;

/// Entries a memtable cursor copies out per refill (its lock is held only meanwhile); the
/// first refill copies only as many as the scan may return.
const MEM_BATCH: usize = 256;

/// What one pass of a scan reads, newest first.
#[derive(Debug)]
pub(crate) struct ScanView {
    memtables: Vec<Arc<Memtable>>,
    disk: Vec<DiskLevel>,
}

impl Tree {
    /// The views a scan of `range` reads, in key order (two during an FD+FC merge: behind
    /// and beyond the wavefront), each with its part of the range.
    pub(crate) fn scan_views(&self, range: &KeyRange) -> Vec<(ScanView, KeyRange)> {
        let memtables: Vec<Arc<Memtable>> =
            std::iter::once(self.top.active.clone()).chain(self.top.frozen.clone()).collect();
        let view = |runs: &[DiskLevel], more_runs: &[DiskLevel], levels: &[DiskLevel]| ScanView {
            memtables: memtables.clone(),
            disk: runs.iter().chain(more_runs).chain(levels).cloned().collect(),
        };
        if let Some(fc) = &self.fc {
            let mut out = Vec::new();
            let mut ahead = range.clone();
            if let Some(w) = fc.wavefront_key.as_deref() {
                let behind = KeyRange { start: range.start.clone(), end: clip_end(&range.end, w) };
                if !behind.is_empty() {
                    out.push((view(&self.top.runs, &[], &self.levels), behind));
                }
                ahead = KeyRange { start: clip_start(&range.start, w), end: range.end.clone() };
            }
            if !ahead.is_empty() {
                out.push((view(&self.top.runs, &fc.old_runs, &fc.old_levels), ahead));
            }
            return out;
        }
        if let Some(side) = &self.side {
            return vec![(view(&self.top.runs, &side.old_runs, &side.old_levels), range.clone())];
        }
        vec![(view(&self.top.runs, &[], &self.levels), range.clone())]
    }
}

/// How a view's scan ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scanned {
    /// The view's part of the range is done (or the limit reached).
    Done,
    /// A block the scan needed was reclaimed by a merge: scan again after the last pair.
    Reclaimed,
}

impl ScanView {
    /// Adds the live pairs of `range` to `out`, up to `limit` in all.
    pub(crate) fn scan(
        &self,
        store: &BlockStore,
        range: &KeyRange,
        limit: usize,
        out: &mut Vec<Pair>,
        pause: Option<Box<dyn FnOnce() + '_>>,
    ) -> Result<Scanned> {
        if out.len() >= limit || range.is_empty() {
            return Ok(Scanned::Done);
        }
        let start = start_key(range);
        let first_batch = (limit - out.len()).saturating_add(1).min(MEM_BATCH);
        let mut sources: Vec<Source> = self
            .memtables
            .iter()
            .map(|m| Source::Mem(MemCursor::new(m.clone(), range.start.clone(), first_batch)))
            .collect();
        for level in &self.disk {
            let mut c = SegmentCursor::new(level, store, start);
            c.settle()?;
            while c.peek_key().is_some_and(|k| !after_start(&range.start, k)) {
                c.advance();
                c.settle()?;
            }
            if c.reclaimed() {
                return Ok(Scanned::Reclaimed);
            }
            sources.push(Source::Disk(c));
        }
        if let Some(pause) = pause {
            pause(); // tests: every cursor holds its first segment
        }
        let mut key = Vec::new();
        while out.len() < limit {
            for s in &mut sources {
                s.settle()?;
                if s.reclaimed() {
                    return Ok(Scanned::Reclaimed);
                }
            }
            let Some(min) = sources.iter().filter_map(Source::peek_key).min() else { break };
            if range.is_past_end(min) {
                break;
            }
            key.clear();
            key.extend_from_slice(min);
            let mut value: Option<Option<Vec<u8>>> = None;
            for s in &mut sources {
                if s.peek_key() == Some(key.as_slice()) {
                    if value.is_none() {
                        value = Some(s.value());
                    }
                    s.advance();
                }
            }
            if let Some(Some(v)) = value {
                out.push((key.clone(), v));
            }
        }
        Ok(Scanned::Done)
    }
}

/// One part of the tree, read in key order.
enum Source {
    Mem(MemCursor),
    Disk(SegmentCursor),
}

impl Source {
    /// Moves past fences and to the next block as needed, so that a data entry (or the
    /// end) is current.
    fn settle(&mut self) -> Result<()> {
        match self {
            Source::Mem(m) => {
                m.refill();
                Ok(())
            }
            Source::Disk(c) => c.settle(),
        }
    }

    /// Whether the source stopped at a reclaimed block.
    fn reclaimed(&self) -> bool {
        match self {
            Source::Mem(_) => false,
            Source::Disk(c) => c.reclaimed(),
        }
    }

    fn peek_key(&self) -> Option<&[u8]> {
        match self {
            Source::Mem(m) => m.buf.get(m.pos).map(crate::format::entry::Entry::key),
            Source::Disk(c) => c.peek_key(),
        }
    }

    /// The current entry's value (`None`: a delete entry).
    fn value(&self) -> Option<Vec<u8>> {
        match self {
            Source::Mem(m) => match m.buf[m.pos].as_ref() {
                EntryRef::Insert { value, .. } => Some(value.to_vec()),
                _ => None,
            },
            Source::Disk(c) => c.value(),
        }
    }

    fn advance(&mut self) {
        match self {
            Source::Mem(m) => m.pos += 1,
            Source::Disk(c) => c.advance(),
        }
    }
}

/// A memtable read in batches, so that its lock is never held across a whole scan.
struct MemCursor {
    mem: Arc<Memtable>,
    next: Bound<Vec<u8>>,
    buf: Vec<crate::format::entry::Entry>,
    pos: usize,
    done: bool,
    /// Entries the next refill copies.
    batch: usize,
}

impl MemCursor {
    fn new(mem: Arc<Memtable>, start: Bound<Vec<u8>>, first_batch: usize) -> Self {
        MemCursor { mem, next: start, buf: Vec::new(), pos: 0, done: false, batch: first_batch }
    }

    fn refill(&mut self) {
        if self.pos < self.buf.len() || self.done {
            return;
        }
        self.buf.clear();
        self.pos = 0;
        let inner = self.mem.read();
        let start = match &self.next {
            Bound::Included(k) => Bound::Included(k.as_slice()),
            Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
            Bound::Unbounded => Bound::Unbounded,
        };
        self.buf.extend(inner.range_from(start).take(self.batch).map(|e| e.to_owned_entry()));
        drop(inner);
        self.batch = MEM_BATCH;
        match self.buf.last() {
            Some(e) => self.next = Bound::Excluded(e.key().to_vec()),
            None => self.done = true,
        }
    }
}

fn start_key(range: &KeyRange) -> &[u8] {
    match &range.start {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => b"",
    }
}

fn after_start(start: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match start {
        Bound::Included(s) => key >= s.as_slice(),
        Bound::Excluded(s) => key > s.as_slice(),
        Bound::Unbounded => true,
    }
}

/// `end` limited to keys `<= w`.
fn clip_end(end: &Bound<Vec<u8>>, w: &[u8]) -> Bound<Vec<u8>> {
    match end {
        Bound::Included(k) | Bound::Excluded(k) if k.as_slice() <= w => end.clone(),
        _ => Bound::Included(w.to_vec()),
    }
}

/// `start` limited to keys `> w`.
fn clip_start(start: &Bound<Vec<u8>>, w: &[u8]) -> Bound<Vec<u8>> {
    match start {
        Bound::Included(k) | Bound::Excluded(k) if k.as_slice() > w => start.clone(),
        _ => Bound::Excluded(w.to_vec()),
    }
}
