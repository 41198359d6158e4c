//! The root s-node's d-tree, held in memory (paper section 4: "the d-tree corresponding to
//! the root s-node is kept in memory"): an ordered map of each key's newest entry.
//!
//! Two exist at a time at most: the active one, which writers insert into, and the frozen
//! one, which the flush job distributes to the root's children while the active one fills
//! (deamortization, section 5.1). Writers change the map under its write lock (no I/O);
//! readers and the flush job take the read lock. Once frozen, no writer touches it again
//! (the engine's write gate ensures it).

use std::borrow::Borrow;
use std::collections::{BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use lamina_storage::arena::{Arena, key_prefix};
use parking_lot::RwLock;

use crate::entry::{Slot, entry_bytes};

/// Memory an entry costs beyond its bytes in the arena: its share of the set's nodes (a
/// 40-byte handle, 11 per leaf about three quarters full, plus internal nodes).
pub const ENTRY_MEMORY_OVERHEAD_BYTES: u64 = 64;

/// An entry's header in the arena: key length (u16 LE), kind.
const HEADER: usize = 3;
const KIND_DELETE: u8 = 0;
const KIND_PUT: u8 = 1;

/// One entry: `key length (u16 LE) | kind (u8) | key | value` (no value for a delete), a
/// slice of the memtable's arena (`lamina_storage::arena`: entries are not allocated one by
/// one, and a dropped memtable frees whole chunks), with the key's prefix beside it, which
/// decides almost every comparison without reading the entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// [`key_prefix`] of the key.
    prefix: u64,
    bytes: Bytes,
}

impl Entry {
    fn new(arena: &mut Arena, key: &[u8], value: Option<&[u8]>) -> Entry {
        let key_len = u16::try_from(key.len()).expect("keys are limited far below 64 KiB");
        let len = HEADER + key.len() + value.map_or(0, <[u8]>::len);
        let bytes = arena.alloc(len, |out| {
            out.extend_from_slice(&key_len.to_le_bytes());
            out.extend_from_slice(&[if value.is_some() { KIND_PUT } else { KIND_DELETE }]);
            out.extend_from_slice(key);
            out.extend_from_slice(value.unwrap_or_default());
        });
        Entry { prefix: key_prefix(key), bytes }
    }

    /// The key.
    pub fn key(&self) -> &[u8] {
        let len = usize::from(u16::from_le_bytes([self.bytes[0], self.bytes[1]]));
        &self.bytes[HEADER..HEADER + len]
    }

    /// The value (`None`: a delete).
    pub fn value(&self) -> Option<&[u8]> {
        (self.bytes[2] == KIND_PUT).then(|| &self.bytes[HEADER + self.key().len()..])
    }

    /// The value side as an owned [`Slot`].
    pub fn slot(&self) -> Slot {
        self.value().map(<[u8]>::to_vec)
    }

    /// Requests the entry's first cache lines ([`lamina_storage::arena::prefetch_entry`]).
    pub fn prefetch(&self) {
        lamina_storage::arena::prefetch_entry(&self.bytes);
    }

    /// What the entry counts toward sigma.
    fn sized_bytes(&self) -> u64 {
        entry_bytes(self.key().len(), self.value().map(<[u8]>::len))
    }
}

