//! Concurrent writers on a durable trie whose tiny log ring is collected all the time:
//! puts, deletes, batches and CAS increments on shared keys, then a simulated power failure
//! (`abandon`). Under `Sync` every acknowledged write must come back, with the state the
//! engine showed before the crash: this checks, under real thread interleavings, that each
//! key's writes reach the log and the tree in the same order (the node lock held across the
//! log append, batches holding the writer lock exclusively) and that garbage collection's
//! `is_current` answers never drop a live record or carry back a dead one.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use std::sync::Arc;

use lamina_core::testkit::dump;
use lamina_core::{CasOutcome, Durability, OrderedIndex, WriteBatch};
use lamina_storage::log::options::BUFFER_BYTES_MIN;
use lamina_storage::{MemoryStorage, Storage};
use lamina_trie::{TrieEngine, TrieOptions};

const WRITERS: u64 = 3;
const OPS_PER_WRITER: u64 = 1500;
const HOT_KEYS: u64 = 40;
const COLD_KEYS: u64 = 20;
const COUNTERS: u64 = 3;
const ROUNDS: u64 = 4;

/// The smallest log buffer and a ring of twice the minimum: collection runs constantly.
fn options(prefix_bits: u32) -> TrieOptions {
    let options = TrieOptions::default()
        .log_buffer_bytes(BUFFER_BYTES_MIN)
        .durability(Durability::Sync)
        .prefix_bits(prefix_bits);
    let segment = options.log_options().segment_bytes_min();
    options.log_segment_bytes(segment).disk_budget_bytes(4096 + 2 * segment)
}

fn counter_key(i: u64) -> Vec<u8> {
    format!("counter{i}").into_bytes()
}

fn counter_value(value: Option<&Vec<u8>>) -> u64 {
    value.map_or(0, |v| u64::from_be_bytes(v[..].try_into().expect("8-byte counters")))
}

/// One writer; returns how many CAS increments it made.
fn writer(db: &TrieEngine, id: u64, seed: u64) -> u64 {
    let mut x = seed * 31 + id + 1;
    let mut increments = 0;
    for i in 0..OPS_PER_WRITER {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = format!("hot{}", x % HOT_KEYS).into_bytes();
        let value = format!("{id}:{i}:{}", "v".repeat((x % 1500) as usize)).into_bytes();
        match x % 9 {
            0..=2 => db.put(&key, &value).unwrap(),
            3 => drop(db.delete(&key).unwrap()),
            4 => {
                let mut batch = WriteBatch::new();
                batch.put(key, value.clone());
                batch.delete(format!("hot{}", (x >> 8) % HOT_KEYS).into_bytes());
                batch.put(format!("hot{}", (x >> 16) % HOT_KEYS).into_bytes(), value);
                db.write_batch(&batch).unwrap();
            }
            _ => {
                let counter = counter_key(x % COUNTERS);
                loop {
                    let current = db.get(&counter).unwrap();
                    let next = (counter_value(current.as_ref()) + 1).to_be_bytes();
                    let outcome = db.compare_and_swap(&counter, current.as_deref(), Some(&next));
                    if outcome.unwrap() == CasOutcome::Swapped {
                        break;
                    }
                }
                increments += 1;
            }
        }
    }
    increments
}

fn run(prefix_bits: u32, seed: u64) {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = TrieEngine::open(Arc::clone(&storage), options(prefix_bits)).unwrap();
    for i in 0..COLD_KEYS {
        db.put(format!("cold{i}").as_bytes(), &[i as u8; 700]).unwrap();
    }
    let increments: u64 = std::thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|id| {
                let db = &db;
                s.spawn(move || writer(db, id, seed))
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let before = dump(&db);
    let counted: u64 = (0..COUNTERS).map(|i| counter_value(before.get(&counter_key(i)))).sum();
    assert_eq!(counted, increments, "lost or duplicated CAS increments");
    assert_eq!(db.stats().keys, Some(before.len() as u64));
    db.abandon();
    drop(db);

    let db = TrieEngine::open(storage, options(prefix_bits)).unwrap();
    let after = dump(&db);
    assert!(
        after == before,
        "k' = {prefix_bits}, seed {seed}: recovery differs from the state acknowledged"
    );
    assert_eq!(db.stats().keys, Some(before.len() as u64));
}

#[test]
fn concurrent_durable_writers_survive_a_crash() {
    for seed in 0..ROUNDS {
        run(4, seed);
    }
}

#[test]
fn concurrent_durable_writers_survive_a_crash_binary_tree() {
    for seed in 0..ROUNDS {
        run(1, seed);
    }
}
