//! The in-memory part of `L_0` (paper section 2.1: "a standard data structure that supports
//! lookup, in-place insert and delete, and ordered scan"): an ordered map from key to the
//! key's newest data entry, with the counts of the entries it holds, its memory, the highest
//! log sequence number applied to it, and a Bloom filter so that lookups of keys it does not
//! hold skip the map.
//!
//! Writers change it under its write lock (short: no I/O, no lookup of lower levels); readers
//! take the read lock. When full it is frozen (no writer touches it again: the engine's
//! write gate ensures it) and written to disk as an `L_0` run (`flush.rs`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{RwLock, RwLockReadGuard};

use crate::format::bloom::{Bloom, key_hash};
use crate::format::entry::{EntryRef, delete_bytes, insert_bytes};
use crate::format::stats::LevelStats;

/// Memory an entry costs beyond its key and value: the map's share of a node (keys and
/// slots of 11 per leaf, internal nodes), the two boxes and their allocator headers.
pub const ENTRY_OVERHEAD_BYTES: u64 = 96;

/// The newest data entry of a key in the memtable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// Insert entry with this value.
    Insert(Box<[u8]>),
    /// Delete entry (see `EntryRef::Delete` for `cancelled_len`).
    Delete {
        /// Encoded size of the insert the delete was issued to cancel (0: unknown).
        cancelled_len: u32,
    },
}

impl Slot {
    /// The entry this slot is for `key`.
    pub fn entry<'a>(&'a self, key: &'a [u8]) -> EntryRef<'a> {
        match self {
            Slot::Insert(value) => EntryRef::Insert { key, value },
            Slot::Delete { cancelled_len } => {
                EntryRef::Delete { key, cancelled_len: *cancelled_len }
            }
        }
    }

    fn value_len(&self) -> usize {
        match self {
            Slot::Insert(v) => v.len(),
            Slot::Delete { .. } => 0,
        }
    }
}

/// What the map holds, with its counts.
#[derive(Debug, Default)]
pub struct Inner {
    map: BTreeMap<Box<[u8]>, Slot>,
    stats: LevelStats,
}

impl Inner {
    /// The entries from `start` in key order.
    pub fn range_from<'a>(
        &'a self,
        start: std::ops::Bound<&'a [u8]>,
    ) -> impl Iterator<Item = (&'a [u8], &'a Slot)> + 'a {
        self.map.range::<[u8], _>((start, std::ops::Bound::Unbounded)).map(|(k, s)| (&**k, s))
    }

    /// All entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Slot)> {
        self.map.iter().map(|(k, s)| (&**k, s))
    }
}

/// A memtable.
#[derive(Debug)]
pub struct Memtable {
    inner: RwLock<Inner>,
    bytes: AtomicU64,
    seq_max: AtomicU64,
    bloom: Bloom,
}

impl Memtable {
    /// An empty memtable whose filter is sized for a memtable of `bytes_max` bytes.
    pub fn new(bytes_max: u64, bloom_bits_per_key: u32) -> Self {
        let keys = bytes_max / (ENTRY_OVERHEAD_BYTES + 8);
        Memtable {
            inner: RwLock::new(Inner::default()),
            bytes: AtomicU64::new(0),
            seq_max: AtomicU64::new(0),
            bloom: Bloom::new(keys, bloom_bits_per_key),
        }
    }

    /// Memory held by the entries.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    /// Memory held, filter included.
    pub fn memory_bytes(&self) -> u64 {
        self.bytes() + self.bloom.memory_bytes()
    }

    /// The highest log sequence number applied (0: none).
    pub fn seq_max(&self) -> u64 {
        self.seq_max.load(Ordering::Acquire)
    }

    /// Counts of the entries held.
    pub fn stats(&self) -> LevelStats {
        self.inner.read().stats
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.inner.read().map.is_empty()
    }

    /// Sets `key`'s newest entry (replacing the one it had here), as log record `seq`.
    pub fn apply(&self, key: &[u8], slot: Slot, seq: u64) {
        let mut inner = self.inner.write();
        self.apply_locked(&mut inner, key, slot);
        drop(inner);
        self.seq_max.fetch_max(seq, Ordering::AcqRel);
    }