impl Borrow<[u8]> for Entry {
    fn borrow(&self) -> &[u8] {
        self.key()
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // The keys are read only when the prefixes tie.
        self.prefix.cmp(&other.prefix).then_with(|| self.key().cmp(other.key()))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The set and the arena its entries live in.
#[derive(Debug)]
struct Inner {
    set: BTreeSet<Entry>,
    arena: Arena,
}

/// An in-memory root d-tree.
#[derive(Debug)]
pub struct Memtable {
    inner: RwLock<Inner>,
    /// Sum of the live entries' [`entry_bytes`]: what counts toward sigma.
    bytes: AtomicU64,
    /// Arena bytes of entries replaced by a newer one of their key: they stay until the
    /// memtable is dropped, so the engine freezes a memtable whose dead bytes reach sigma
    /// (overwrites of few keys) as it does one whose live bytes do.
    dead_bytes: AtomicU64,
    /// Memory the entries take (live and dead).
    memory_bytes: AtomicU64,
}

impl Memtable {
    /// An empty memtable that will hold about `sigma_bytes` (it sizes the arena's chunks).
    pub fn new(sigma_bytes: u64) -> Memtable {
        Memtable {
            inner: RwLock::new(Inner { set: BTreeSet::new(), arena: Arena::new(sigma_bytes) }),
            bytes: AtomicU64::new(0),
            dead_bytes: AtomicU64::new(0),
            memory_bytes: AtomicU64::new(0),
        }
    }

    /// Inserts `key`'s newest entry (a put, or a delete: `None`).
    pub fn apply(&self, key: &[u8], value: Option<&[u8]>) {
        let mut inner = self.inner.write();
        self.apply_locked(&mut inner, key, value);
    }

    /// Applies several entries at once: readers see all of them or none.
    pub fn apply_all<'a>(&self, entries: impl IntoIterator<Item = (&'a [u8], Option<&'a [u8]>)>) {
        let mut inner = self.inner.write();
        for (key, value) in entries {
            self.apply_locked(&mut inner, key, value);
        }
    }

    fn apply_locked(&self, inner: &mut Inner, key: &[u8], value: Option<&[u8]>) {
        let entry = Entry::new(&mut inner.arena, key, value);
        let sized = entry.sized_bytes();
        let memory = entry.bytes.len() as u64 + ENTRY_MEMORY_OVERHEAD_BYTES;
        // One search: most puts add a new key.
        if let Some(old) = inner.set.replace(entry) {
            // The old entry's bytes stay in the arena; its handle in the set is given back.
            self.bytes.fetch_sub(old.sized_bytes(), Ordering::Relaxed);
            self.dead_bytes.fetch_add(old.bytes.len() as u64, Ordering::Relaxed);
            self.memory_bytes.fetch_sub(ENTRY_MEMORY_OVERHEAD_BYTES, Ordering::Relaxed);
        }
        self.bytes.fetch_add(sized, Ordering::Relaxed);
        self.memory_bytes.fetch_add(memory, Ordering::Relaxed);
    }

    /// The entry of `key`: `Some(Some(v))` a put, `Some(None)` a delete, `None` absent.
    pub fn get(&self, key: &[u8]) -> Option<Slot> {
        self.inner.read().set.get(key).map(Entry::slot)
    }

    /// Appends to `out` the entries in `bounds`, at most `limit`, in key order (shared
    /// slices of the arena: no copy).
    pub fn range_into(
        &self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
        limit: usize,
        out: &mut VecDeque<Entry>,
    ) {
        if bounds_are_empty(bounds) {
            return;
        }
        let inner = self.inner.read();
        out.extend(inner.set.range::<[u8], _>(bounds).take(limit).cloned());
    }

    /// Entries in `range` (as bounds), at most `limit`, in key order, copied.
    #[cfg(test)]
    pub fn range(
        &self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
        limit: usize,
    ) -> Vec<(Vec<u8>, Slot)> {
        let mut entries = VecDeque::new();
        self.range_into(bounds, limit, &mut entries);
        entries.iter().map(|e| (e.key().to_vec(), e.slot())).collect()
    }

    /// Sum of the live entries' sizes (what counts toward sigma).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Arena bytes of replaced entries.
    pub fn dead_bytes(&self) -> u64 {
        self.dead_bytes.load(Ordering::Relaxed)
    }

    /// How full the memtable is, for freezing it: the larger of its live and dead bytes.
    pub fn fill_bytes(&self) -> u64 {
        self.bytes().max(self.dead_bytes())
    }

    /// Memory the entries take.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes.load(Ordering::Relaxed)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.inner.read().set.len()
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.inner.read().set.is_empty()
    }
}

/// Whether `bounds` select nothing (`BTreeSet::range` panics on a start past the end, or
/// equal with both excluded).
fn bounds_are_empty(bounds: (Bound<&[u8]>, Bound<&[u8]>)) -> bool {
    match bounds {
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a > b
                || (a == b
                    && (matches!(bounds.0, Bound::Excluded(_))
                        || matches!(bounds.1, Bound::Excluded(_))))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overwrites_replace_sizes_and_ranges_respect_bounds() {
        let m = Memtable::new(1 << 20);
        m.apply(b"b", Some(&[1; 10]));
        m.apply(b"a", None);
        m.apply(b"b", Some(&[2; 4]));
        assert_eq!(m.bytes(), entry_bytes(1, Some(4)) + entry_bytes(1, None));
        // The replaced put of b (3 + 1 + 10 bytes) stays in the arena, counted as dead.
        assert_eq!(m.dead_bytes(), 14);
        assert_eq!(m.fill_bytes(), m.bytes());
        assert_eq!(m.memory_bytes(), 14 + 4 + 8 + 2 * ENTRY_MEMORY_OVERHEAD_BYTES);
        assert_eq!(m.get(b"b"), Some(Some(vec![2; 4])));
        assert_eq!(m.get(b"a"), Some(None));
        assert_eq!(m.get(b"c"), None);
        assert_eq!(m.range((Bound::Unbounded, Bound::Unbounded), 10).len(), 2);
        assert_eq!(m.range((Bound::Excluded(b"a"), Bound::Unbounded), 10).len(), 1);
        assert!(m.range((Bound::Excluded(b"a"), Bound::Excluded(b"b")), 10).is_empty());
        assert!(m.range((Bound::Excluded(b"c"), Bound::Excluded(b"b")), 10).is_empty());
        assert_eq!(m.range((Bound::Included(b"a"), Bound::Included(b"a")), 5).len(), 1);
    }

    /// Keys whose 8-byte prefixes tie (a zero-padded short key, a longer one) are ordered
    /// by their bytes.
    #[test]
    fn keys_with_equal_prefixes_order_by_their_bytes() {
        let m = Memtable::new(1 << 20);
        let keys: [&[u8]; 5] = [b"abcdefgh\x00", b"abcdefg", b"abcdefgh", b"abcdefg\x00", b"b"];
        for k in keys {
            m.apply(k, Some(k));
        }
        let got: Vec<Vec<u8>> =
            m.range((Bound::Unbounded, Bound::Unbounded), 10).into_iter().map(|(k, _)| k).collect();
        let mut want: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
        want.sort();
        assert_eq!(got, want);
        for k in keys {
            assert_eq!(m.get(k), Some(Some(k.to_vec())));
        }
    }
}
