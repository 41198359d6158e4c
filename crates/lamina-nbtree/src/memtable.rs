//! The root s-node's d-tree, held in memory (paper section 4: "the d-tree corresponding to
//! the root s-node is kept in memory"): an ordered map of each key's newest entry.
//!
//! Two exist at a time at most: the active one, which writers insert into, and the frozen
//! one, which the flush job distributes to the root's children while the active one fills
//! (deamortization, section 5.1). Writers change the map under its write lock (no I/O);
//! readers and the flush job take the read lock. Once frozen, no writer touches it again
//! (the engine's write gate ensures it).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

use crate::entry::{Slot, entry_bytes};

/// Memory an entry costs beyond its key and value (map node share, allocations).
pub const ENTRY_MEMORY_OVERHEAD_BYTES: u64 = 64;

/// An in-memory root d-tree.
#[derive(Debug, Default)]
pub struct Memtable {
    map: RwLock<BTreeMap<Vec<u8>, Slot>>,
    /// Sum of the entries' [`entry_bytes`]: what counts toward sigma.
    bytes: AtomicU64,
    /// Memory the entries take.
    memory_bytes: AtomicU64,
}

fn costs(key: &[u8], slot: &Slot) -> (u64, u64) {
    let sized = entry_bytes(key.len(), slot.as_ref().map(Vec::len));
    (sized, sized + ENTRY_MEMORY_OVERHEAD_BYTES)
}

impl Memtable {
    /// An empty memtable.
    pub fn new() -> Memtable {
        Memtable::default()
    }

    /// Inserts `key`'s newest entry (a put, or a delete: `None`).
    pub fn apply(&self, key: &[u8], slot: Slot) {
        let (bytes, memory) = costs(key, &slot);
        let key_owned = key.to_vec(); // allocated outside the lock
        let mut map = self.map.write();
        // One search: most puts add a new key.
        if let Some(old) = map.insert(key_owned, slot) {
            let (old_bytes, old_memory) = costs(key, &old);
            self.bytes.fetch_sub(old_bytes, Ordering::Relaxed);
            self.memory_bytes.fetch_sub(old_memory, Ordering::Relaxed);
        }
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.memory_bytes.fetch_add(memory, Ordering::Relaxed);
    }

    /// Applies several entries at once: readers see all of them or none.
    pub fn apply_all<'a>(&self, entries: impl IntoIterator<Item = (&'a [u8], Slot)>) {
        let mut map = self.map.write();
        for (key, slot) in entries {
            let (bytes, memory) = costs(key, &slot);
            if let Some(old) = map.insert(key.to_vec(), slot) {
                let (old_bytes, old_memory) = costs(key, &old);
                self.bytes.fetch_sub(old_bytes, Ordering::Relaxed);
                self.memory_bytes.fetch_sub(old_memory, Ordering::Relaxed);
            }
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
            self.memory_bytes.fetch_add(memory, Ordering::Relaxed);
        }
    }

    /// The entry of `key`: `Some(Some(v))` a put, `Some(None)` a delete, `None` absent.
    pub fn get(&self, key: &[u8]) -> Option<Slot> {
        self.map.read().get(key).cloned()
    }

    /// Entries in `range` (as bounds), at most `limit`, in key order.
    pub fn range(
        &self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
        limit: usize,
    ) -> Vec<(Vec<u8>, Slot)> {
        // `BTreeMap::range` panics on a start past the end, or equal with both excluded.
        if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) =
            bounds
            && (a > b
                || (a == b
                    && (matches!(bounds.0, Bound::Excluded(_))
                        || matches!(bounds.1, Bound::Excluded(_)))))
        {
            return Vec::new();
        }
        let map = self.map.read();
        map.range::<[u8], _>(bounds).take(limit).map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Sum of the entries' sizes (what counts toward sigma).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Memory the entries take.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes.load(Ordering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.read().len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.map.read().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overwrites_replace_sizes_and_ranges_respect_bounds() {
        let m = Memtable::new();
        m.apply(b"b", Some(vec![1; 10]));
        m.apply(b"a", None);
        m.apply(b"b", Some(vec![2; 4]));
        assert_eq!(m.bytes(), entry_bytes(1, Some(4)) + entry_bytes(1, None));
        assert_eq!(m.get(b"b"), Some(Some(vec![2; 4])));
        assert_eq!(m.get(b"a"), Some(None));
        assert_eq!(m.get(b"c"), None);
        assert_eq!(m.range((Bound::Unbounded, Bound::Unbounded), 10).len(), 2);
        assert_eq!(m.range((Bound::Excluded(b"a"), Bound::Unbounded), 10).len(), 1);
        assert!(m.range((Bound::Excluded(b"a"), Bound::Excluded(b"b")), 10).is_empty());
        assert!(m.range((Bound::Excluded(b"c"), Bound::Excluded(b"b")), 10).is_empty());
        assert_eq!(m.range((Bound::Included(b"a"), Bound::Included(b"a")), 5).len(), 1);
    }
}
