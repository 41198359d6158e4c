//! Compare-and-swap semantics, and the SIGMOD 2011 contest's concurrent increment test.

use std::sync::Arc;

use super::subject::Subject;
use crate::{CasOutcome, OrderedIndex};

/// CAS on absent and present keys, insert-if-absent, delete-if-equal, and mismatches that
/// return the current value and change nothing.
pub fn cas_semantics<S: Subject>(make: &impl Fn() -> S) {
    let mut subject = make();
    let db = subject.open().unwrap();
    let mismatch =
        |current: Option<&[u8]>| CasOutcome::Mismatch { current: current.map(<[u8]>::to_vec) };

    // Absent key: expecting a value fails and reports absence.
    assert_eq!(db.compare_and_swap(b"k", Some(b"x"), Some(b"y")).unwrap(), mismatch(None));
    assert_eq!(db.get(b"k").unwrap(), None);
    // Absent key: expecting absence inserts.
    assert_eq!(db.compare_and_swap(b"k", None, Some(b"v1")).unwrap(), CasOutcome::Swapped);
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v1"[..]));
    // Present key: expecting absence fails and reports the value.
    assert_eq!(db.compare_and_swap(b"k", None, Some(b"v2")).unwrap(), mismatch(Some(b"v1")));
    // Present key: wrong expectation fails.
    assert_eq!(db.compare_and_swap(b"k", Some(b"v0"), Some(b"v2")).unwrap(), mismatch(Some(b"v1")));
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v1"[..]));
    // Present key: right expectation swaps.
    assert_eq!(db.compare_and_swap(b"k", Some(b"v1"), Some(b"v2")).unwrap(), CasOutcome::Swapped);
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v2"[..]));
    // The empty value is a value, distinct from absence.
    assert_eq!(db.compare_and_swap(b"k", Some(b"v2"), Some(b"")).unwrap(), CasOutcome::Swapped);
    assert_eq!(db.compare_and_swap(b"k", None, Some(b"z")).unwrap(), mismatch(Some(b"")));
    // new = None deletes.
    assert_eq!(db.compare_and_swap(b"k", Some(b""), None).unwrap(), CasOutcome::Swapped);
    assert_eq!(db.get(b"k").unwrap(), None);
    // Absent, expecting absent, new = None: succeeds and leaves it absent.
    assert_eq!(db.compare_and_swap(b"k", None, None).unwrap(), CasOutcome::Swapped);
    assert_eq!(db.get(b"k").unwrap(), None);
    db.close().unwrap();
}

/// Threads count in key: each thread increments a shared counter with CAS retries; the
/// final value equals the total (the contest's own CAS test).
pub fn cas_concurrent_increment<S: Subject>(make: &impl Fn() -> S) {
    const THREADS: u64 = 4;
    const INCREMENTS: u64 = 300;
    let mut subject = make();
    let db = Arc::new(subject.open().unwrap());
    let counter = b"counter".as_slice();
    db.put(counter, &0u64.to_be_bytes()).unwrap();
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            let db = Arc::clone(&db);
            s.spawn(move || {
                for _ in 0..INCREMENTS {
                    let mut current = db.get(counter).unwrap().unwrap();
                    loop {
                        let n = u64::from_be_bytes(current.as_slice().try_into().unwrap());
                        match db
                            .compare_and_swap(counter, Some(&current), Some(&(n + 1).to_be_bytes()))
                            .unwrap()
                        {
                            CasOutcome::Swapped => break,
                            CasOutcome::Mismatch { current: now } => current = now.unwrap(),
                        }
                    }
                }
            });
        }
    });
    let total = u64::from_be_bytes(db.get(counter).unwrap().unwrap().try_into().unwrap());
    assert_eq!(total, THREADS * INCREMENTS, "lost or duplicated CAS increments");
    db.close().unwrap();
}
