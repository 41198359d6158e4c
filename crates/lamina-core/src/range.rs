//! Key ranges for ordered scans.

use std::ops::{Bound, RangeBounds};

/// A range of keys: each end inclusive, exclusive or unbounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    /// Lower end.
    pub start: Bound<Vec<u8>>,
    /// Upper end.
    pub end: Bound<Vec<u8>>,
}

impl KeyRange {
    /// Every key.
    pub fn all() -> Self {
        KeyRange { start: Bound::Unbounded, end: Bound::Unbounded }
    }

    /// A range from any `RangeBounds` over byte strings (`a..b`, `a..=b`, `..`, ...).
    pub fn new<K: AsRef<[u8]>>(range: impl RangeBounds<K>) -> Self {
        let own = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        KeyRange { start: own(range.start_bound()), end: own(range.end_bound()) }
    }

    /// Whether `key` is inside the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        let after_start = match &self.start {
            Bound::Included(s) => key >= s.as_slice(),
            Bound::Excluded(s) => key > s.as_slice(),
            Bound::Unbounded => true,
        };
        after_start && !self.is_past_end(key)
    }

    /// Whether `key` is beyond the upper end (a scan in key order can stop there).
    pub fn is_past_end(&self, key: &[u8]) -> bool {
        match &self.end {
            Bound::Included(e) => key > e.as_slice(),
            Bound::Excluded(e) => key >= e.as_slice(),
            Bound::Unbounded => false,
        }
    }

    /// Whether no key can be inside the range.
    pub fn is_empty(&self) -> bool {
        match (&self.start, &self.end) {
            (Bound::Included(s), Bound::Included(e)) => s > e,
            (Bound::Included(s) | Bound::Excluded(s), Bound::Excluded(e))
            | (Bound::Excluded(s), Bound::Included(e)) => s >= e,
            _ => false,
        }
    }

    /// The same range with the start moved just past `key` (used to page a scan).
    pub fn resume_after(&self, key: &[u8]) -> Self {
        KeyRange { start: Bound::Excluded(key.to_vec()), end: self.end.clone() }
    }

    /// Borrowed bounds, for `BTreeMap::range` and the like.
    pub fn as_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (borrow(&self.start), borrow(&self.end))
    }
}

fn borrow(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contains_respects_each_bound_kind() {
        let r = KeyRange::new(b"b".as_slice()..b"d".as_slice());
        assert!(!r.contains(b"a"));
        assert!(r.contains(b"b"));
        assert!(r.contains(b"c\xff"));
        assert!(!r.contains(b"d"));
        let r = KeyRange::new(b"b".as_slice()..=b"d".as_slice());
        assert!(r.contains(b"d"));
        assert!(!r.contains(b"d\x00"));
        assert!(KeyRange::all().contains(b"\x00"));
    }

    #[test]
    fn empty_ranges() {
        assert!(KeyRange::new(b"b".as_slice()..b"b".as_slice()).is_empty());
        assert!(!KeyRange::new(b"b".as_slice()..=b"b".as_slice()).is_empty());
        assert!(KeyRange::new(b"c".as_slice()..=b"b".as_slice()).is_empty());
        assert!(!KeyRange::all().is_empty());
    }
}
