//! Ordered scans: bounds of every kind, limits, empty ranges, overwrites and deletes.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::subject::{Subject, fill_oracle, key};
use crate::{Entry, KeyRange, OrderedIndex};

fn expected(oracle: &BTreeMap<Vec<u8>, Vec<u8>>, range: &KeyRange, limit: usize) -> Vec<Entry> {
    oracle
        .iter()
        .filter(|(k, _)| range.contains(k))
        .take(limit)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn bounds_of(lo: &[u8], hi: &[u8]) -> Vec<KeyRange> {
    let mut out = Vec::new();
    let starts = [Bound::Included(lo.to_vec()), Bound::Excluded(lo.to_vec()), Bound::Unbounded];
    let ends = [Bound::Included(hi.to_vec()), Bound::Excluded(hi.to_vec()), Bound::Unbounded];
    for start in &starts {
        for end in &ends {
            out.push(KeyRange { start: start.clone(), end: end.clone() });
        }
    }
    out
}

/// Every combination of inclusive, exclusive and unbounded ends, with several limits, on
/// present and absent boundary keys, and empty ranges.
pub fn scan_bounds_and_limits<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    let oracle: BTreeMap<_, _> = (0..200).map(|i| (key("s", i * 2), super::value(i, 5))).collect();
    fill_oracle(&db, &oracle);
    let probes: [(u64, u64); 5] = [(10, 50), (11, 51), (0, 398), (100, 100), (150, 20)];
    for (lo, hi) in probes {
        for range in bounds_of(&key("s", lo), &key("s", hi)) {
            for limit in [1, 7, 1000] {
                assert_eq!(
                    db.scan(&range, limit).unwrap(),
                    expected(&oracle, &range, limit),
                    "range {range:?} limit {limit}"
                );
            }
        }
    }
    // Ranges outside the data, and ranges between two adjacent keys.
    for range in [
        KeyRange::new(b"a".as_slice()..b"b".as_slice()),
        KeyRange::new(b"t".as_slice()..),
        KeyRange::new(key("s", 3)..key("s", 4)),
    ] {
        assert!(db.scan(&range, 100).unwrap().is_empty(), "{range:?}");
    }
    db.close().unwrap();
}

