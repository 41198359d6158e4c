//! Lookups and scans through the engine's locks.

use lamina_core::limits::check_scan_limit;
use lamina_core::{Entry, KeyRange, Result};

use super::inner::Inner;
use crate::format::bloom::key_hash;
use crate::lookup::Found;
use crate::options::FcMode;
use crate::scan::Scanned;
use crate::tree::check_key;

/// A lookup restarted this often (each time a block it needed was reclaimed by a merge
/// passing it) is a bug, reported instead of looping.
const RESTARTS_MAX: u32 = 1_000_000;

impl Inner {
    /// The value of `key` (section 4.3: lookups never wait for a merge under FD+FC and
    /// FD+DS; under FD+XM they share the tree's lock with each other only).
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(&self.params, key)?;
        let _xm = (self.mode == FcMode::Xm).then(|| self.xm.read());
        self.lookup(key, key_hash(key))
    }

    /// A lookup with the locks above it already taken (`hash`: the key's filter hash).
    pub fn lookup(&self, key: &[u8], hash: u64) -> Result<Option<Vec<u8>>> {
        for _ in 0..RESTARTS_MAX {
            let plan = self.read(|t| Ok(t.lookup_plan(key)))?;
            if let Some(slot) = plan.in_memtables(key, hash) {
                return Ok(slot.value());
            }
            match plan.on_disk(&self.store, key, hash)? {
                Found::Done(v) => return Ok(v),
                Found::Restart => {}
            }
        }
        Err(lamina_core::Error::corruption(
            self.storage.path_of("fdtree"),
            0,
            "a lookup kept finding its blocks reclaimed",
        ))
    }

    /// Up to `limit` pairs of `range` in key order. Under FD+FC a scan never waits for a
    /// merge: it starts again after the last pair it has when the merge reclaims a block it
    /// needs (`scan.rs`).
    pub fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        self.scan_paused(range, limit, None)
    }

    /// [`Inner::scan`], running `pause` once every cursor of its first view holds its first
    /// segment (tests).
    pub fn scan_paused(
        &self,
        range: &KeyRange,
        limit: usize,
        mut pause: Option<Box<dyn FnOnce() + '_>>,
    ) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        let _xm = (self.mode == FcMode::Xm).then(|| self.xm.read());
        let mut out = Vec::new();
        let mut rest = range.clone();
        for _ in 0..RESTARTS_MAX {
            let views = self.read(|t| Ok(t.scan_views(&rest)))?;
            let mut reclaimed = false;
            for (view, part) in views {
                if view.scan(&self.store, &part, limit, &mut out, pause.take())?
                    == Scanned::Reclaimed
                {
                    reclaimed = true;
                    break;
                }
            }
            if !reclaimed {
                return Ok(out);
            }
            self.scan_restarts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Some((last, _)) = out.last() {
                rest.start = std::ops::Bound::Excluded(last.clone());
            }
        }
        Err(lamina_core::Error::corruption(
            self.storage.path_of("fdtree"),
            0,
            "a scan kept finding its blocks reclaimed",
        ))
    }
}
