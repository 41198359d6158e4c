//! Leaves: sorted keys with their values and the link to the right sibling (for range scans).
//!
//! Invariants (checked by [`super::verify`]): keys strictly ascend; every key and value is
//! within the layout's limits; a leaf written to the medium fits its payload capacity.
//! Operations may leave a leaf overfull or underfull: the caller then splits
//! ([`super::rebalance::split`]) or rebalances ([`super::rebalance::rebalance`]) it.

use lamina_core::Result;

use super::layout::{NodeId, NodeLayout, leaf_entry_bytes};

/// One key and its value.
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

/// A leaf node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeafNode {
    /// Entries in strictly ascending key order.
    pub entries: Vec<LeafEntry>,
    /// The next leaf to the right, `None` for the last leaf.
    pub right_sibling: Option<NodeId>,
}

impl LeafNode {
    /// An empty leaf with no right sibling (the root of an empty tree).
    pub fn new() -> Self {
        LeafNode::default()
    }

    /// Bytes of payload the entries take.
    pub fn payload_bytes(&self) -> usize {
        self.entries.iter().map(LeafEntry::encoded_bytes).sum()
    }

    /// Where `key` is (`Ok`) or would be inserted (`Err`).
    pub fn search(&self, key: &[u8]) -> std::result::Result<usize, usize> {
        self.entries.binary_search_by(|e| e.key.as_slice().cmp(key))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.search(key).ok().map(|i| self.entries[i].value.as_slice())
    }

    /// The first entry with a key `>= key` (a range scan's start).
    pub fn lower_bound(&self, key: &[u8]) -> usize {
        self.search(key).unwrap_or_else(|i| i)
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
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].value, value.to_vec())),
            Err(i) => {
                self.entries.insert(i, LeafEntry { key: key.to_vec(), value: value.to_vec() });
                None
            }
        })
    }

    /// Removes `key`, returning its value. The leaf may be underfull afterwards.
    pub fn remove(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        self.search(key).ok().map(|i| self.entries.remove(i).value)
    }

    /// The smallest key, if any.
    pub fn first_key(&self) -> Option<&[u8]> {
        self.entries.first().map(|e| e.key.as_slice())
    }

    /// The largest key, if any.
    pub fn last_key(&self) -> Option<&[u8]> {
        self.entries.last().map(|e| e.key.as_slice())
    }

    /// Estimated heap bytes of the decoded leaf (what the node cache charges).
    pub fn memory_bytes(&self) -> usize {
        const ENTRY_OVERHEAD_BYTES: usize = 2 * std::mem::size_of::<Vec<u8>>();
        std::mem::size_of::<Self>()
            + self
                .entries
                .iter()
                .map(|e| ENTRY_OVERHEAD_BYTES + e.key.len() + e.value.len())
                .sum::<usize>()
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
        let keys: Vec<&[u8]> = leaf.entries.iter().map(|e| e.key.as_slice()).collect();
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
        assert!(leaf.entries.is_empty());
    }
}
