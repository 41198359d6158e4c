//! The empty key: a key like any other (as in the SIGMOD 2011 contest API, RocksDB, LevelDB
//! and Berkeley DB), stored, overwritten, deleted, swapped and batched, and ordered before
//! every other key; as a scan bound it means "from the beginning" and still names a real key.

use std::collections::BTreeMap;
use std::ops::Bound;

use super::subject::{Subject, dump, key};
use crate::{CasOutcome, Error, InvalidArgument, KeyRange, OrderedIndex, WriteBatch};

/// Keys that sort right after the empty key, so an engine that confuses the empty key with
/// "-infinity", with a missing key or with one of them is caught.
fn neighbours() -> Vec<(Vec<u8>, Vec<u8>)> {
    vec![
        (vec![0x00], b"nul".to_vec()),
        (vec![0x00, 0x00], b"nul nul".to_vec()),
        (vec![0x01], b"one".to_vec()),
        (b"a".to_vec(), b"a".to_vec()),
        (vec![0xff], b"ff".to_vec()),
    ]
}

/// For a subject that cannot hold the empty key (some peers): every call with it is refused
/// with `KeyEmpty` and changes nothing. Returns whether the subject accepts the empty key.
fn accepts_or_refuses_cleanly(subject: &impl Subject, db: &dyn OrderedIndex) -> bool {
    if subject.accepts_empty_key() {
        return true;
    }
    let empty = |r: Error| {
        assert!(matches!(r, Error::InvalidArgument(InvalidArgument::KeyEmpty)), "{r:?}");
    };
    empty(db.put(b"", b"v").unwrap_err());
    empty(db.compare_and_swap(b"", None, Some(b"v")).unwrap_err());
    let mut batch = WriteBatch::new();
    batch.put(b"x".to_vec(), b"v".to_vec()).put(Vec::new(), b"v".to_vec());
    empty(db.write_batch(&batch).unwrap_err());
    assert!(dump(db).is_empty(), "a refused empty key changed the store");
    false
}

