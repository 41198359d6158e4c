//! Ordered range scans over all levels. The start block of each disk level is found the way
//! a lookup of the range's start key descends (fractional cascading, one block per level);
//! then every level is read forward in parallel and, for each key, the topmost level holding
//! a data entry decides: an insert entry is the value, a delete entry cancels the key (the
//! same four cases as section 2.2).

use std::ops::Bound;

use lamina_core::{Entry as Pair, KeyRange, Result};

use crate::entry::Entry;
use crate::level::LevelCursor;
use crate::top::DataSlot;
use crate::tree::Tree;

impl Tree {
    /// Up to `limit` live pairs in `range`, in key order.
    pub fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Pair>> {
        let mut out = Vec::new();
        if limit == 0 || range.is_empty() {
            return Ok(out);
        }
        let start: &[u8] = match &range.start {
            Bound::Included(k) | Bound::Excluded(k) => k,
            Bound::Unbounded => b"",
        };
        let mut cursors = self.cursors_at(start)?;
        // L_0, or L_0^new then L_0^old during an FD+DS merge (newest first).
        let mut tops: Vec<_> = std::iter::once(&self.top)
            .chain(self.frozen_top.as_deref())
            .map(|t| t.data_from(Bound::Included(start)).peekable())
            .collect();
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
        Ok(out)
    }

    /// Cursors for every disk level, each at the block a lookup of `key` would visit.
    fn cursors_at(&self, key: &[u8]) -> Result<Vec<LevelCursor<'_>>> {
        let mut cursors = Vec::with_capacity(self.levels.len());
        let mut ptr = self.fence_top().fence_at_or_before(key).map(|(_, p)| p);
        let last = self.levels.len().saturating_sub(1);
        for (i, level) in self.levels.iter().enumerate() {
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

/// The cursor's next data entry, skipping fences.
fn next_data<'c>(c: &'c mut LevelCursor<'_>) -> Result<Option<&'c Entry>> {
    while c.peek()?.is_some_and(|e| !e.is_data()) {
        c.next_entry()?;
    }
    c.peek()
}
