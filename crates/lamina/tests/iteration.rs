//! `Db::range`, `Db::prefix` and their `.rev()`: std iterators over every kind of range,
//! several pages long, from both ends at once, on an engine with a native reverse scan
//! (`mem`) and on engines with the default one.

use std::collections::BTreeMap;

use lamina::{Db, Durability, EngineKind, KeyRange, Options, Result};

fn open(kind: EngineKind) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let options = Options { engine: kind, durability: Durability::None, ..Options::default() };
    let db = Db::open(dir.path(), options).unwrap();
    (dir, db)
}

const KINDS: [EngineKind; 3] = [EngineKind::Mem, EngineKind::Trie, EngineKind::Nbtree];

/// 1000 keys `k0000`..`k0999` (four pages of the iterator) and a few around them.
fn fill(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut oracle = BTreeMap::new();
    for i in 0..1000u32 {
        let key = format!("k{i:04}");
        db.put(&key, i.to_be_bytes()).unwrap();
        oracle.insert(key.into_bytes(), i.to_be_bytes().to_vec());
    }
    for key in ["a", "j\u{7f}", "l", "k"] {
        db.put(key, key).unwrap();
        oracle.insert(key.as_bytes().to_vec(), key.as_bytes().to_vec());
    }
    oracle
}

fn keys(iter: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>) -> Vec<Vec<u8>> {
    iter.map(|entry| entry.unwrap().0).collect()
}

#[test]
fn every_range_form_forward_and_reverse() {
    for kind in KINDS {
        let (_dir, db) = open(kind);
        let oracle = fill(&db);
        let want = |range: &KeyRange| -> Vec<Vec<u8>> {
            oracle.keys().filter(|k| range.contains(k)).cloned().collect()
        };
        let check = |got: ScanPair, range: KeyRange| {
            let mut expected = want(&range);
            assert_eq!(got.0, expected, "{kind} {range:?}");
            expected.reverse();
            assert_eq!(got.1, expected, "{kind} {range:?} reversed");
        };
        check(both(&db, ..), KeyRange::all());
        check(both(&db, "k0100".."k0700"), KeyRange::new("k0100".."k0700"));
        check(both(&db, b"k0100"..=b"k0700"), KeyRange::new(b"k0100"..=b"k0700"));
        check(both(&db, "k0999"..), KeyRange::new("k0999"..));
        check(both(&db, ..b"k0300".to_vec()), KeyRange::new(..b"k0300".to_vec()));
        check(both(&db, ..="k"), KeyRange::new(..="k"));
        check(both(&db, "z"..), KeyRange::new("z"..));
        check(both(&db, KeyRange::prefix("k05")), KeyRange::prefix("k05"));
        let prefix: (Vec<_>, Vec<_>) = (keys(db.prefix("k0")), keys(db.prefix(b"k0").rev()));
        check(prefix, KeyRange::prefix("k0"));
        assert_eq!(keys(db.prefix("k")).len(), 1001, "{kind}: `k` and k0000..k0999");
        assert!(keys(db.prefix("m")).is_empty());
    }
}

type ScanPair = (Vec<Vec<u8>>, Vec<Vec<u8>>);

fn both(db: &Db, range: impl lamina::IntoKeyRange + Clone) -> ScanPair {
    (keys(db.range(range.clone())), keys(db.range(range).rev()))
}

#[test]
fn both_ends_meet_without_repeating_a_key() {
    for kind in KINDS {
        let (_dir, db) = open(kind);
        let oracle = fill(&db);
        let all: Vec<_> = oracle.keys().cloned().collect();
        // Alternate ends with different strides, so the meeting point falls inside a page of
        // either side.
        for (front_step, back_step) in [(1, 1), (3, 1), (1, 5), (300, 1)] {
            let mut iter = db.range(..);
            let (mut front, mut back) = (Vec::new(), Vec::new());
            'outer: loop {
                for _ in 0..front_step {
                    match iter.next() {
                        Some(entry) => front.push(entry.unwrap().0),
                        None => break 'outer,
                    }
                }
                for _ in 0..back_step {
                    match iter.next_back() {
                        Some(entry) => back.push(entry.unwrap().0),
                        None => break 'outer,
                    }
                }
            }
            assert!(iter.next().is_none() && iter.next_back().is_none(), "{kind}: fused");
            back.reverse();
            front.extend(back);
            assert_eq!(front, all, "{kind}: steps {front_step}/{back_step}");
        }
    }
}

#[test]
fn iteration_sees_writes_behind_its_position_only_in_later_pages() {
    let (_dir, db) = open(EngineKind::Mem);
    fill(&db);
    let mut iter = db.range("k".."l").rev();
    let first = iter.next().unwrap().unwrap().0;
    assert_eq!(first, b"k0999");
    // A key deleted ahead of the iterator, beyond the current page, is not returned.
    db.delete("k0001").unwrap();
    let rest = keys(iter);
    assert_eq!(rest.len(), 999, "k0998..k0000 less k0001, plus `k`");
    assert!(!rest.contains(&b"k0001".to_vec()));
}

#[test]
fn errors_end_the_iterator() {
    let (_dir, db) = open(EngineKind::Mem);
    fill(&db);
    db.close().unwrap();
    let mut iter = db.range(..);
    assert!(matches!(iter.next(), Some(Err(lamina::Error::Closed))));
    assert!(iter.next().is_none());
    let mut iter = db.prefix("k").rev();
    assert!(matches!(iter.next(), Some(Err(lamina::Error::Closed))));
    assert!(iter.next().is_none());
}

#[test]
fn arguments_take_anything_byte_like() {
    let (_dir, db) = open(EngineKind::Mem);
    db.put("text", String::from("value")).unwrap();
    db.put(b"bytes", vec![1u8, 2]).unwrap();
    db.put(vec![3u8], [4u8; 2]).unwrap();
    assert_eq!(db.get("text").unwrap().unwrap(), b"value");
    assert_eq!(db.get(String::from("bytes")).unwrap().unwrap(), [1, 2]);
    assert_eq!(db.get([3u8]).unwrap().unwrap(), [4, 4]);
    assert!(db.compare_and_swap("text", Some(b"value"), None).unwrap().is_swapped());
    assert!(!db.delete(String::from("text")).unwrap());
    let mut batch = lamina::WriteBatch::new();
    batch.put("b1", "v").put(b"b2", b"v").delete(String::from("bytes"));
    db.write_batch(&batch).unwrap();
    assert_eq!(keys(db.range("b".."c")), [b"b1".to_vec(), b"b2".to_vec()]);
}
