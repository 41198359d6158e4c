//! Lookups and scans, both under the shared tree lock, so they run alongside each other but
//! never alongside a modification or an emptying (invariants 1 and 4 of `inner.rs`). A lookup
//! walks the tree once under the shared lock, changing nothing but ADAPT's registers (which
//! have their own lock); only when ADAPT decides to empty a buffer on its way does it take
//! the lock exclusively, empty that buffer (if no other call emptied it meanwhile) and look
//! up again there.

use std::ops::Bound;

use lamina_core::{Entry, Error, KeyRange, Result};

use parking_lot::{MappedRwLockReadGuard, RwLockReadGuard};

use super::inner::{Inner, State};
use crate::tree::{LookupPass, SCAN_LIMIT_MAX as TREE_SCAN_LIMIT_MAX};

impl Inner {
    /// The value of `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_key(key)?;
        let mut consulted = Vec::new();
        let wish = {
            let state = self.read_tree()?;
            // Changes no node: an error here leaves the tree as it was (not sticky).
            match state.tree.lookup_pass(key, &mut consulted)? {
                LookupPass::Found(found) => return Ok(found),
                LookupPass::Empty(wish) => wish,
            }
        };
        let mut state = self.lock_tree()?;
        // The emptying may fail half-way: sticky.
        state.tree.get_after_pass(key, &wish, consulted).map_err(|e| self.fail(e))
    }

    /// The tree, shared (invariant 1), or the reason calls are refused.
    pub fn read_tree(&self) -> Result<MappedRwLockReadGuard<'_, State>> {
        let guard = self.state.read();
        self.check_open()?;
        RwLockReadGuard::try_map(guard, Option::as_ref).map_err(|_| Error::Closed)
    }

    /// Up to `limit` pairs of `range`, in key order.
    pub fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        lamina_core::limits::check_scan_limit(limit)?;
        let state = self.read_tree()?;
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
