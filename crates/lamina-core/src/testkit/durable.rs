//! Close/reopen and crash recovery, for subjects that support them.

use std::collections::BTreeMap;

use super::subject::{Subject, dump, key};
use crate::{OrderedIndex, WriteBatch};

/// Everything written before `close` is there after reopening.
pub fn reopen_keeps_everything<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    if !subject.durable() {
        return;
    }
    let db = subject.open().unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..2000u64 {
        let (k, v) = (key("r", i), super::value(i, (i % 300) as usize));
        db.put(&k, &v).unwrap();
        oracle.insert(k, v);
    }
    for i in (0..2000u64).step_by(7) {
        db.delete(&key("r", i)).unwrap();
        oracle.remove(&key("r", i));
    }
    let mut batch = WriteBatch::new();
    batch.put(b"batched".to_vec(), b"yes".to_vec()).delete(key("r", 1));
    db.write_batch(&batch).unwrap();
    oracle.insert(b"batched".to_vec(), b"yes".to_vec());
    oracle.remove(&key("r", 1));
    let db = subject.close_and_reopen(db).unwrap();
    assert_eq!(dump(&db), oracle);
    // And it keeps working after the reopen.
    db.put(b"after", b"reopen").unwrap();
    oracle.insert(b"after".to_vec(), b"reopen".to_vec());
    let db = subject.close_and_reopen(db).unwrap();
    assert_eq!(dump(&db), oracle);
    db.close().unwrap();
}

/// Many overwrites of few keys survive several reopen cycles with the last value.
pub fn reopen_after_many_overwrites<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    if !subject.durable() {
        return;
    }
    let mut db = subject.open().unwrap();
    let mut oracle = BTreeMap::new();
    for cycle in 0..4u64 {
        for i in 0..3000u64 {
            let (k, v) = (key("w", i % 50), super::value(cycle * 10_000 + i, 64));
            db.put(&k, &v).unwrap();
            oracle.insert(k, v);
        }
        db = subject.close_and_reopen(db).unwrap();
        assert_eq!(dump(&db), oracle, "cycle {cycle}");
    }
    db.close().unwrap();
}

/// After a simulated crash, every write acknowledged (under `Sync`) is present.
pub fn crash_keeps_acknowledged_writes<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    if !subject.can_crash() {
        return;
    }
    let db = subject.open().unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..500u64 {
        let (k, v) = (key("c", i % 200), super::value(i, 40));
        db.put(&k, &v).unwrap();
        oracle.insert(k, v);
        if i % 9 == 0 {
            db.delete(&key("c", (i * 13) % 200)).unwrap();
            oracle.remove(&key("c", (i * 13) % 200));
        }
    }
    subject.crash(db);
    let db = subject.open().unwrap();
    assert_eq!(dump(&db), oracle);
    db.close().unwrap();
}
