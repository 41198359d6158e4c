//! Several threads at once: disjoint and shared keys, and scans while writers run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::subject::{Subject, dump, key};
use crate::{KeyRange, OrderedIndex};

const THREADS: u64 = 4;

/// Each thread owns a key range and puts, overwrites and deletes in it; the final content
/// must equal the union of the per-thread oracles.
pub fn concurrent_disjoint_writers<S: Subject>(make: &impl Fn() -> S) {
    const OPS: u64 = 1500;
    let mut subject = make();
    let db = Arc::new(subject.open().unwrap());
    let oracles: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let db = Arc::clone(&db);
                s.spawn(move || {
                    let prefix = format!("t{t}-");
                    let mut oracle = BTreeMap::new();
                    for i in 0..OPS {
                        let k = key(&prefix, (i * 7919) % 400);
                        if i % 5 == 4 {
                            let existed = db.delete(&k).unwrap();
                            assert_eq!(existed, oracle.remove(&k).is_some());
                        } else {
                            let v = super::value(t * OPS + i, (i % 50) as usize);
                            db.put(&k, &v).unwrap();
                            oracle.insert(k.clone(), v);
                        }
                        if i % 10 == 0 {
                            assert_eq!(db.get(&k).unwrap().as_ref(), oracle.get(&k));
                        }
                    }
                    oracle
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let expect: BTreeMap<_, _> = oracles.into_iter().flatten().collect();
    assert_eq!(dump(db.as_ref()), expect);
    db.close().unwrap();
}

/// Threads overwrite the same keys; each key must end with the last value some thread wrote
/// to it (no torn or invented values), and every thread's own writes are visible to it.
pub fn concurrent_shared_key_writers<S: Subject>(make: &impl Fn() -> S) {
    const OPS: u64 = 1000;
    const KEYS: u64 = 16;
    let mut subject = make();
    let db = Arc::new(subject.open().unwrap());
    let last_writes: Vec<BTreeMap<u64, Vec<u8>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let db = Arc::clone(&db);
                s.spawn(move || {
                    let mut last = BTreeMap::new();
                    for i in 0..OPS {
                        let k = (i * 31 + t) % KEYS;
                        let v = format!("thread {t} op {i}").into_bytes();
                        db.put(&key("shared", k), &v).unwrap();
                        last.insert(k, v);
                        let seen = db.get(&key("shared", k)).unwrap().unwrap();
                        assert!(seen.starts_with(b"thread "), "invented value {seen:?}");
                    }
                    last
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for k in 0..KEYS {
        let finals: BTreeSet<&Vec<u8>> = last_writes.iter().filter_map(|m| m.get(&k)).collect();
        let got = db.get(&key("shared", k)).unwrap().expect("every key was written");
        assert!(finals.contains(&got), "key {k}: {got:?} is nobody's last write");
    }
    db.close().unwrap();
}

/// A scan running while writers churn other keys: keys come in strictly ascending order,
/// every stable key (present and unmodified throughout) is returned with its value, and
/// every churned pair returned is one that was written.
pub fn scan_during_writes_keeps_its_guarantee<S: Subject>(make: &impl Fn() -> S) {
    const STABLE: u64 = 300;
    let mut subject = make();
    let db = Arc::new(subject.open().unwrap());
    // Stable keys are even, churned keys odd, so they interleave in key order.
    for i in 0..STABLE {
        db.put(&key("k", i * 2), format!("stable {i}").as_bytes()).unwrap();
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (db, done) = (Arc::clone(&db), &done);
            s.spawn(move || {
                let mut i = t;
                while !done.load(Ordering::Acquire) {
                    let n = (i * 7) % STABLE;
                    let k = key("k", n * 2 + 1);
                    if i % 3 == 0 {
                        db.delete(&k).unwrap();
                    } else {
                        db.put(&k, format!("churn {n}").as_bytes()).unwrap();
                    }
                    i += 2;
                }
            });
        }
        for round in 0..30 {
            let page = if round % 2 == 0 { 10_000 } else { 37 };
            let mut range = KeyRange::all();
            let mut seen = Vec::new();
            loop {
                let entries = db.scan(&range, page).unwrap();
                let Some((last, _)) = entries.last() else { break };
                range = range.resume_after(&last.clone());
                seen.extend(entries);
            }
            assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "scan out of order");
            let mut stable_seen = 0;
            for (k, v) in &seen {
                let n = u64::from_be_bytes(k[1..].try_into().unwrap());
                if n % 2 == 0 {
                    assert_eq!(v, format!("stable {}", n / 2).as_bytes());
                    stable_seen += 1;
                } else {
                    assert_eq!(v, format!("churn {}", n / 2).as_bytes());
                }
            }
            assert_eq!(stable_seen, STABLE, "a stable key was missed by a concurrent scan");
        }
        done.store(true, Ordering::Release);
    });
    db.close().unwrap();
}
