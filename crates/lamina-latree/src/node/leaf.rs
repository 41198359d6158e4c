//! Leaves: sorted keys with their values and the link to the right sibling (for range scans).
//!
//! Invariants (checked by [`super::verify`]): keys strictly ascend; every key and value is
//! within the layout's limits; a leaf written to the medium fits its payload capacity.
//! Operations may leave a leaf overfull or underfull: the caller then splits
//! ([`super::rebalance::split`]) or rebalances ([`super::rebalance::rebalance`]) it.

use lamina_core::Result;

use super::layout::{NodeId, NodeLayout, leaf_entry_bytes};

/// One key and its value (building leaves in tests and tools; a [`LeafNode`] stores its
/// entries packed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafEntry {
    /// The key (`1..=key_bytes_max` bytes).
    pub key: Vec<u8>,
    /// The value (`0..=value_bytes_max` bytes).
    pub value: Vec<u8>,
}

impl LeafEntry {
    /// Bytes the entry takes in a node.
    pub fn encoded_bytes(&self) -> usize {
        leaf_entry_bytes(self.key.len(), self.value.len())
    }
}

/// Where one entry's bytes are in [`LeafNode::data`]: the key at `at`, the value right after.
#[derive(Debug, Clone, Copy)]
struct Slot {
    at: usize,
    key_len: u32,
    value_len: u32,
}

impl Slot {
    fn bytes(self) -> usize {
        self.key_len as usize + self.value_len as usize
    }
}

/// A leaf node.
///
/// Packed (not a `Vec` per key and value): decoding a page, cloning a cached leaf to change
/// it and dropping it are a few allocations, and the node cache's charge is close to the
/// page's. `data` holds each entry's key followed by its value; `slots` name them in key
/// order. A replaced value of another length or a removed entry leaves `garbage` bytes in
/// `data`, compacted away once they are more than half of it.
#[derive(Debug, Clone, Default)]
pub struct LeafNode {
    data: Vec<u8>,
    slots: Vec<Slot>,
    /// Bytes of `data` no slot names.
    garbage: usize,
    /// The entries' encoded bytes (`leaf_entry_bytes` summed): the page's payload.
    payload: usize,
    /// The next leaf to the right, `None` for the last leaf.
    pub right_sibling: Option<NodeId>,
}

impl PartialEq for LeafNode {
    fn eq(&self, other: &Self) -> bool {
        self.right_sibling == other.right_sibling && self.iter().eq(other.iter())
    }
}

impl Eq for LeafNode {}

/// Growth of a leaf's vectors: an eighth more, not double (a cached leaf is cloned exactly
/// and changed by a few entries; doubling would charge the cache twice its size).
fn reserve<T>(v: &mut Vec<T>, extra: usize) {
    if v.capacity() - v.len() < extra {
        v.reserve_exact(extra.max(v.len() / 8));
    }
}

impl LeafNode {
    /// An empty leaf with no right sibling (the root of an empty tree).
    pub fn new() -> Self {
        LeafNode::default()
    }

    /// An empty leaf with room for `entries` entries of `data_bytes` key and value bytes.
    pub fn with_capacity(entries: usize, data_bytes: usize) -> Self {
        LeafNode {
            data: Vec::with_capacity(data_bytes),
            slots: Vec::with_capacity(entries),
            ..LeafNode::default()
        }
    }

    /// A leaf of `entries` as given: keys should strictly ascend, but this is not checked
    /// (tests build broken leaves for [`super::verify`] to refuse).
    pub fn from_entries(entries: &[LeafEntry], right_sibling: Option<NodeId>) -> Self {
        let bytes = entries.iter().map(|e| e.key.len() + e.value.len()).sum();
        let mut leaf = LeafNode::with_capacity(entries.len(), bytes);
        for e in entries {
            let slot = leaf.append_bytes(&e.key, &e.value);
            leaf.slots.push(slot);
        }
        leaf.right_sibling = right_sibling;
        leaf
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the leaf holds no entry.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn key_of(&self, slot: Slot) -> &[u8] {
        &self.data[slot.at..slot.at + slot.key_len as usize]
    }

    fn value_of(&self, slot: Slot) -> &[u8] {
        let start = slot.at + slot.key_len as usize;
        &self.data[start..start + slot.value_len as usize]
    }

    /// The key of entry `i`.
    pub fn key(&self, i: usize) -> &[u8] {
        self.key_of(self.slots[i])
    }

    /// The value of entry `i`.
    pub fn value(&self, i: usize) -> &[u8] {
        self.value_of(self.slots[i])
    }

    /// Bytes entry `i` takes in a node.
    pub fn entry_bytes(&self, i: usize) -> usize {
        let slot = self.slots[i];
        leaf_entry_bytes(slot.key_len as usize, slot.value_len as usize)
    }

    /// The entries in key order, as (key, value).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], &[u8])> + ExactSizeIterator {
        self.slots.iter().map(|&s| (self.key_of(s), self.value_of(s)))
    }

