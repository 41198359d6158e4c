//! The in-memory part of `L_0` (paper section 2.1: "a standard data structure that supports
//! lookup, in-place insert and delete, and ordered scan"): an ordered set of each key's
//! newest data entry, with the counts of the entries it holds, its memory, the highest log
//! sequence number applied to it, and a Bloom filter so that lookups of keys it does not
//! hold skip the set.
//!
//! Each entry is `key length (u16 LE) | kind (u8) | key | payload`, the payload being the
//! value of an insert entry or the `cancelled_len` (u32 LE) of a delete entry, written into
//! the memtable's arena ([`Arena`]). Writers change the set under its write lock (short: no
//! I/O, no lookup of lower levels); readers take the read lock. When full the memtable is
//! frozen (no writer touches it again: the engine's write gate ensures it) and written out
//! as an `L_0` run (`flush.rs`).

use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use lamina_storage::arena::{Arena, ENTRY_PREFETCH_DISTANCE, key_prefix, prefetch_entry};
use parking_lot::{RwLock, RwLockReadGuard};

use crate::format::bloom::{Bloom, key_hash};
use crate::format::entry::{EntryRef, KIND_DELETE, KIND_INSERT};
use crate::format::stats::LevelStats;

/// Memory an entry costs beyond its key and value: its share of the set's nodes (a
/// 40-byte handle, 11 per leaf about three quarters full, plus internal nodes) and its
/// header. An entry replaced by a newer one of its key keeps its bytes in the arena (they
/// are freed with the memtable) and gives its handle back.
pub const ENTRY_OVERHEAD_BYTES: u64 = 64;
const HEADER: usize = 3;

/// One entry, a slice of the arena (module documentation), with its key's prefix beside it
/// ([`key_prefix`]: it decides almost every comparison without reading the entry).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stored {
    /// [`key_prefix`] of the key.
    prefix: u64,
    /// The entry, in the memtable's arena.
    bytes: Bytes,
}

impl Stored {
    fn new(arena: &mut Arena, e: &EntryRef<'_>) -> Stored {
        let key = e.key();
        let key_len = u16::try_from(key.len()).expect("keys are at most 1024 bytes");
        let payload = match e {
            EntryRef::Insert { value, .. } => value.len(),
            _ => 4,
        };
        let bytes = arena.alloc(HEADER + key.len() + payload, |out| {
            out.extend_from_slice(&key_len.to_le_bytes());
            match *e {
                EntryRef::Insert { value, .. } => {
                    out.extend_from_slice(&[KIND_INSERT]);
                    out.extend_from_slice(key);
                    out.extend_from_slice(value);
                }
                EntryRef::Delete { cancelled_len, .. } => {
                    out.extend_from_slice(&[KIND_DELETE]);
                    out.extend_from_slice(key);
                    out.extend_from_slice(&cancelled_len.to_le_bytes());
                }
                EntryRef::Fence { .. } => unreachable!("a memtable holds data entries only"),
            }
        });
        Stored { prefix: key_prefix(key), bytes }
    }

    fn key(&self) -> &[u8] {
        let len = usize::from(u16::from_le_bytes([self.bytes[0], self.bytes[1]]));
        &self.bytes[HEADER..HEADER + len]
    }

    fn entry(&self) -> EntryRef<'_> {
        let key = self.key();
        let rest = &self.bytes[HEADER + key.len()..];
        if self.bytes[2] == KIND_INSERT {
            EntryRef::Insert { key, value: rest }
        } else {
            let cancelled_len = u32::from_le_bytes(rest.try_into().expect("4 bytes"));
            EntryRef::Delete { key, cancelled_len }
        }
    }

    /// Requests the entry's first cache lines.
    fn prefetch(&self) {
        prefetch_entry(&self.bytes);
    }

    fn memory_bytes(&self) -> u64 {
        self.bytes.len() as u64 + ENTRY_OVERHEAD_BYTES
    }
}

impl Borrow<[u8]> for Stored {
    fn borrow(&self) -> &[u8] {
        self.key()
    }
}

impl Ord for Stored {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // The keys are read only when the prefixes tie.
        self.prefix.cmp(&other.prefix).then_with(|| self.key().cmp(other.key()))
    }
}

impl PartialOrd for Stored {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What a memtable says about a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// Its newest entry is an insert entry with this value.
    Insert(Vec<u8>),
    /// Its newest entry is a delete entry.
    Delete,
}

/// The set, its counts and the arena its entries live in.
#[derive(Debug)]
pub struct Inner {
    set: BTreeSet<Stored>,
    stats: LevelStats,
    arena: Arena,
}