/// Scans see the latest value of overwritten keys and skip deleted keys.
pub fn scan_across_overwrites_and_deletes<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..300u64 {
        let k = key("o", i % 100);
        let v = super::value(i, (i % 17) as usize);
        db.put(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    for i in (0..100u64).step_by(3) {
        assert!(db.delete(&key("o", i)).unwrap());
        oracle.remove(&key("o", i));
    }
    for limit in [1, 10, 1000] {
        let range = KeyRange::all();
        assert_eq!(db.scan(&range, limit).unwrap(), expected(&oracle, &range, limit));
    }
    let range = KeyRange::new(key("o", 30)..=key("o", 60));
    assert_eq!(db.scan(&range, 1000).unwrap(), expected(&oracle, &range, 1000));
    // Paging with resume_after visits every key once.
    let mut paged = Vec::new();
    let mut range = KeyRange::all();
    loop {
        let page = db.scan(&range, 7).unwrap();
        let Some((last, _)) = page.last() else { break };
        range = range.resume_after(&last.clone());
        paged.extend(page);
    }
    assert_eq!(paged, expected(&oracle, &KeyRange::all(), usize::MAX));
    db.close().unwrap();
}

fn expected_rev(oracle: &BTreeMap<Vec<u8>, Vec<u8>>, range: &KeyRange, limit: usize) -> Vec<Entry> {
    oracle
        .iter()
        .rev()
        .filter(|(k, _)| range.contains(k))
        .take(limit)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// `scan_rev`: every combination of bounds with several limits, greatest keys first; empty
/// ranges; paging backwards with `resume_before` visits every key once, in descending order.
pub fn scan_rev_bounds_and_limits<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    let mut oracle: BTreeMap<_, _> =
        (0..200).map(|i| (key("s", i * 2), super::value(i, 5))).collect();
    // Keys around the sub-range guesses of the default (prefixes of the end key) and
    // outside the probed prefix.
    for k in [&b"s"[..], b"r\xff\xff", b"\x00", b"\xff", b"\xff\xff\x01", b"s\x00"] {
        oracle.insert(k.to_vec(), k.to_vec());
    }
    fill_oracle(&db, &oracle);
    let probes: [(u64, u64); 5] = [(10, 50), (11, 51), (0, 398), (100, 100), (150, 20)];
    for (lo, hi) in probes {
        for range in bounds_of(&key("s", lo), &key("s", hi)) {
            for limit in [0, 1, 7, 1000] {
                assert_eq!(
                    db.scan_rev(&range, limit).unwrap(),
                    expected_rev(&oracle, &range, limit),
                    "range {range:?} limit {limit}"
                );
            }
        }
    }
    for range in [
        KeyRange::new(b"a".as_slice()..b"b".as_slice()),
        KeyRange::new(b"t".as_slice()..b"u".as_slice()),
        KeyRange::new(key("s", 3)..key("s", 4)),
        KeyRange::new(key("s", 4)..key("s", 4)),
    ] {
        assert!(db.scan_rev(&range, 100).unwrap().is_empty(), "{range:?}");
    }
    for range in [
        KeyRange::all(),
        KeyRange::new(b"s".as_slice()..),
        KeyRange::new(..b"s".as_slice()),
        KeyRange::new(b"\xff".as_slice()..),
    ] {
        for limit in [1, 3, 1000] {
            let got = db.scan_rev(&range, limit).unwrap();
            assert_eq!(got, expected_rev(&oracle, &range, limit), "{range:?} limit {limit}");
        }
    }
    let mut paged = Vec::new();
    let mut range = KeyRange::all();
    loop {
        let page = db.scan_rev(&range, 7).unwrap();
        let Some((last, _)) = page.last() else { break };
        range = range.resume_before(&last.clone());
        paged.extend(page);
    }
    assert_eq!(paged, expected_rev(&oracle, &KeyRange::all(), usize::MAX));
    let err = db.scan_rev(&KeyRange::all(), crate::limits::SCAN_LIMIT_MAX + 1).unwrap_err();
    assert!(err.is_invalid_argument(), "{err}");
    db.close().unwrap();
}

/// Prefix ranges, forward and reverse: exactly the keys that start with the prefix, including
/// prefixes ending in `0xFF` (whose range ends at the next shorter prefix) and the empty one.
pub fn prefix_scans_forward_and_reverse<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    let mut oracle = BTreeMap::new();
    for stem in
        [&b"a"[..], b"ab", b"abc", b"ab\xff", b"ab\xff\xff", b"ac", b"b", b"\xff", b"\xff\xff"]
    {
        for tail in [&b""[..], b"\x00", b"1", b"\xff"] {
            let mut k = stem.to_vec();
            k.extend_from_slice(tail);
            oracle.insert(k.clone(), k);
        }
    }
    fill_oracle(&db, &oracle);
    for prefix in
        [&b""[..], b"a", b"ab", b"ab\xff", b"ab\xff\xff", b"abd", b"\xff", b"\xff\xff", b"z"]
    {
        let range = KeyRange::prefix(prefix);
        let want: Vec<Entry> = oracle
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for limit in [1, 5, 1000] {
            let forward: Vec<_> = want.iter().take(limit).cloned().collect();
            assert_eq!(db.scan(&range, limit).unwrap(), forward, "prefix {prefix:?}");
            let reverse: Vec<_> = want.iter().rev().take(limit).cloned().collect();
            assert_eq!(db.scan_rev(&range, limit).unwrap(), reverse, "prefix {prefix:?}");
        }
    }
    db.close().unwrap();
}