    /// The entries, copied.
    pub fn to_entries(&self) -> Vec<LeafEntry> {
        self.iter().map(|(k, v)| LeafEntry { key: k.to_vec(), value: v.to_vec() }).collect()
    }

    /// Bytes of payload the entries take.
    pub fn payload_bytes(&self) -> usize {
        self.payload
    }

    /// Where `key` is (`Ok`) or would be inserted (`Err`).
    pub fn search(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        self.slots.binary_search_by(|&s| self.key_of(s).cmp(key))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.search(key).ok().map(|i| self.value(i))
    }

    /// The first entry with a key `>= key` (a range scan's start).
    pub fn lower_bound(&self, key: &[u8]) -> usize {
        self.search(key).unwrap_or_else(|i| i)
    }

    /// Appends `key` and `value` at the end; `key` must be above every key of the leaf.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        assert!(self.last_key().is_none_or(|last| last < key), "leaf keys strictly ascend");
        let slot = self.append_bytes(key, value);
        reserve(&mut self.slots, 1);
        self.slots.push(slot);
    }

    fn append_bytes(&mut self, key: &[u8], value: &[u8]) -> Slot {
        reserve(&mut self.data, key.len() + value.len());
        let at = self.data.len();
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
        self.payload += leaf_entry_bytes(key.len(), value.len());
        let len = |n: usize| u32::try_from(n).expect("keys and values are within the limits");
        Slot { at, key_len: len(key.len()), value_len: len(value.len()) }
    }

    /// Inserts or replaces `key`, returning the value it replaced. Keys and values over the
    /// layout's limits are refused and change nothing. The leaf may be overfull afterwards.
    pub fn upsert(
        &mut self,
        layout: &NodeLayout,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        layout.check_entry(key, value)?;
        Ok(match self.search(key) {
            Ok(i) => {
                let slot = self.slots[i];
                let old = self.value_of(slot).to_vec();
                if slot.value_len as usize == value.len() {
                    // Same length (the common overwrite): in place.
                    let start = slot.at + slot.key_len as usize;
                    self.data[start..start + value.len()].copy_from_slice(value);
                } else {
                    self.drop_slot(slot);
                    self.slots[i] = self.append_bytes(key, value);
                    self.maybe_compact();
                }
                Some(old)
            }
            Err(i) => {
                let slot = self.append_bytes(key, value);
                reserve(&mut self.slots, 1);
                self.slots.insert(i, slot);
                None
            }
        })
    }

    /// This leaf with `updates` applied, in one pass over both (an emptying's batch: `O(n +
    /// m)` where an upsert per entry moves `O(n)` slots each). `updates` ascend strictly by
    /// key; `Some(value)` puts, `None` deletes. Keys and values over the layout's limits are
    /// refused (nothing is returned). The result is compact and may be overfull or underfull.
    pub fn merged<'a>(
        &self,
        layout: &NodeLayout,
        updates: impl IntoIterator<Item = (&'a [u8], Option<&'a [u8]>)>,
    ) -> Result<LeafNode> {
        let mut out = LeafNode::with_capacity(self.len(), self.data.len() - self.garbage);
        let mut i = 0;
        let mut last: Option<&[u8]> = None;
        for (key, value) in updates {
            assert!(last.is_none_or(|last| last < key), "updates ascend strictly by key");
            last = Some(key);
            layout.check_entry(key, value.unwrap_or_default())?;
            while i < self.len() && self.key(i) < key {
                out.push_unchecked(self.key(i), self.value(i));
                i += 1;
            }
            if i < self.len() && self.key(i) == key {
                i += 1; // replaced or deleted
            }
            if let Some(value) = value {
                out.push_unchecked(key, value);
            }
        }
        for j in i..self.len() {
            out.push_unchecked(self.key(j), self.value(j));
        }
        out.right_sibling = self.right_sibling;
        Ok(out)
    }

    /// [`LeafNode::push`] where the caller guarantees the order.
    fn push_unchecked(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(self.last_key().is_none_or(|last| last < key));
        let slot = self.append_bytes(key, value);
        reserve(&mut self.slots, 1);
        self.slots.push(slot);
    }

    /// Removes `key`, returning its value. The leaf may be underfull afterwards.
    pub fn remove(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        let i = self.search(key).ok()?;
        let slot = self.slots.remove(i);
        let value = self.value_of(slot).to_vec();
        self.drop_slot(slot);
        self.maybe_compact();
        Some(value)
    }

    /// Accounts for `slot`'s bytes becoming garbage.
    fn drop_slot(&mut self, slot: Slot) {
        self.garbage += slot.bytes();
        self.payload -= leaf_entry_bytes(slot.key_len as usize, slot.value_len as usize);
    }

    fn maybe_compact(&mut self) {
        if self.garbage > self.data.len() / 2 {
            self.compact();
        }
    }

    /// Rewrites `data` without garbage, sized to fit.
    fn compact(&mut self) {
        let mut data = Vec::with_capacity(self.data.len() - self.garbage);
        for slot in &mut self.slots {
            let at = data.len();
            data.extend_from_slice(&self.data[slot.at..slot.at + slot.bytes()]);
            slot.at = at;
        }
        self.data = data;
        self.slots.shrink_to_fit();
        self.garbage = 0;
    }

    /// Splits off the entries from `i` on into a new leaf (which takes the right sibling;
    /// this leaf's is cleared). Both come out compact.
    pub fn split_off(&mut self, i: usize) -> LeafNode {
        let mut right = LeafNode::with_capacity(
            self.len() - i,
            self.slots[i..].iter().map(|s| s.bytes()).sum(),
        );
        for &slot in &self.slots[i..] {
            let s = right.append_bytes(self.key_of(slot), self.value_of(slot));
            right.slots.push(s);
        }
        right.right_sibling = self.right_sibling.take();
        for slot in self.slots.split_off(i) {
            self.drop_slot(slot);
        }
        self.compact();
        right
    }

    /// Appends every entry of `other` (all its keys above this leaf's); the right sibling
    /// becomes `other`'s.
    pub fn append(&mut self, other: &LeafNode) {
        if let (Some(last), Some(first)) = (self.last_key(), other.first_key()) {
            assert!(last < first, "appended keys follow");
        }
        reserve(&mut self.slots, other.len());
        for (key, value) in other.iter() {
            let slot = self.append_bytes(key, value);
            self.slots.push(slot);
        }
        self.right_sibling = other.right_sibling;
    }

    /// The smallest key, if any.
    pub fn first_key(&self) -> Option<&[u8]> {
        self.slots.first().map(|&s| self.key_of(s))
    }

    /// The largest key, if any.
    pub fn last_key(&self) -> Option<&[u8]> {
        self.slots.last().map(|&s| self.key_of(s))
    }

    /// Estimated heap bytes of the decoded leaf (what the node cache charges): its bytes
    /// (garbage included) and slots in use, so equal leaves are charged alike however they
    /// were built (spare capacity is not counted: [`reserve`] keeps it small).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.data.len()
            + self.slots.len() * std::mem::size_of::<Slot>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> NodeLayout {
        NodeLayout::new(512, 16, 16).unwrap()
    }

    #[test]
    fn upsert_keeps_keys_sorted_and_returns_the_old_value() {
        let mut leaf = LeafNode::new();
        for key in [b"m", b"c", b"x", b"a"] {
            assert_eq!(leaf.upsert(&layout(), key, b"1").unwrap(), None);
        }
        assert_eq!(leaf.upsert(&layout(), b"c", b"2").unwrap(), Some(b"1".to_vec()));
        let keys: Vec<&[u8]> = leaf.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, [b"a", b"c", b"m", b"x"]);
        assert_eq!(leaf.get(b"c"), Some(&b"2"[..]));
        assert_eq!(leaf.get(b"d"), None);
        assert_eq!(leaf.lower_bound(b"d"), 2);
        assert_eq!(leaf.first_key(), Some(&b"a"[..]));
        assert_eq!(leaf.last_key(), Some(&b"x"[..]));
        assert_eq!(leaf.payload_bytes(), 4 * leaf_entry_bytes(1, 1));
    }

    #[test]
    fn remove_and_refusals_change_only_what_they_say() {
        let mut leaf = LeafNode::new();
        leaf.upsert(&layout(), b"a", b"1").unwrap();
        let before = leaf.clone();
        assert!(leaf.upsert(&layout(), &[7; 17], b"").is_err());
        assert!(leaf.upsert(&layout(), b"b", &[0; 17]).is_err());
        assert_eq!(leaf, before);
        assert_eq!(leaf.remove(b"zz"), None);
        assert_eq!(leaf.remove(b"a"), Some(b"1".to_vec()));
        assert!(leaf.is_empty());
        assert_eq!(leaf.payload_bytes(), 0);
    }

    #[test]
    fn replacing_removing_and_compacting_keep_the_entries() {
        let layout = NodeLayout::new(4096, 16, 64).unwrap();
        let mut leaf = LeafNode::new();
        let mut model = std::collections::BTreeMap::new();
        for round in 0..40u8 {
            for k in 0..20u8 {
                let key = [b'k', k];
                match (round + k) % 3 {
                    0 => {
                        let value = vec![round; usize::from(k % 7 + round % 5)];
                        let old = leaf.upsert(&layout, &key, &value).unwrap();
                        assert_eq!(old, model.insert(key.to_vec(), value));
                    }
                    1 => assert_eq!(leaf.remove(&key), model.remove(&key[..])),
                    _ => assert_eq!(leaf.get(&key), model.get(&key[..]).map(Vec::as_slice)),
                }
                let entries: Vec<(Vec<u8>, Vec<u8>)> =
                    leaf.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
                let expected: Vec<(Vec<u8>, Vec<u8>)> =
                    model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                assert_eq!(entries, expected);
                let payload: usize =
                    model.iter().map(|(k, v)| leaf_entry_bytes(k.len(), v.len())).sum();
                assert_eq!(leaf.payload_bytes(), payload);
                assert!(leaf.garbage <= leaf.data.len() / 2, "garbage is compacted");
            }
        }
        let all = leaf.to_entries();
        let n = leaf.len();
        let mut left = leaf.clone();
        let right = left.split_off(n / 2);
        assert_eq!(left.to_entries(), all[..n / 2]);
        assert_eq!(right.to_entries(), all[n / 2..]);
        assert_eq!(left.payload_bytes() + right.payload_bytes(), leaf.payload_bytes());
        left.append(&right);
        assert_eq!(left, leaf);
        assert_eq!(LeafNode::from_entries(&all, None), leaf);
    }

    #[test]
    fn merging_a_sorted_batch_is_upserting_it() {
        let layout = NodeLayout::new(4096, 16, 64).unwrap();
        let mut leaf = LeafNode::new();
        for k in (0..60u8).step_by(2) {
            leaf.upsert(&layout, &[b'k', k], &[k; 3]).unwrap();
        }
        // Puts of new and existing keys, deletes of present and absent ones, at both ends.
        let updates: Vec<(Vec<u8>, Option<Vec<u8>>)> = (0..64u8)
            .filter(|k| k % 3 != 1)
            .map(|k| (vec![b'k', k], (k % 5 != 0).then(|| vec![k; usize::from(k % 4)])))
            .collect();
        let mut expected = leaf.clone();
        for (key, value) in &updates {
            match value {
                Some(value) => drop(expected.upsert(&layout, key, value).unwrap()),
                None => drop(expected.remove(key)),
            }
        }
        let merged = leaf
            .merged(&layout, updates.iter().map(|(k, v)| (k.as_slice(), v.as_deref())))
            .unwrap();
        assert_eq!(merged, expected);
        assert_eq!(merged.payload_bytes(), expected.payload_bytes());
        let too_long = [(&[7u8; 17][..], None)];
        assert!(leaf.merged(&layout, too_long).is_err());
    }
}
