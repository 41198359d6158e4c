//! Atomic write batches.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::subject::{Subject, dump, key};
use crate::{OrderedIndex, WriteBatch};

/// Operations apply in order; the last write to a key wins.
pub fn batch_applies_in_order<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    db.put(b"gone", b"x").unwrap();
    let mut batch = WriteBatch::new();
    batch
        .put(b"a".to_vec(), b"1".to_vec())
        .put(b"b".to_vec(), b"2".to_vec())
        .delete(b"a".to_vec())
        .put(b"b".to_vec(), b"3".to_vec())
        .delete(b"gone".to_vec())
        .delete(b"never".to_vec())
        .put(b"c".to_vec(), Vec::new());
    db.write_batch(&batch).unwrap();
    let expect: BTreeMap<Vec<u8>, Vec<u8>> =
        [(b"b".to_vec(), b"3".to_vec()), (b"c".to_vec(), Vec::new())].into_iter().collect();
    assert_eq!(dump(&db), expect);
    db.write_batch(&WriteBatch::new()).unwrap();
    assert_eq!(dump(&db), expect, "an empty batch changes nothing");
    db.close().unwrap();
}

/// A batch with one bad operation at the end applies none of its operations.
pub fn batch_is_all_or_nothing_on_bad_input<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    db.put(b"keep", b"v").unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..50 {
        batch.put(key("b", i), b"v".to_vec());
    }
    let long_key = vec![b'k'; crate::limits::KEY_BYTES_MAX + 1];
    batch.delete(b"keep".to_vec()).put(Vec::new(), b"fine".to_vec()).put(long_key, b"bad".to_vec());
    assert!(db.write_batch(&batch).unwrap_err().is_invalid_argument());
    let expect: BTreeMap<Vec<u8>, Vec<u8>> = [(b"keep".to_vec(), b"v".to_vec())].into();
    assert_eq!(dump(&db), expect, "a refused batch must leave the store unchanged");
    db.close().unwrap();
}

/// A reader never sees half a batch: batches write `x = y = generation`; a reader that
/// reads `y` and then `x` must see `x >= y` (linearizable gets, atomic batches, growing
/// generations).
pub fn batch_is_atomic_to_readers<S: Subject>(make: &impl Fn() -> S) {
    const GENERATIONS: u64 = 400;
    let mut subject = make();
    let db = Arc::new(subject.open().unwrap());
    let write = |g: u64| {
        let mut batch = WriteBatch::new();
        // y first: an engine that applied the operations one by one would expose y = g
        // while x = g - 1, which the reader below catches.
        batch
            .put(b"y".to_vec(), g.to_be_bytes().to_vec())
            .put(b"x".to_vec(), g.to_be_bytes().to_vec());
        batch
    };
    db.write_batch(&write(0)).unwrap();
    let done = AtomicBool::new(false);
    let violation = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                let y = u64::from_be_bytes(db.get(b"y").unwrap().unwrap().try_into().unwrap());
                let x = u64::from_be_bytes(db.get(b"x").unwrap().unwrap().try_into().unwrap());
                if x < y {
                    return Some(format!("saw half a batch: y = {y} then x = {x}"));
                }
            }
            None
        });
        for g in 1..=GENERATIONS {
            db.write_batch(&write(g)).unwrap();
        }
        done.store(true, Ordering::Release);
        reader.join().unwrap()
    });
    if let Some(violation) = violation {
        panic!("{violation}");
    }
    db.close().unwrap();
}

/// A batch far larger than any write buffer (about 3 MiB: 700 values of 4 KiB, with
/// overwrites and deletes inside it) is accepted, applies in order, and survives a reopen
/// and, where the subject can crash, a crash. The API promises batches up to
/// [`crate::limits::BATCH_BYTES_MAX`]; durable lamina engines used to refuse any batch over
/// their 1 MiB log buffer.
pub fn large_batch_survives_reopen_and_crash<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    db.put(b"before", b"1").unwrap();
    let mut oracle = BTreeMap::from([(b"before".to_vec(), b"1".to_vec())]);
    let mut batch = WriteBatch::new();
    for i in 0..700u64 {
        let value = super::value(i, crate::limits::VALUE_BYTES_MAX);
        batch.put(key("large", i % 600), value.clone());
        oracle.insert(key("large", i % 600), value);
        if i % 50 == 0 {
            batch.delete(key("large", i / 2));
            oracle.remove(&key("large", i / 2));
        }
    }
    batch.delete(b"before".to_vec());
    oracle.remove(b"before".as_slice());
    assert!(batch.payload_bytes() > 2 << 20, "larger than a 1 MiB log buffer, twice");
    db.write_batch(&batch).unwrap();
    db.put(b"after", b"2").unwrap();
    oracle.insert(b"after".to_vec(), b"2".to_vec());
    assert_eq!(dump(&db), oracle);
    if !subject.durable() {
        db.close().unwrap();
        return;
    }
    let db = subject.close_and_reopen(db).unwrap();
    assert_eq!(dump(&db), oracle, "after a reopen");
    if subject.can_crash() {
        subject.crash(db);
        let db = subject.open().unwrap();
        assert_eq!(dump(&db), oracle, "after a crash");
        db.close().unwrap();
    } else {
        db.close().unwrap();
    }
}
