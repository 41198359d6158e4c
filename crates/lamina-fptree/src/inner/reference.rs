//! The reference inner nodes: an ordered map from separator to leaf under one lock. Correct
//! by construction, the model for the optimistic implementation's tests.

use std::collections::BTreeMap;
use std::ops::Bound;

use parking_lot::RwLock;

use super::contract::{InnerIndex, LeafId, Visit};

/// A `BTreeMap<separator, leaf>` under one reader-writer lock.
#[derive(Debug)]
pub struct ReferenceInner {
    map: RwLock<BTreeMap<Box<[u8]>, LeafId>>,
}

impl InnerIndex for ReferenceInner {
    fn build(leaves: Vec<(Box<[u8]>, LeafId)>) -> Self {
        assert!(!leaves.is_empty(), "an FPTree has at least one leaf");
        let mut map = BTreeMap::new();
        for (i, (separator, leaf)) in leaves.into_iter().enumerate() {
            let separator = if i == 0 { Box::default() } else { separator };
            let previous = map.insert(separator, leaf);
            assert!(previous.is_none(), "separators must be distinct");
        }
        Self { map: RwLock::new(map) }
    }

    fn locate<T>(
        &self,
        key: &[u8],
        mut visit: impl FnMut(LeafId, Option<LeafId>) -> Visit<T>,
        _undo: impl FnMut(T),
    ) -> T {
        loop {
            let map = self.map.read();
            let mut before = map.range::<[u8], _>((Bound::Unbounded, Bound::Included(key)));
            let (_, &leaf) = before.next_back().expect("the empty separator covers every key");
            let prev = before.next_back().map(|(_, &leaf)| leaf);
            // Under the read lock nothing can invalidate the traversal: no undo is needed.
            if let Visit::Done(done) = visit(leaf, prev) {
                return done;
            }
            drop(map);
            std::thread::yield_now();
        }
    }

    fn insert_separator(&self, separator: &[u8], right: LeafId) {
        let previous = self.map.write().insert(separator.into(), right);
        assert!(previous.is_none(), "separator already present");
    }

    fn remove_leaf(&self, key: &[u8], leaf: LeafId) {
        let mut map = self.map.write();
        let separator = map
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()
            .map(|(separator, &found)| {
                assert_eq!(found, leaf, "remove_leaf: {key:?} is not covered by that leaf");
                separator.clone()
            })
            .expect("the empty separator covers every key");
        assert!(!separator.is_empty(), "the first leaf is never removed");
        map.remove(&separator);
    }

    fn leaf_count(&self) -> usize {
        self.map.read().len()
    }

    fn dram_bytes(&self) -> u64 {
        let map = self.map.read();
        map.keys().map(|k| k.len() as u64 + 8 + 16).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn located(inner: &ReferenceInner, key: &[u8]) -> (LeafId, Option<LeafId>) {
        inner.locate(key, |leaf, prev| Visit::Done((leaf, prev)), |_| {})
    }

    #[test]
    fn a_key_is_covered_by_the_last_separator_at_or_below_it() {
        let inner =
            ReferenceInner::build(vec![(b"zz".as_slice().into(), 1), (b"m".as_slice().into(), 2)]);
        assert_eq!(located(&inner, b"a"), (1, None));
        assert_eq!(located(&inner, b"m"), (2, Some(1)));
        inner.insert_separator(b"t", 3);
        assert_eq!(located(&inner, b"u"), (3, Some(2)));
        inner.remove_leaf(b"n", 2);
        assert_eq!(located(&inner, b"n"), (1, None));
        assert_eq!(located(&inner, b"u"), (3, Some(1)));
        assert_eq!(inner.leaf_count(), 2);
    }
}
