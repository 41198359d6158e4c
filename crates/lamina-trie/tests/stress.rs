//! Trie-specific stress: writers race on keys that share long prefixes, so that dynamic
//! expansions (pushing a content node down into a new chain of inner nodes) happen while
//! other writers lock the same nodes, CAS the keys being moved, and readers scan and get.
//! Each round starts from a young tree, where expansions are most frequent.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use lamina_core::testkit::dump;
use lamina_core::{CasOutcome, KeyRange, OrderedIndex};
use lamina_trie::{TrieEngine, TrieOptions};

const WRITERS: u8 = 3;
const ROUNDS: u64 = 12;
const OPS_PER_WRITER: u64 = 1500;
const SHARED_PREFIX: [u8; 5] = [0xaa; 5];
const COUNTERS: u64 = 2;

/// A key owned by writer `owner`: a long shared prefix, a small index, then the owner, so
/// keys of different writers diverge only in their last byte. Writer 0 also owns the keys
/// that stop before the owner byte (prefixes of the others).
fn owned_key(owner: u8, index: u8) -> Vec<u8> {
    let mut key = SHARED_PREFIX.to_vec();
    key.push(index);
    if owner != 0 || index.is_multiple_of(2) {
        key.push(owner);
    }
    key
}

fn counter_key(i: u64) -> Vec<u8> {
    let mut key = SHARED_PREFIX.to_vec();
    key.extend_from_slice(b"counter");
    key.push(i as u8);
    key
}

fn stable_key(i: u8) -> Vec<u8> {
    let mut key = SHARED_PREFIX.to_vec();
    key.push(i);
    key.extend_from_slice(b"stable");
    key
}

/// One writer: puts, deletes and CASes its own keys (CAS must always match its oracle), and
/// CAS-increments the shared counters.
fn writer(db: &TrieEngine, owner: u8, round: u64) -> (BTreeMap<Vec<u8>, Vec<u8>>, u64) {
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut increments = 0;
    let mut x = round * 7919 + u64::from(owner) + 1;
    for i in 0..OPS_PER_WRITER {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = owned_key(owner, (x % 24) as u8);
        let value = format!("{owner}:{i}").into_bytes();
        match x % 10 {
            0..=2 => {
                db.put(&key, &value).unwrap();
                oracle.insert(key.clone(), value);
            }
            3..=4 => {
                let existed = db.delete(&key).unwrap();
                assert_eq!(existed, oracle.remove(&key).is_some(), "delete of {key:?}");
            }
            5 => {
                let expected = oracle.get(&key).cloned();
                let new = (!x.is_multiple_of(3)).then_some(value);
                let outcome = db.compare_and_swap(&key, expected.as_deref(), new.as_deref());
                assert_eq!(outcome.unwrap(), CasOutcome::Swapped, "CAS of {key:?} by its owner");
                match new {
                    Some(v) => oracle.insert(key.clone(), v),
                    None => oracle.remove(&key),
                };
            }
            _ => {
                let counter = counter_key(x % COUNTERS);
                loop {
                    let current = db.get(&counter).unwrap();
                    let n = current
                        .as_ref()
                        .map_or(0, |v| u64::from_be_bytes(v[..].try_into().unwrap()));
                    let next = (n + 1).to_be_bytes();
                    match db.compare_and_swap(&counter, current.as_deref(), Some(&next)).unwrap() {
                        CasOutcome::Swapped => break,
                        CasOutcome::Mismatch { .. } => std::hint::spin_loop(),
                    }
                }
                increments += 1;
            }
        }
        if i % 16 == 0 {
            assert_eq!(db.get(&key).unwrap().as_ref(), oracle.get(&key), "own write of {key:?}");
        }
    }
    (oracle, increments)
}

/// A reader: scans must be ascending and contain every stable key with its value.
fn reader(db: &TrieEngine, done: &AtomicBool, stable: &BTreeMap<Vec<u8>, Vec<u8>>) {
    while !done.load(Ordering::Acquire) {
        let all = db.scan(&KeyRange::all(), 10_000).unwrap();
        assert!(all.windows(2).all(|w| w[0].0 < w[1].0), "scan out of order");
        let found = all.iter().filter(|(k, v)| stable.get(k) == Some(v)).count();
        assert_eq!(found, stable.len(), "a stable key was missed by a scan");
        let from = KeyRange::new(owned_key(1, 7)..);
        let page = db.scan(&from, 5).unwrap();
        assert!(page.iter().all(|(k, _)| from.contains(k)), "scan left its range");
        for (k, v) in stable {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
    }
}

fn run(prefix_bits: u32) {
    for round in 0..ROUNDS {
        let db = TrieEngine::volatile(TrieOptions::default().prefix_bits(prefix_bits)).unwrap();
        let stable: BTreeMap<Vec<u8>, Vec<u8>> =
            (0..8u8).map(|i| (stable_key(i * 3), vec![i; 3])).collect();
        for (k, v) in &stable {
            db.put(k, v).unwrap();
        }
        let done = AtomicBool::new(false);
        let results = std::thread::scope(|s| {
            let r = s.spawn(|| reader(&db, &done, &stable));
            let writers: Vec<_> = (0..WRITERS)
                .map(|w| {
                    s.spawn({
                        let db = &db;
                        move || writer(db, w, round)
                    })
                })
                .collect();
            let results: Vec<_> = writers.into_iter().map(|h| h.join().unwrap()).collect();
            done.store(true, Ordering::Release);
            r.join().unwrap();
            results
        });
        let mut expect = stable.clone();
        let mut increments = 0;
        for (oracle, n) in results {
            expect.extend(oracle);
            increments += n;
        }
        let content = dump(&db);
        let counted: u64 = (0..COUNTERS)
            .filter_map(|i| content.get(&counter_key(i)))
            .map(|v| u64::from_be_bytes(v[..].try_into().unwrap()))
            .sum();
        assert_eq!(counted, increments, "lost or duplicated CAS increments in round {round}");
        let keys_total = content.len() as u64;
        let without_counters: BTreeMap<_, _> = content
            .into_iter()
            .filter(|(k, _)| !(0..COUNTERS).any(|i| *k == counter_key(i)))
            .collect();
        assert_eq!(without_counters, expect, "round {round}");
        assert_eq!(db.stats().keys, Some(keys_total), "key count of round {round}");
    }
}

#[test]
fn expansion_races_binary_tree() {
    run(1);
}

#[test]
fn expansion_races_paper_prefix_length() {
    run(4);
}