/// put/get/overwrite/delete of the empty key among its closest neighbours; it is listed first;
/// every kind of scan bound on it; CAS and batches on it.
#[allow(clippy::too_many_lines)] // one scenario, read top to bottom
pub fn empty_key_is_a_key<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    if !accepts_or_refuses_cleanly(&subject, &db) {
        db.close().unwrap();
        return;
    }
    assert_eq!(db.get(b"").unwrap(), None, "a fresh store has no empty key");
    assert!(!db.delete(b"").unwrap(), "deleting the absent empty key reports it missing");
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = neighbours().into_iter().collect();
    for (k, v) in &oracle {
        db.put(k, v).unwrap();
    }
    assert_eq!(db.get(b"").unwrap(), None, "neighbours are not the empty key");
    db.put(b"", b"first").unwrap();
    oracle.insert(Vec::new(), b"first".to_vec());
    assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(db.get(&[0x00]).unwrap().as_deref(), Some(&b"nul"[..]));
    db.put(b"", b"").unwrap();
    oracle.insert(Vec::new(), Vec::new());
    assert_eq!(db.get(b"").unwrap(), Some(Vec::new()), "empty key with the empty value");
    db.put(b"", b"again").unwrap();
    oracle.insert(Vec::new(), b"again".to_vec());
    assert_eq!(dump(&db), oracle, "the empty key is listed, first");

    // Scans: every bound kind on the empty key, and a 1-entry scan from the beginning.
    let all: Vec<_> = oracle.clone().into_iter().collect();
    let scan = |start: Bound<Vec<u8>>, end: Bound<Vec<u8>>, limit: usize| {
        db.scan(&KeyRange { start, end }, limit).unwrap()
    };
    let (inc, exc, unb) =
        (Bound::Included(Vec::new()), Bound::Excluded(Vec::new()), Bound::Unbounded);
    assert_eq!(scan(unb.clone(), unb.clone(), 1), all[..1], "scan(all, 1) is the empty key");
    assert_eq!(scan(inc.clone(), unb.clone(), 1000), all, "from the empty key inclusive");
    assert_eq!(scan(inc.clone(), unb.clone(), 1), all[..1]);
    assert_eq!(scan(exc.clone(), unb.clone(), 1000), all[1..], "after the empty key");
    assert_eq!(scan(exc.clone(), unb.clone(), 1), all[1..2]);
    assert_eq!(scan(unb.clone(), inc.clone(), 1000), all[..1], "up to the empty key inclusive");
    assert_eq!(scan(inc.clone(), inc.clone(), 1000), all[..1], "exactly the empty key");
    assert!(scan(unb.clone(), exc.clone(), 1000).is_empty(), "before the empty key: nothing");
    assert!(scan(inc.clone(), exc.clone(), 1000).is_empty());
    assert!(scan(exc.clone(), inc.clone(), 1000).is_empty());
    assert_eq!(scan(inc.clone(), Bound::Excluded(vec![0x00]), 1000), all[..1]);
    assert_eq!(scan(inc.clone(), Bound::Included(vec![0x00]), 1000), all[..2]);
    assert_eq!(scan(unb.clone(), Bound::Excluded(b"a".to_vec()), 1000), all[..4]);
    // Paging from the empty key resumes after it.
    let first = db.scan(&KeyRange::all(), 1).unwrap();
    assert_eq!(first, all[..1]);
    let rest = db.scan(&KeyRange::all().resume_after(&first[0].0), 1000).unwrap();
    assert_eq!(rest, all[1..]);

    // Delete, and the neighbours stay.
    assert!(db.delete(b"").unwrap());
    assert!(!db.delete(b"").unwrap());
    oracle.remove(&Vec::new());
    assert_eq!(db.get(b"").unwrap(), None);
    assert_eq!(dump(&db), oracle, "deleting the empty key keeps its neighbours");
    assert_eq!(scan(inc.clone(), unb.clone(), 1), [(vec![0x00], b"nul".to_vec())]);

    // Compare-and-swap: absent, insert-if-absent, mismatch, swap, delete-if-equal.
    let mismatch = |c: Option<&[u8]>| CasOutcome::Mismatch { current: c.map(<[u8]>::to_vec) };
    assert_eq!(db.compare_and_swap(b"", Some(b"x"), Some(b"y")).unwrap(), mismatch(None));
    assert_eq!(db.get(b"").unwrap(), None, "a failed CAS on the absent key inserts nothing");
    assert_eq!(db.compare_and_swap(b"", None, Some(b"c1")).unwrap(), CasOutcome::Swapped);
    assert_eq!(db.compare_and_swap(b"", None, Some(b"c2")).unwrap(), mismatch(Some(b"c1")));
    assert_eq!(db.compare_and_swap(b"", Some(b"c1"), Some(b"c2")).unwrap(), CasOutcome::Swapped);
    assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"c2"[..]));
    assert_eq!(db.compare_and_swap(b"", Some(b"c2"), None).unwrap(), CasOutcome::Swapped);
    assert_eq!(db.get(b"").unwrap(), None);

    // Batches: put, overwrite and delete the empty key in one atomic batch.
    let mut batch = WriteBatch::new();
    batch.put(Vec::new(), b"b1".to_vec()).put(b"z".to_vec(), b"z".to_vec());
    batch.put(Vec::new(), b"b2".to_vec());
    db.write_batch(&batch).unwrap();
    oracle.insert(Vec::new(), b"b2".to_vec());
    oracle.insert(b"z".to_vec(), b"z".to_vec());
    assert_eq!(dump(&db), oracle, "last write of the empty key in a batch wins");
    let mut batch = WriteBatch::new();
    batch.delete(Vec::new()).delete(vec![0x00]);
    db.write_batch(&batch).unwrap();
    oracle.remove(&Vec::new());
    oracle.remove(&vec![0x00]);
    assert_eq!(dump(&db), oracle);
    db.close().unwrap();
}

/// The empty key survives close/reopen and crashes, whether present, overwritten or deleted,
/// among many other keys (so it is flushed, merged or split away from the first position).
pub fn empty_key_survives_reopen_and_crash<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    if !subject.durable() && !subject.can_crash() {
        return;
    }
    let mut db = subject.open().unwrap();
    if !accepts_or_refuses_cleanly(&subject, &db) {
        db.close().unwrap();
        return;
    }
    let mut oracle = BTreeMap::new();
    let restart = |subject: &mut S, db: S::Index, round: u64| {
        if subject.can_crash() && round % 2 == 1 {
            subject.crash(db);
            subject.open().unwrap()
        } else {
            subject.close_and_reopen(db).unwrap()
        }
    };
    for round in 0..6u64 {
        // Enough keys around the empty one that engines flush, merge and split.
        for i in 0..1500u64 {
            let (k, v) =
                (key("e", (i * 7919 + round) % 3000), super::value(round * 10_000 + i, 48));
            db.put(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        match round % 3 {
            0 => {
                let v = format!("round {round}").into_bytes();
                db.put(b"", &v).unwrap();
                oracle.insert(Vec::new(), v);
            }
            1 => {
                let current = oracle.get(&Vec::new()).cloned();
                let outcome = db.compare_and_swap(b"", current.as_deref(), Some(b"cas")).unwrap();
                assert_eq!(outcome, CasOutcome::Swapped);
                oracle.insert(Vec::new(), b"cas".to_vec());
            }
            _ => {
                assert!(db.delete(b"").unwrap());
                oracle.remove(&Vec::new());
            }
        }
        db = restart(&mut subject, db, round);
        assert_eq!(db.get(b"").unwrap(), oracle.get(&Vec::new()).cloned(), "round {round}");
        assert_eq!(dump(&db), oracle, "round {round}");
    }
    db.close().unwrap();
}
