//! `L_0`, the in-memory top level (paper section 2.1: "a standard data structure that supports
//! lookup, in-place insert and delete, and ordered scan"). Fences and data entries are kept in
//! two ordered maps so that "the fence with the largest key <= k" is one range query.

use std::collections::BTreeMap;

use crate::entry::{BlockPtr, Entry, delete_bytes, fence_bytes, insert_bytes};

/// The data entries of one key in `L_0`: one of the four cases of section 2.2 (never both
/// `false`/`None`, which is "no entry").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataSlot {
    /// A delete entry is present.
    pub delete: bool,
    /// An insert entry is present, with this value.
    pub insert: Option<Vec<u8>>,
}

impl DataSlot {
    /// Encoded bytes of the slot's entries for `key`.
    pub fn bytes(&self, key: &[u8]) -> u64 {
        let d = if self.delete { delete_bytes(key.len()) } else { 0 };
        let i = self.insert.as_ref().map_or(0, |v| insert_bytes(key.len(), v.len()));
        (d + i) as u64
    }
}

/// The top level.
#[derive(Debug, Clone, Default)]
pub struct TopLevel {
    fences: BTreeMap<Vec<u8>, BlockPtr>,
    data: BTreeMap<Vec<u8>, DataSlot>,
    /// Encoded bytes of all entries except the `-infinity` fence (the leading fence of `L_0`).
    sized_bytes: u64,
    data_bytes: u64,
    fence_bytes: u64,
}

impl TopLevel {
    /// An empty top level.
    pub fn new() -> Self {
        TopLevel::default()
    }

    /// Bytes counting toward `B(L_0)`.
    pub fn sized_bytes(&self) -> u64 {
        self.sized_bytes
    }

