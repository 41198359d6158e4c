//! Refused input: every entry point, every limit, and the store unchanged afterwards.

use super::subject::{Subject, dump, fill_oracle, key};
use crate::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use crate::{Error, KeyRange, OrderedIndex, WriteBatch};

fn refused<T: std::fmt::Debug>(result: crate::Result<T>, what: &str) {
    match result {
        Err(Error::InvalidArgument(_)) => {}
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

/// Oversized keys and values are refused by every call, and change nothing.
pub fn refused_input_changes_nothing<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    let oracle: std::collections::BTreeMap<_, _> =
        (0..20).map(|i| (key("k", i), super::value(i, 10))).collect();
    fill_oracle(&db, &oracle);

    let long_key = vec![1u8; KEY_BYTES_MAX + 1];
    let big_value = vec![2u8; VALUE_BYTES_MAX + 1];
    let existing = key("k", 3);

    refused(db.put(&long_key, b"v"), "put long key");
    refused(db.put(&existing, &big_value), "put big value over an existing key");
    refused(db.get(&long_key), "get long key");
    refused(db.delete(&long_key), "delete long key");
    refused(db.compare_and_swap(&long_key, None, Some(b"v")), "cas long key");
    refused(db.compare_and_swap(&existing, None, Some(&big_value)), "cas big new value");
    refused(db.compare_and_swap(&existing, Some(&big_value), Some(b"v")), "cas big expected value");
    let mut batch = WriteBatch::new();
    batch.put(key("new", 1), b"v".to_vec()).delete(existing.clone()).put(long_key.clone(), b"v");
    refused(db.write_batch(&batch), "batch with a long key");
    let mut batch = WriteBatch::new();
    batch.delete(existing.clone()).put(key("new", 2), big_value.clone());
    refused(db.write_batch(&batch), "batch with a big value");

    assert_eq!(dump(&db), oracle, "refused calls must leave the store unchanged");
    db.close().unwrap();
}

/// A scan with limit 0 returns nothing; one over the maximum is refused.
pub fn scan_limit_zero_and_over_max<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    db.put(b"a", b"1").unwrap();
    assert!(db.scan(&KeyRange::all(), 0).unwrap().is_empty());
    refused(db.scan(&KeyRange::all(), crate::limits::SCAN_LIMIT_MAX + 1), "scan over max");
    db.close().unwrap();
}
