//! Point queries (paper sections 3.2.3 and 5.2) and range scans.
//!
//! A point query looks in the active memtable, the frozen one, then down the s-tree along
//! the key's path: at each s-node, only if the key is in the live part of its d-tree and
//! the d-tree's Bloom filter lets it be there, one leaf of the d-tree is read (its internal
//! nodes are in memory). The first entry found is the newest (data only moves down).
//!
//! A scan merges, newest first, the memtables and one stream per s-tree level (the live
//! parts of that level's s-nodes in key order; the cross-s-node linkage property makes the
//! s-nodes of a level disjoint and ordered): for each key the shallowest entry wins, and a
//! delete hides the key.

use std::ops::Bound;

use lamina_core::limits::check_scan_limit;
use lamina_core::{Entry, KeyRange, Result};

use super::inner::Inner;
use crate::entry::Slot;
use crate::flush::source::{DTreePart, Source};
use crate::stree::{NodeId, STree};

impl Inner {
    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        Ok(self.find(key)?.flatten())
    }

    /// The newest entry of `key`, if any.
    pub fn find(&self, key: &[u8]) -> Result<Option<Slot>> {
        let (active, version) = self.snapshot();
        if let Some(slot) = active.get(key) {
            return Ok(Some(slot));
        }
        if let Some(frozen) = &version.frozen
            && let Some(slot) = frozen.get(key)
        {
            return Ok(Some(slot));
        }
        for node in version.stree.path(key) {
            if let Some(dtree) = &node.dtree
                && node.is_live(key)
                && dtree.may_contain(key)
                && let Some(slot) = dtree.get(key)?
            {
                return Ok(Some(slot));
            }
        }
        Ok(None)
    }

    /// Up to `limit` pairs in `range`, in key order.
    pub fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        self.check_open()?;
        if limit == 0 || range.is_empty() {
            return Ok(Vec::new());
        }
        let (active, version) = self.snapshot();
        let (start, _) = range.as_bounds();
        let low = match start {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let mut sources = vec![Source::memtable(active, low, None)];
        if let Some(frozen) = &version.frozen {
            sources.push(Source::memtable(frozen.clone(), low, None));
        }
        for level in levels(&version.stree, low) {
            sources.push(Source::dtrees(level, low, None, None));
        }
        let mut out = Vec::new();
        while out.len() < limit {
            let mut min: Option<Vec<u8>> = None;
            for s in &mut sources {
                if let Some((k, _)) = s.peek()?
                    && min.as_ref().is_none_or(|m| k < m)
                {
                    min = Some(k.clone());
                }
            }
            let Some(key) = min else { break };
            if range.is_past_end(&key) {
                break;
            }
            let mut winner: Option<Slot> = None;
            for s in &mut sources {
                if s.peek()?.is_some_and(|(k, _)| *k == key) {
                    let (_, slot) = s.next_item()?.expect("peeked");
                    winner.get_or_insert(slot);
                }
            }
            if let Some(Some(value)) = winner
                && range.contains(&key)
            {
                out.push((key, value));
            }
        }
        Ok(out)
    }
}

/// For each s-tree level below the root, the live parts of its s-nodes whose ranges reach
/// `low` or beyond, in key order.
fn levels(tree: &STree, low: Option<&[u8]>) -> Vec<Vec<DTreePart>> {
    let mut out = Vec::new();
    // (node, high bound of its range) for the current level, in key order.
    let mut level: Vec<(NodeId, Option<Vec<u8>>)> = vec![(tree.root, None)];
    while !level.is_empty() {
        let mut parts = Vec::new();
        let mut next = Vec::new();
        for (id, high) in &level {
            let node = tree.node(*id);
            parts.extend(DTreePart::of(node));
            for (i, &child) in node.children.iter().enumerate() {
                let child_high = node.keys.get(i).cloned().or_else(|| high.clone());
                // Skip children wholly below `low`.
                if let (Some(l), Some(h)) = (low, child_high.as_deref())
                    && h <= l
                {
                    continue;
                }
                next.push((child, child_high));
            }
        }
        if !parts.is_empty() {
            out.push(parts);
        }
        level = next;
    }
    out
}
