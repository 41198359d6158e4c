//! Lookups and scans. A lookup holds the tree lock exclusively (ADAPT's registers change, and
//! ADAPT may empty a buffer inside the lookup); a scan holds it shared (no ADAPT, no change),
//! so scans run alongside each other but never alongside an emptying (invariants 1 and 4).

use std::ops::Bound;

use lamina_core::{Entry, Error, KeyRange, Result};

use super::inner::Inner;
use crate::tree::SCAN_LIMIT_MAX as TREE_SCAN_LIMIT_MAX;

impl Inner {
    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_key(key)?;
        let mut state = self.lock_tree()?;
        self.lookup(&mut state, key)
    }

    /// Up to `limit` pairs of `range`, in key order.
    pub fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        lamina_core::limits::check_scan_limit(limit)?;
        let guard = self.state.read();
        self.check_open()?;
        let state = guard.as_ref().ok_or(Error::Closed)?;
        if limit == 0 || range.is_empty() {
            return Ok(Vec::new());
        }
        let (start, end) = range.as_bounds();
        // The tree scans `[start, end)`: an excluded start or included end becomes its
        // successor (the key followed by a zero byte).
        let successor = |k: &[u8]| {
            let mut s = k.to_vec();
            s.push(0);
            s
        };
        let mut start = match start {
            Bound::Included(k) => k.to_vec(),
            Bound::Excluded(k) => successor(k),
            Bound::Unbounded => Vec::new(),
        };
        let end = match end {
            Bound::Included(k) => Some(successor(k)),
            Bound::Excluded(k) => Some(k.to_vec()),
            Bound::Unbounded => None,
        };
        let mut out: Vec<Entry> = Vec::new();
        while out.len() < limit {
            let want = (limit - out.len()).min(TREE_SCAN_LIMIT_MAX);
            let page = state.tree.range(&start, end.as_deref(), want)?;
            let done = page.len() < want;
            if let Some((last, _)) = page.last() {
                start = successor(last);
            }
            out.extend(page);
            if done {
                break;
            }
        }
        Ok(out)
    }
}