    /// Encoded bytes of data entries.
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes
    }

    /// Encoded bytes of fences.
    pub fn fence_bytes(&self) -> u64 {
        self.fence_bytes
    }

    /// The data entries of `key`.
    pub fn slot(&self, key: &[u8]) -> Option<&DataSlot> {
        self.data.get(key)
    }

    /// Replaces the data entries of `key` (`None` or an empty slot removes them).
    pub fn set_slot(&mut self, key: &[u8], slot: Option<DataSlot>) {
        if let Some(old) = self.data.remove(key) {
            let b = old.bytes(key);
            self.sized_bytes -= b;
            self.data_bytes -= b;
        }
        if let Some(slot) = slot
            && (slot.delete || slot.insert.is_some())
        {
            let b = slot.bytes(key);
            self.sized_bytes += b;
            self.data_bytes += b;
            self.data.insert(key.to_vec(), slot);
        }
    }

    /// Adds a fence (replacing one with the same key).
    pub fn add_fence(&mut self, key: Vec<u8>, ptr: BlockPtr) {
        let b = fence_bytes(key.len()) as u64;
        let sized = if key.is_empty() { 0 } else { b };
        if self.fences.insert(key, ptr).is_none() {
            self.fence_bytes += b;
            self.sized_bytes += sized;
        }
    }

    /// Removes the `-infinity` fence and returns its pointer (FD+FC: it becomes the
    /// wavefront fence of `L_0^old`, section 4.4.2).
    pub fn take_neg_infinity_fence(&mut self) -> Option<BlockPtr> {
        let ptr = self.fences.remove(&[][..])?;
        self.fence_bytes -= fence_bytes(0) as u64;
        Some(ptr)
    }

    /// Removes every entry with a key `<= key` (FD+FC's m-delete on `L_0^old`: those entries
    /// were processed by the merge). Returns the pointer of the last fence removed.
    pub fn remove_through(&mut self, key: &[u8]) -> Option<BlockPtr> {
        let mut last = None;
        while let Some(entry) = self.fences.first_entry() {
            if entry.key().as_slice() > key {
                break;
            }
            let (k, ptr) = entry.remove_entry();
            let b = fence_bytes(k.len()) as u64;
            self.fence_bytes -= b;
            if !k.is_empty() {
                self.sized_bytes -= b;
            }
            last = Some(ptr);
        }
        while let Some(entry) = self.data.first_entry() {
            if entry.key().as_slice() > key {
                break;
            }
            let (k, slot) = entry.remove_entry();
            let b = slot.bytes(&k);
            self.sized_bytes -= b;
            self.data_bytes -= b;
        }
        last
    }

    /// Removes every fence (FD+FC's merge-finalize, section 4.4.3, before `L_z`'s fences are
    /// added).
    pub fn remove_all_fences(&mut self) {
        for (k, _) in std::mem::take(&mut self.fences) {
            let b = fence_bytes(k.len()) as u64;
            self.fence_bytes -= b;
            if !k.is_empty() {
                self.sized_bytes -= b;
            }
        }
    }

    /// Whether the level holds no entry.
    pub fn is_empty(&self) -> bool {
        self.fences.is_empty() && self.data.is_empty()
    }

    /// Adds any entry (used when a fence-only or bottom level is relabeled `L_0`).
    pub fn add_entry(&mut self, e: Entry) {
        match e {
            Entry::Fence { key, ptr } => self.add_fence(key, ptr),
            Entry::Delete { key } => {
                let mut slot = self.data.get(&key).cloned().unwrap_or_default();
                slot.delete = true;
                self.set_slot(&key, Some(slot));
            }
            Entry::Insert { key, value } => {
                let mut slot = self.data.get(&key).cloned().unwrap_or_default();
                slot.insert = Some(value);
                self.set_slot(&key, Some(slot));
            }
        }
    }

    /// The fence with the largest key `<= key` (Algorithm 2, line 10).
    pub fn fence_at_or_before(&self, key: &[u8]) -> Option<(&[u8], BlockPtr)> {
        self.fences
            .range::<[u8], _>((std::ops::Bound::Unbounded, std::ops::Bound::Included(key)))
            .next_back()
            .map(|(k, p)| (k.as_slice(), *p))
    }

    /// Number of fences.
    pub fn fence_count(&self) -> usize {
        self.fences.len()
    }

    /// Number of keys with data entries.
    pub fn data_keys(&self) -> usize {
        self.data.len()
    }

    /// Fences in key order.
    pub fn fences(&self) -> impl Iterator<Item = (&Vec<u8>, &BlockPtr)> {
        self.fences.iter()
    }

    /// Data slots in key order, starting at `from`.
    pub fn data_from(
        &self,
        from: std::ops::Bound<&[u8]>,
    ) -> impl Iterator<Item = (&Vec<u8>, &DataSlot)> {
        self.data.range::<[u8], _>((from, std::ops::Bound::Unbounded))
    }

    /// All entries in level order (fence, delete, insert per key).
    pub fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::with_capacity(self.fences.len() + self.data.len());
        let mut fences = self.fences.iter().peekable();
        let mut data = self.data.iter().peekable();
        loop {
            let take_fence = match (fences.peek(), data.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((fk, _)), Some((dk, _))) => fk <= dk,
            };
            if take_fence {
                let (k, p) = fences.next().expect("peeked");
                out.push(Entry::Fence { key: k.clone(), ptr: *p });
            } else {
                let (k, slot) = data.next().expect("peeked");
                if slot.delete {
                    out.push(Entry::Delete { key: k.clone() });
                }
                if let Some(v) = &slot.insert {
                    out.push(Entry::Insert { key: k.clone(), value: v.clone() });
                }
            }
        }
        out
    }

    /// Adds the entries of `newer`, a top level whose modifications came after this one's
    /// (FD+DS: `L_0^new` joining the `L_0` a merge switched in, or `L_0^old` after a failed
    /// merge). A key present in both is coalesced like a merge (section 2.3): a newer delete
    /// cancels an older insert. Returns the cancellations and their bytes for the counters;
    /// an impossible sequence (corrupt state) is an error and leaves `self` partly updated.
    pub fn absorb_newer(&mut self, newer: TopLevel) -> Result<(u64, u64), String> {
        let (mut cancellations, mut cancelled_bytes) = (0, 0);
        for (key, ptr) in newer.fences {
            self.add_fence(key, ptr);
        }
        for (key, slot) in newer.data {
            let Some(old) = self.data.get(&key) else {
                self.set_slot(&key, Some(slot));
                continue;
            };
            let as_entries = |s: &DataSlot| {
                let mut v = Vec::with_capacity(2);
                if s.delete {
                    v.push(Entry::Delete { key: key.clone() });
                }
                if let Some(value) = &s.insert {
                    v.push(Entry::Insert { key: key.clone(), value: value.clone() });
                }
                v
            };
            let net = crate::merge::coalesce(&key, [as_entries(old), as_entries(&slot)])
                .map_err(|r| format!("{r} (key {key:?})"))?;
            cancellations += net.cancellations;
            cancelled_bytes += net.cancelled_bytes;
            self.set_slot(&key, Some(DataSlot { delete: net.delete, insert: net.insert }));
        }
        Ok((cancellations, cancelled_bytes))
    }

    /// Memory held, approximately (entries plus map overhead).
    pub fn memory_bytes(&self) -> u64 {
        self.data_bytes + self.fence_bytes + 64 * (self.fences.len() + self.data.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_accounting_follows_changes() {
        let mut t = TopLevel::new();
        t.add_fence(vec![], BlockPtr { file: 1, index: 0 });
        assert_eq!(t.sized_bytes(), 0);
        t.set_slot(b"k", Some(DataSlot { delete: true, insert: Some(b"v".to_vec()) }));
        let n = (delete_bytes(1) + insert_bytes(1, 1)) as u64;
        assert_eq!(t.sized_bytes(), n);
        t.set_slot(b"k", Some(DataSlot { delete: true, insert: None }));
        assert_eq!(t.sized_bytes(), delete_bytes(1) as u64);
        t.set_slot(b"k", None);
        assert_eq!(t.sized_bytes(), 0);
        t.add_fence(b"m".to_vec(), BlockPtr { file: 1, index: 1 });
        assert_eq!(t.fence_at_or_before(b"z").unwrap().0, b"m");
        assert_eq!(t.fence_at_or_before(b"a").unwrap().0, b"");
        assert_eq!(t.entries().len(), 2);
    }

    #[test]
    fn removing_through_a_key_keeps_the_byte_counts() {
        let mut t = TopLevel::new();
        t.add_fence(vec![], BlockPtr { file: 1, index: 0 });
        t.add_fence(b"c".to_vec(), BlockPtr { file: 1, index: 1 });
        t.add_fence(b"f".to_vec(), BlockPtr { file: 1, index: 2 });
        for k in [&b"b"[..], b"c", b"d", b"g"] {
            t.set_slot(k, Some(DataSlot { delete: false, insert: Some(b"v".to_vec()) }));
        }
        assert_eq!(t.take_neg_infinity_fence(), Some(BlockPtr { file: 1, index: 0 }));
        assert_eq!(t.remove_through(b"d"), Some(BlockPtr { file: 1, index: 1 }));
        assert_eq!(t.fence_count(), 1);
        assert_eq!(t.data_keys(), 1);
        let expect = (fence_bytes(1) + insert_bytes(1, 1)) as u64;
        assert_eq!((t.sized_bytes(), t.fence_bytes() + t.data_bytes()), (expect, expect));
        t.remove_all_fences();
        assert_eq!(t.sized_bytes(), insert_bytes(1, 1) as u64);
        assert_eq!(t.remove_through(b"a"), None);
        assert!(!t.is_empty());
        assert_eq!(t.remove_through(b"z"), None);
        assert!(t.is_empty());
    }

    #[test]
    fn absorbing_newer_entries_cancels_older_inserts() {
        let mut old = TopLevel::new();
        old.set_slot(b"a", Some(DataSlot { delete: false, insert: Some(b"1".to_vec()) }));
        old.set_slot(b"b", Some(DataSlot { delete: true, insert: Some(b"2".to_vec()) }));
        let mut new = TopLevel::new();
        new.set_slot(b"a", Some(DataSlot { delete: true, insert: None }));
        new.set_slot(b"b", Some(DataSlot { delete: true, insert: Some(b"3".to_vec()) }));
        new.set_slot(b"c", Some(DataSlot { delete: false, insert: Some(b"4".to_vec()) }));
        let (n, bytes) = old.absorb_newer(new).unwrap();
        assert_eq!((n, bytes), (2, 2 * insert_bytes(1, 1) as u64));
        assert!(old.slot(b"a").is_none());
        assert_eq!(old.slot(b"b"), Some(&DataSlot { delete: true, insert: Some(b"3".to_vec()) }));
        assert_eq!(old.slot(b"c").unwrap().insert.as_deref(), Some(&b"4"[..]));
        let mut bad = TopLevel::new();
        bad.set_slot(b"c", Some(DataSlot { delete: false, insert: Some(b"5".to_vec()) }));
        assert!(old.absorb_newer(bad).is_err());
    }
}
