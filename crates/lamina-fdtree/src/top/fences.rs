//! `L_0`'s fences (section 2.1): the entries of the top level that point into the first
//! materialized disk level, kept in memory. During an FD+FC merge `L_0^new`'s fences are
//! the ones the merge has produced so far, and `L_0^old`'s are consumed from the left by
//! m-delete (section 4.4.2).

use std::collections::BTreeMap;

use crate::format::entry::{BlockPtr, fence_bytes};

/// An ordered set of fences.
#[derive(Debug, Clone, Default)]
pub struct Fences {
    map: BTreeMap<Box<[u8]>, BlockPtr>,
    /// Encoded bytes of all fences.
    bytes: u64,
}

impl Fences {
    /// No fences.
    pub fn new() -> Self {
        Fences::default()
    }

    /// Encoded bytes of all fences.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Encoded bytes of all fences but the `-infinity` one (which starts `L_0`, (I2), and
    /// is overhead like the leading fence of a block).
    pub fn sized_bytes(&self) -> u64 {
        let neg = if self.map.contains_key(&[][..]) { fence_bytes(0) as u64 } else { 0 };
        self.bytes - neg
    }

    /// Number of fences.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Adds a fence (replacing one with the same key).
    pub fn add(&mut self, key: &[u8], ptr: BlockPtr) {
        if self.map.insert(key.into(), ptr).is_none() {
            self.bytes += fence_bytes(key.len()) as u64;
        }
    }

    /// The fence with the largest key `<= key` (Algorithm 2, line 10).
    pub fn at_or_before(&self, key: &[u8]) -> Option<BlockPtr> {
        self.map
            .range::<[u8], _>((std::ops::Bound::Unbounded, std::ops::Bound::Included(key)))
            .next_back()
            .map(|(_, p)| *p)
    }

    /// Removes the `-infinity` fence and returns its pointer (FD+FC: it becomes the
    /// wavefront fence of `L_0^old`, section 4.4.2).
    pub fn take_neg_infinity(&mut self) -> Option<BlockPtr> {
        let ptr = self.map.remove(&[][..])?;
        self.bytes -= fence_bytes(0) as u64;
        Some(ptr)
    }

    /// Removes every fence with a key `<= key` (FD+FC's m-delete on `L_0^old`); returns the
    /// pointer of the last one removed.
    pub fn remove_through(&mut self, key: &[u8]) -> Option<BlockPtr> {
        let mut last = None;
        while let Some(entry) = self.map.first_entry() {
            if &**entry.key() > key {
                break;
            }
            let (k, ptr) = entry.remove_entry();
            self.bytes -= fence_bytes(k.len()) as u64;
            last = Some(ptr);
        }
        last
    }

    /// Fences in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], BlockPtr)> {
        self.map.iter().map(|(k, p)| (&**k, *p))
    }

    /// Memory held, approximately.
    pub fn memory_bytes(&self) -> u64 {
        self.bytes + 48 * self.map.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_route_and_are_consumed_from_the_left() {
        let p = |i| BlockPtr { file: 1, index: i };
        let mut f = Fences::new();
        f.add(b"", p(0));
        f.add(b"c", p(1));
        f.add(b"f", p(2));
        assert_eq!(f.at_or_before(b"a"), Some(p(0)));
        assert_eq!(f.at_or_before(b"d"), Some(p(1)));
        assert_eq!(f.sized_bytes(), f.bytes() - fence_bytes(0) as u64);
        assert_eq!(f.take_neg_infinity(), Some(p(0)));
        assert_eq!(f.remove_through(b"d"), Some(p(1)));
        assert_eq!(f.len(), 1);
        assert_eq!(f.bytes(), fence_bytes(1) as u64);
        assert_eq!(f.remove_through(b"a"), None);
    }
}
