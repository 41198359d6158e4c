//! Basic operations and edge-case keys and values.

use super::subject::{Subject, dump};
use crate::OrderedIndex;
use crate::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

/// put/get/overwrite/delete of a few keys, and delete of a missing key.
pub fn basic_put_get_overwrite_delete<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    assert_eq!(db.get(b"a").unwrap(), None);
    db.put(b"a", b"1").unwrap();
    db.put(b"b", b"2").unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    db.put(b"a", b"one").unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"one"[..]));
    assert!(db.delete(b"a").unwrap());
    assert!(!db.delete(b"a").unwrap(), "second delete must report the key missing");
    assert!(!db.delete(b"never").unwrap());
    assert_eq!(db.get(b"a").unwrap(), None);
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    db.put(b"a", b"again").unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"again"[..]));
    db.close().unwrap();
}

/// 1-byte and 1024-byte keys, empty and 4096-byte values, binary keys with 0x00 and 0xFF.
pub fn edge_case_keys_and_values<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    let long_key = vec![0xabu8; KEY_BYTES_MAX];
    let big_value = super::value(7, VALUE_BYTES_MAX);
    let cases: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (vec![0x00], b"zero".to_vec()),
        (vec![0xff], b"ff".to_vec()),
        (vec![0x00, 0x00], Vec::new()),
        (vec![0xff; 3], vec![0x00; 3]),
        (b"k\x00k".to_vec(), b"embedded nul".to_vec()),
        (long_key.clone(), big_value.clone()),
        (b"empty".to_vec(), Vec::new()),
    ];
    for (k, v) in &cases {
        db.put(k, v).unwrap();
    }
    for (k, v) in &cases {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {k:?}");
    }
    let all = dump(&db);
    let mut sorted = cases.clone();
    sorted.sort();
    assert_eq!(all.into_iter().collect::<Vec<_>>(), sorted, "scan order is byte order");
    // A long key and its one-byte-shorter prefix are different keys.
    assert_eq!(db.get(&long_key[..KEY_BYTES_MAX - 1]).unwrap(), None);
    db.close().unwrap();
}

/// Keys that are prefixes of each other are distinct and ordered shortest first.
pub fn prefix_keys_are_distinct<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    let keys: Vec<&[u8]> = vec![b"a", b"ab", b"abc", b"abcd", b"abd", b"b", b"a\x00"];
    for (i, k) in keys.iter().enumerate() {
        db.put(k, &[i as u8]).unwrap();
    }
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(db.get(k).unwrap(), Some(vec![i as u8]), "key {k:?}");
    }
    assert!(db.delete(b"ab").unwrap());
    assert_eq!(db.get(b"ab").unwrap(), None);
    assert_eq!(db.get(b"abc").unwrap(), Some(vec![2]));
    assert_eq!(db.get(b"a").unwrap(), Some(vec![0]));
    let listed: Vec<Vec<u8>> = dump(&db).into_keys().collect();
    let expect: Vec<Vec<u8>> =
        [&b"a"[..], b"a\x00", b"abc", b"abcd", b"abd", b"b"].iter().map(|k| k.to_vec()).collect();
    assert_eq!(listed, expect);
    db.close().unwrap();
}

/// After `close`, every call is refused with `Closed`; `close` is idempotent.
pub fn closed_handle_refuses_calls<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    db.close().unwrap();
    let closed = |r: crate::Error| assert!(matches!(r, crate::Error::Closed), "{r:?}");
    closed(db.get(b"k").unwrap_err());
    closed(db.put(b"k", b"w").unwrap_err());
    closed(db.delete(b"k").unwrap_err());
    closed(db.compare_and_swap(b"k", None, Some(b"x")).unwrap_err());
    closed(db.scan(&crate::KeyRange::all(), 10).unwrap_err());
    closed(db.scan_rev(&crate::KeyRange::all(), 10).unwrap_err());
    closed(db.write_batch(&crate::WriteBatch::new()).unwrap_err());
    closed(db.sync().unwrap_err());
}

/// `stats` names the engine and counts user bytes.
pub fn stats_name_the_engine<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    db.put(b"key", b"value").unwrap();
    let stats = db.stats();
    assert!(!stats.engine.is_empty());
    assert!(stats.user_bytes_written >= 8, "{stats:?}");
    db.close().unwrap();
}
