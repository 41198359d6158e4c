//! Ordered range scans over all levels. The start block of each disk level is found the way
//! a lookup of the range's start key descends (fractional cascading, one block per level);
//! then every level is read forward in parallel and, for each key, the topmost level holding
//! a data entry decides: an insert entry is the value, a delete entry cancels the key (the
//! same four cases as section 2.2).

use std::ops::Bound;

use lamina_core::{Entry as Pair, KeyRange, Result};

use crate::entry::{BlockPtr, Entry};
use crate::level::DiskLevel;
use crate::level::LevelCursor;
use crate::top::DataSlot;
use crate::top::TopLevel;
use crate::tree::Tree;

/// What one scan pass reads: the `L_0` parts (newest first), the disk levels, and the
/// pointer a lookup of the start key follows into the first disk level.
struct View<'a> {
    tops: Vec<&'a TopLevel>,
    levels: &'a [DiskLevel],
    first_ptr: Option<BlockPtr>,
}

impl Tree {
    /// Up to `limit` live pairs in `range`, in key order.
    ///
    /// During an FD+FC merge the range is split at the wavefront key (I7): keys up to it are
    /// read from `L_0^new` and the new levels, larger keys from `L_0^new`, `L_0^old` and the
    /// old levels. The engine holds the stage gate, so the wavefront does not move meanwhile.
    pub fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Pair>> {
        let mut out = Vec::new();
        if limit == 0 || range.is_empty() {
            return Ok(out);
        }
        let Some(fc) = &self.fc else {
            let start = start_key(range);
            let fence_top = self.fence_top();
            let view = View {
                tops: std::iter::once(&self.top).chain(self.frozen_top.as_deref()).collect(),
                levels: &self.levels,
                first_ptr: fence_top.fence_at_or_before(start).map(|(_, p)| p),
            };
            self.scan_view(&view, range, limit, &mut out)?;
            return Ok(out);
        };
        let w = fc.wavefront_key.as_slice();
        if !w.is_empty() {
            let behind = KeyRange { start: range.start.clone(), end: clip_end(&range.end, w) };
            if !behind.is_empty() {
                let view = View {
                    tops: vec![&self.top],
                    levels: &self.levels,
                    first_ptr: self.top.fence_at_or_before(start_key(&behind)).map(|(_, p)| p),
                };
                self.scan_view(&view, &behind, limit, &mut out)?;
            }
        }
        let ahead = KeyRange { start: clip_start(&range.start, w), end: range.end.clone() };
        if out.len() < limit && !ahead.is_empty() {
            // The smallest key beyond the wavefront is `w` followed by a zero byte.
            let mut first = w.to_vec();
            first.push(0);
            let start = start_key(&ahead).max(first.as_slice()).to_vec();
            let view = View {
                tops: vec![&self.top, &fc.old_top],
                levels: &fc.old_levels,
                first_ptr: fc
                    .old_top
                    .fence_at_or_before(&start)
                    .map(|(_, p)| p)
                    .or(fc.wavefront_ptr),
            };
            self.scan_view(&view, &ahead, limit, &mut out)?;
        }
        Ok(out)
    }

    /// Adds the live pairs of `range` in `view` to `out`, up to `limit` in all.
    fn scan_view(
        &self,
        view: &View<'_>,
        range: &KeyRange,
        limit: usize,
        out: &mut Vec<Pair>,
    ) -> Result<()> {
        let start = start_key(range);
        let mut cursors = self.cursors_at(view, start)?;
        let mut tops: Vec<_> =
            view.tops.iter().map(|t| t.data_from(Bound::Included(start)).peekable()).collect();
        loop {
            let mut key: Option<Vec<u8>> = None;
            for top in &mut tops {
                if let Some((k, _)) = top.peek()
                    && key.as_deref().is_none_or(|m| k.as_slice() < m)
                {
                    key = Some((*k).clone());
                }
            }
            for c in &mut cursors {
                if let Some(e) = next_data(c)?
                    && key.as_deref().is_none_or(|k| e.key() < k)
                {
                    key = Some(e.key().to_vec());
                }
            }
            let Some(key) = key else { break };
            if range.is_past_end(&key) {
                break;
            }
            // The topmost level with data for the key decides.
            let mut decided: Option<Option<Vec<u8>>> = None;
            for top in &mut tops {
                if top.peek().is_some_and(|(k, _)| **k == key) {
                    let (_, DataSlot { insert, .. }) = top.next().expect("peeked");
                    if decided.is_none() {
                        decided = Some(insert.clone());
                    }
                }
            }
            for c in &mut cursors {
                let (mut any, mut insert) = (false, None);
                while next_data(c)?.is_some_and(|e| e.key() == key.as_slice()) {
                    any = true;
                    if let Some(Entry::Insert { value, .. }) = c.next_entry()? {
                        insert = Some(value);
                    }
                }
                if any && decided.is_none() {
                    decided = Some(insert);
                }
            }
            if range.contains(&key)
                && let Some(Some(value)) = decided
            {
                out.push((key, value));
                if out.len() == limit {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Cursors for every disk level, each at the block a lookup of `key` would visit.
    fn cursors_at<'v>(&'v self, view: &View<'v>, key: &[u8]) -> Result<Vec<LevelCursor<'v>>> {
        let mut cursors = Vec::with_capacity(view.levels.len());
        let mut ptr = view.first_ptr;
        let last = view.levels.len().saturating_sub(1);
        for (i, level) in view.levels.iter().enumerate() {
            let p = ptr.ok_or_else(|| {
                self.store.corruption(&*level.file, 0, "no fence leads to this level (I1)")
            })?;
            let block = level.read(&self.store, p)?;
            ptr = if i == last {
                None
            } else {
                match block.fence_at_or_before(key) {
                    Some(Entry::Fence { ptr, .. }) => Some(*ptr),
                    _ => None,
                }
            };
            cursors.push(LevelCursor::new(level, &self.store, p.index, Some(block)));
        }
        Ok(cursors)
    }
}

/// The key a scan of `range` starts its descent with.
fn start_key(range: &KeyRange) -> &[u8] {
    match &range.start {
        Bound::Included(k) | Bound::Excluded(k) => k,
        Bound::Unbounded => b"",
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

/// The cursor's next data entry, skipping fences.
fn next_data<'c>(c: &'c mut LevelCursor<'_>) -> Result<Option<&'c Entry>> {
    while c.peek()?.is_some_and(|e| !e.is_data()) {
        c.next_entry()?;
    }
    c.peek()
}
