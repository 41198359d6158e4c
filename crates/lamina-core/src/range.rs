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

    /// A range from any `std` range over byte strings (`a..b`, `a..=b`, `..`, ...; see
    /// [`IntoKeyRange`]).
    pub fn new(range: impl IntoKeyRange) -> Self {
        range.into_key_range()
    }

    /// A range from any `RangeBounds` over byte strings.
    pub fn from_bounds<K: AsRef<[u8]> + ?Sized>(range: &impl RangeBounds<K>) -> Self {
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

    /// Every key that starts with `prefix` (every key for the empty prefix).
    pub fn prefix(prefix: impl AsRef<[u8]>) -> Self {
        let prefix = prefix.as_ref();
        let end = match prefix_successor(prefix) {
            Some(successor) => Bound::Excluded(successor),
            None => Bound::Unbounded,
        };
        KeyRange { start: Bound::Included(prefix.to_vec()), end }
    }

    /// The same range with the start moved just past `key` (used to page a scan).
    pub fn resume_after(&self, key: &[u8]) -> Self {
        KeyRange { start: Bound::Excluded(key.to_vec()), end: self.end.clone() }
    }

    /// The same range with the end moved just before `key` (used to page a reverse scan).
    pub fn resume_before(&self, key: &[u8]) -> Self {
        KeyRange { start: self.start.clone(), end: Bound::Excluded(key.to_vec()) }
    }

    /// Borrowed bounds, for `BTreeMap::range` and the like.
    pub fn as_bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (borrow(&self.start), borrow(&self.end))
    }
}

/// The least byte string greater than every string starting with `prefix`: `prefix` without
/// its trailing `0xFF` bytes, with its last byte incremented. `None` when there is none
/// (`prefix` is empty or all `0xFF`): every key from `prefix` on starts with it.
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut successor = prefix[..=last].to_vec();
    successor[last] += 1;
    Some(successor)
}

/// Conversion into a [`KeyRange`]: every `std` range of byte-string-like keys (`a..b`,
/// `a..=b`, `a..`, `..b`, `..=b`, `..`, and a `(Bound, Bound)` pair), and a `KeyRange`
/// itself. Keys are anything `AsRef<[u8]>`: `&[u8]`, `&[u8; N]`, `Vec<u8>`, `&str`,
/// `String`. (Both ends of a `std` range have one type, so `b"a"..b"cc"` mixes
/// `&[u8; 1]` and `&[u8; 2]`: write `&b"a"[..]..&b"cc"[..]` or `"a".."cc"`.)
///
/// A trait of its own rather than `RangeBounds<K>`, so that `..` needs no key type.
pub trait IntoKeyRange {
    /// The range as owned bounds.
    fn into_key_range(self) -> KeyRange;
}

impl IntoKeyRange for KeyRange {
    fn into_key_range(self) -> KeyRange {
        self
    }
}

impl IntoKeyRange for &KeyRange {
    fn into_key_range(self) -> KeyRange {
        self.clone()
    }
}

impl IntoKeyRange for std::ops::RangeFull {
    fn into_key_range(self) -> KeyRange {
        KeyRange::all()
    }
}

macro_rules! into_key_range_from_range_bounds {
    ($($range:ident),*) => {$(
        impl<K: AsRef<[u8]>> IntoKeyRange for std::ops::$range<K> {
            fn into_key_range(self) -> KeyRange {
                KeyRange::from_bounds::<K>(&self)
            }
        }
    )*};
}

into_key_range_from_range_bounds!(Range, RangeInclusive, RangeFrom, RangeTo, RangeToInclusive);

impl<K: AsRef<[u8]>> IntoKeyRange for (Bound<K>, Bound<K>) {
    fn into_key_range(self) -> KeyRange {
        KeyRange::from_bounds::<K>(&self)
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
    fn prefix_ranges_hold_exactly_the_keys_with_the_prefix() {
        let r = KeyRange::prefix(b"ab");
        assert_eq!(r.end, Bound::Excluded(b"ac".to_vec()));
        assert!(r.contains(b"ab") && r.contains(b"ab\xff\xff") && r.contains(b"ab\x00"));
        assert!(!r.contains(b"aa\xff") && !r.contains(b"ac") && !r.contains(b"a"));
        let r = KeyRange::prefix(b"a\xff\xff");
        assert_eq!(r.end, Bound::Excluded(b"b".to_vec()));
        assert!(r.contains(b"a\xff\xff\xff") && !r.contains(b"b") && !r.contains(b"a\xff\xfe"));
        assert_eq!(KeyRange::prefix(b"\xff\xff").end, Bound::Unbounded);
        assert_eq!(
            KeyRange::prefix(b""),
            KeyRange { start: Bound::Included(Vec::new()), ..KeyRange::all() }
        );
    }

    #[test]
    fn every_std_range_converts() {
        let r = (b"a"..b"c").into_key_range();
        assert_eq!(r, KeyRange::new(b"a".as_slice()..b"c".as_slice()));
        assert_eq!(("a"..="c").into_key_range().end, Bound::Included(b"c".to_vec()));
        assert_eq!((..).into_key_range(), KeyRange::all());
        assert_eq!((vec![1u8]..).into_key_range().start, Bound::Included(vec![1]));
        assert_eq!((..b"z").into_key_range().end, Bound::Excluded(b"z".to_vec()));
        assert_eq!((..=&b"z"[..]).into_key_range().end, Bound::Included(b"z".to_vec()));
        let pair = (Bound::Excluded("a"), Bound::Unbounded).into_key_range();
        assert_eq!(pair.start, Bound::Excluded(b"a".to_vec()));
        assert_eq!((&KeyRange::all()).into_key_range(), KeyRange::all());
    }

    #[test]
    fn empty_ranges() {
        assert!(KeyRange::new(b"b".as_slice()..b"b".as_slice()).is_empty());
        assert!(!KeyRange::new(b"b".as_slice()..=b"b".as_slice()).is_empty());
        assert!(KeyRange::new(b"c".as_slice()..=b"b".as_slice()).is_empty());
        assert!(!KeyRange::all().is_empty());
    }
}