impl Inner {
    /// The entries from `start` in key order.
    pub fn range_from<'a>(
        &'a self,
        start: std::ops::Bound<&'a [u8]>,
    ) -> impl Iterator<Item = EntryRef<'a>> + 'a {
        self.set.range::<[u8], _>((start, std::ops::Bound::Unbounded)).map(Stored::entry)
    }

    /// All entries in key order. The entries lie in the arena in arrival order, so in key
    /// order each is a cache miss (a frozen memtable is tens of MiB): a second cursor
    /// [`ENTRY_PREFETCH_DISTANCE`] entries in front requests each entry's lines before it is read,
    /// so writing a run (the flush thread's whole job) overlaps its misses.
    pub fn iter(&self) -> impl Iterator<Item = EntryRef<'_>> {
        let mut ahead = self.set.iter();
        ahead.by_ref().take(ENTRY_PREFETCH_DISTANCE).for_each(Stored::prefetch);
        self.set.iter().map(move |s| {
            if let Some(next) = ahead.next() {
                next.prefetch();
            }
            s.entry()
        })
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
        let keys = bytes_max / (ENTRY_OVERHEAD_BYTES + 16);
        Memtable {
            inner: RwLock::new(Inner {
                set: BTreeSet::new(),
                stats: LevelStats::default(),
                arena: Arena::new(bytes_max),
            }),
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
        self.inner.read().set.is_empty()
    }

    /// Makes `entry` (an insert or a delete entry) its key's newest, replacing the one it had
    /// here, as log record `seq`.
    pub fn apply(&self, entry: EntryRef<'_>, seq: u64) {
        let mut inner = self.inner.write();
        self.apply_locked(&mut inner, &entry);
        drop(inner);
        self.seq_max.fetch_max(seq, Ordering::AcqRel);
    }

    /// Applies every operation of a batch in order as log record `seq`, under one write
    /// lock: readers see all of it or none.
    pub fn apply_batch(&self, ops: &[lamina_core::BatchOp], seq: u64) {
        let mut inner = self.inner.write();
        for op in ops {
            let entry = match op {
                lamina_core::BatchOp::Put { key, value } => EntryRef::Insert { key, value },
                // A blind delete: the batch did not look the key up.
                lamina_core::BatchOp::Delete { key } => EntryRef::Delete { key, cancelled_len: 0 },
            };
            self.apply_locked(&mut inner, &entry);
        }
        drop(inner);
        self.seq_max.fetch_max(seq, Ordering::AcqRel);
    }

    fn apply_locked(&self, inner: &mut Inner, entry: &EntryRef<'_>) {
        // A delete that replaces this memtable's insert of its key: the insert's bytes leave
        // the counters with it (below), so the delete must not cancel them a second time,
        // or Remark A.1's U-hat would fall below the live data and level skipping could break
        // (I5). It still shadows every older version below.
        let stored = match *entry {
            EntryRef::Delete { key, cancelled_len }
                if cancelled_len > 0
                    && inner
                        .set
                        .get(key)
                        .is_some_and(|old| matches!(old.entry(), EntryRef::Insert { .. })) =>
            {
                Stored::new(&mut inner.arena, &EntryRef::Delete { key, cancelled_len: 0 })
            }
            _ => Stored::new(&mut inner.arena, entry),
        };
        inner.stats.add(&stored.entry(), false);
        let add = stored.memory_bytes();
        let hash = key_hash(stored.key());
        match inner.set.replace(stored) {
            Some(old) => {
                // The old entry's bytes stay in the arena until the memtable is dropped;
                // only its handle in the set is given back.
                remove_counts(&mut inner.stats, &old.entry());
                self.bytes.fetch_add(add, Ordering::AcqRel);
                self.bytes.fetch_sub(ENTRY_OVERHEAD_BYTES, Ordering::AcqRel);
            }
            None => {
                self.bloom.insert_hash(hash);
                self.bytes.fetch_add(add, Ordering::AcqRel);
            }
        }
    }

    /// The newest entry of `key` here, if any (the filter is checked first).
    pub fn get(&self, key: &[u8], hash: u64) -> Option<Slot> {
        if self.bytes() == 0 || !self.bloom.may_contain_hash(hash) {
            return None;
        }
        let inner = self.inner.read();
        inner.set.get(key).map(|s| match s.entry() {
            EntryRef::Insert { value, .. } => Slot::Insert(value.to_vec()),
            _ => Slot::Delete,
        })
    }

    /// Read access to the entries (scans, and the flush of a frozen memtable).
    pub fn read(&self) -> RwLockReadGuard<'_, Inner> {
        self.inner.read()
    }
}