    fn apply_locked(&self, inner: &mut Inner, key: &[u8], slot: Slot) {
        let hash = key_hash(key);
        let add = entry_bytes(key, &slot);
        inner.stats.add(&slot.entry(key), false);
        match inner.map.get_mut(key) {
            Some(old) => {
                let old = std::mem::replace(old, slot);
                remove_counts(&mut inner.stats, key, &old);
                self.bytes.fetch_add(add, Ordering::AcqRel);
                self.bytes.fetch_sub(entry_bytes(key, &old), Ordering::AcqRel);
            }
            None => {
                inner.map.insert(key.into(), slot);
                self.bloom.insert_hash(hash);
                self.bytes.fetch_add(add, Ordering::AcqRel);
            }
        }
    }

    /// Applies every operation of `batch` in order as log record `seq`, under one write
    /// lock: readers see all of it or none.
    pub fn apply_batch(&self, ops: &[lamina_core::BatchOp], seq: u64) {
        let mut inner = self.inner.write();
        for op in ops {
            let (key, slot) = match op {
                lamina_core::BatchOp::Put { key, value } => {
                    (key.as_slice(), Slot::Insert(value.as_slice().into()))
                }
                // A blind delete: the batch did not look the key up.
                lamina_core::BatchOp::Delete { key } => {
                    (key.as_slice(), Slot::Delete { cancelled_len: 0 })
                }
            };
            self.apply_locked(&mut inner, key, slot);
        }
        drop(inner);
        self.seq_max.fetch_max(seq, Ordering::AcqRel);
    }

    /// The newest entry of `key` here, if any (the filter is checked first).
    pub fn get(&self, key: &[u8], hash: u64) -> Option<Slot> {
        if !self.bloom.may_contain_hash(hash) {
            return None;
        }
        self.inner.read().map.get(key).cloned()
    }

    /// Read access to the entries (scans, and the flush of a frozen memtable).
    pub fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read()
    }
}

/// Memory of one entry.
fn entry_bytes(key: &[u8], slot: &Slot) -> u64 {
    (key.len() + slot.value_len()) as u64 + ENTRY_OVERHEAD_BYTES
}

fn remove_counts(stats: &mut LevelStats, key: &[u8], old: &Slot) {
    match old {
        Slot::Insert(v) => {
            stats.inserts -= 1;
            stats.insert_bytes -= insert_bytes(key.len(), v.len()) as u64;
        }
        Slot::Delete { cancelled_len } => {
            stats.deletes -= 1;
            stats.delete_bytes -= delete_bytes(key.len(), *cancelled_len) as u64;
            stats.cancelled_bytes -= u64::from(*cancelled_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_replacements() {
        let m = Memtable::new(1 << 20, 10);
        m.apply(b"a", Slot::Insert(b"12".to_vec().into()), 1);
        m.apply(b"b", Slot::Delete { cancelled_len: 7 }, 2);
        m.apply(b"a", Slot::Insert(b"3".to_vec().into()), 3);
        let s = m.stats();
        assert_eq!((s.inserts, s.deletes, s.cancelled_bytes), (1, 1, 7));
        assert_eq!(s.insert_bytes, insert_bytes(1, 1) as u64);
        m.apply(b"b", Slot::Insert(b"x".to_vec().into()), 4);
        let s = m.stats();
        assert_eq!((s.inserts, s.deletes, s.cancelled_bytes), (2, 0, 0));
        assert_eq!(m.seq_max(), 4);
        let h = key_hash(b"a");
        assert_eq!(m.get(b"a", h), Some(Slot::Insert(b"3".to_vec().into())));
        assert_eq!(m.get(b"zz", key_hash(b"zz")), None);
        assert_eq!(m.bytes(), 2 * (2 + ENTRY_OVERHEAD_BYTES));
        let inner = m.read();
        let keys: Vec<&[u8]> = inner.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, vec![&b"a"[..], b"b"]);
    }
}
