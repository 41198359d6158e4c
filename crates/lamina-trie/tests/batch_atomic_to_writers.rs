//! Batch atomicity as seen by single-key writes on the volatile engine.
//!
//! The `OrderedIndex` contract makes single-key operations linearizable and batches atomic,
//! so no thread may observe half of a batch through any operation. `compare_and_swap`
//! returns the current value on a mismatch, and `delete` whether the key existed: both are
//! reads. The batch gate (`src/gate.rs`) only covers gets and scans; volatile single-key
//! writers never touch it (`engine.rs` `single_write`), so they run between a batch's
//! operations. (The durable engine excludes them with its writer lock, and the `mem` engine
//! locks the batch's key stripes.)
//!
//! Here a batch puts `a` = 1, then many filler keys, then `b` = 1. A thread that sees
//! `a` = 1 through a mismatching CAS, then asks for `b` the same way, gets the old `b`.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use std::sync::atomic::{AtomicBool, Ordering};

use lamina_core::{CasOutcome, OrderedIndex, WriteBatch};
use lamina_trie::{TrieEngine, TrieOptions};

const FILLER_PUTS: u32 = 20_000;
const ROUNDS: u8 = 3;

/// The current value of `key`, read through a CAS that never matches (changes nothing).
fn read_by_cas(db: &TrieEngine, key: &[u8]) -> Option<Vec<u8>> {
    match db.compare_and_swap(key, Some(b"never stored"), None).unwrap() {
        CasOutcome::Mismatch { current } => current,
        CasOutcome::Swapped => unreachable!("the expected value is never stored"),
    }
}

#[test]
fn a_cas_never_observes_half_of_a_batch() {
    let db = TrieEngine::volatile(TrieOptions::default()).unwrap();
    for round in 1..=ROUNDS {
        let old = vec![round - 1];
        let new = vec![round];
        db.put(b"a", &old).unwrap();
        db.put(b"b", &old).unwrap();
        let mut batch = WriteBatch::new();
        batch.put(b"a".to_vec(), new.clone());
        for i in 0..FILLER_PUTS {
            batch.put(format!("filler{i:05}").into_bytes(), Vec::new());
        }
        batch.put(b"b".to_vec(), new.clone());
        let ready = AtomicBool::new(false);
        let torn = std::thread::scope(|s| {
            let observer = s.spawn(|| {
                ready.store(true, Ordering::Release);
                // Wait for the batch's first write, then look at its last key.
                while read_by_cas(&db, b"a").as_deref() != Some(&new[..]) {
                    std::hint::spin_loop();
                }
                read_by_cas(&db, b"b")
            });
            while !ready.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            db.write_batch(&batch).unwrap();
            observer.join().unwrap()
        });
        assert_eq!(
            torn.as_deref(),
            Some(&new[..]),
            "round {round}: saw the batch's `a` and then `b` from before the batch"
        );
    }
}