fn remove_counts(stats: &mut LevelStats, old: &EntryRef<'_>) {
    let n = old.encoded_len() as u64;
    match *old {
        EntryRef::Insert { .. } => {
            stats.inserts -= 1;
            stats.insert_bytes -= n;
        }
        EntryRef::Delete { cancelled_len, .. } => {
            stats.deletes -= 1;
            stats.delete_bytes -= n;
            stats.cancelled_bytes -= u64::from(cancelled_len);
        }
        EntryRef::Fence { .. } => unreachable!("a memtable holds data entries only"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::entry::insert_bytes;

    proptest::proptest! {
        /// Entries are ordered as their keys' bytes are, whatever the prefixes say.
        #[test]
        fn entries_order_as_their_keys(
            a in proptest::collection::vec(0u8..3, 0..12),
            b in proptest::collection::vec(0u8..3, 0..12),
        ) {
            let mut arena = Arena::new(0);
            let mut entry = |k: &[u8]| Stored::new(&mut arena, &EntryRef::Insert { key: k, value: b"v" });
            let (ea, eb) = (entry(&a), entry(&b));
            proptest::prop_assert_eq!(ea.cmp(&eb), a.cmp(&b));
        }
    }

    fn put(m: &Memtable, k: &[u8], v: &[u8], seq: u64) {
        m.apply(EntryRef::Insert { key: k, value: v }, seq);
    }

    /// The prefetching cursor runs ahead of the iteration without changing what it yields,
    /// with fewer entries than its lead, exactly as many, and more (long values too).
    #[test]
    fn a_full_iteration_yields_every_entry_once_in_order() {
        for n in
            [0u32, 1, ENTRY_PREFETCH_DISTANCE as u32 - 1, ENTRY_PREFETCH_DISTANCE as u32, 9, 300]
        {
            let m = Memtable::new(1 << 24, 10);
            for i in (0..n).rev() {
                let value = vec![i as u8; (i as usize * 37) % 700];
                put(&m, &i.to_be_bytes(), &value, u64::from(i) + 1);
            }
            let inner = m.read();
            let got: Vec<(Vec<u8>, usize)> = inner
                .iter()
                .map(|e| match e {
                    EntryRef::Insert { key, value } => (key.to_vec(), value.len()),
                    other => panic!("unexpected {other:?}"),
                })
                .collect();
            let want: Vec<(Vec<u8>, usize)> =
                (0..n).map(|i| (i.to_be_bytes().to_vec(), (i as usize * 37) % 700)).collect();
            assert_eq!(got, want, "{n} entries");
        }
    }

    #[test]
    fn counts_follow_replacements() {
        let m = Memtable::new(1 << 20, 10);
        put(&m, b"a", b"12", 1);
        m.apply(EntryRef::Delete { key: b"b", cancelled_len: 7 }, 2);
        put(&m, b"a", b"3", 3);
        let s = m.stats();
        assert_eq!((s.inserts, s.deletes, s.cancelled_bytes), (1, 1, 7));
        assert_eq!(s.insert_bytes, insert_bytes(1, 1) as u64);
        put(&m, b"b", b"x", 4);
        let s = m.stats();
        assert_eq!((s.inserts, s.deletes, s.cancelled_bytes), (2, 0, 0));
        assert_eq!(m.seq_max(), 4);
        assert_eq!(m.get(b"a", key_hash(b"a")), Some(Slot::Insert(b"3".to_vec())));
        assert_eq!(m.get(b"zz", key_hash(b"zz")), None);
        // Every entry written stays in the arena: a1=12 (6 bytes), delete b (8), a=3 (5),
        // b=x (5); the set holds two handles.
        assert_eq!(m.bytes(), 6 + 8 + 5 + 5 + 2 * ENTRY_OVERHEAD_BYTES);
        m.apply(EntryRef::Delete { key: b"a", cancelled_len: 0 }, 5);
        assert_eq!(m.get(b"a", key_hash(b"a")), Some(Slot::Delete));
        let inner = m.read();
        let keys: Vec<&[u8]> = inner.iter().map(|e| e.key()).collect();
        assert_eq!(keys, vec![&b"a"[..], b"b"]);
        let from_b: Vec<&[u8]> =
            inner.range_from(std::ops::Bound::Included(&b"b"[..])).map(|e| e.key()).collect();
        assert_eq!(from_b, vec![&b"b"[..]]);
    }
}
