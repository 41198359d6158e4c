//! Garbage collection of the durable trie's log ring under `Durability::Buffered` and
//! `Durability::None` (the log applies writes before they are durable).
//!
//! In that mode the ring collects only between flushes, into a carry buffer capped at
//! `payload_max - buffer_bytes` (`lamina-storage/src/log/ring.rs`, `set_apply_before_durable`),
//! and `Ring::collect_one` refuses a chunk whose whole payload does not fit in the carry's
//! free room. But `Ring::flush` writes chunks of carry + one write buffer, up to
//! `payload_max`. Once live data is carried (any key not rewritten within a lap of the ring),
//! such a chunk is larger than the carry cap, collection stops at it for good, and the ring
//! fills with garbage: writes fail with `NoSpace` ("full of live records") while live data is
//! a small fraction of the budget, and the log refuses every later write.
//!
//! Here: 20 cold keys of 700 bytes plus 40 hot keys of up to 1.5 KB (about 60 KB live) in a
//! ring of 864 KiB with the smallest log buffer. Under `Sync` (collection in the flush may
//! write the carry as a chunk of its own) the same workload runs fine.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use std::sync::Arc;
use std::time::Duration;

use lamina_core::{Durability, OrderedIndex};
use lamina_storage::log::options::BUFFER_BYTES_MIN;
use lamina_storage::{MemoryStorage, Storage};
use lamina_trie::{TrieEngine, TrieOptions};

const COLD_KEYS: u64 = 20;
const HOT_KEYS: u64 = 40;
const PUTS: u64 = 6000;

/// A ring of twice the minimum for the smallest log buffer (864 KiB).
fn options(durability: Durability) -> TrieOptions {
    let options = TrieOptions::default().log_buffer_bytes(BUFFER_BYTES_MIN).durability(durability);
    let segment = options.log_options().segment_bytes_min();
    options.log_segment_bytes(segment).disk_budget_bytes(4096 + 2 * segment)
}

fn run(durability: Durability) {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = TrieEngine::open(Arc::clone(&storage), options(durability)).unwrap();
    for i in 0..COLD_KEYS {
        db.put(format!("cold{i}").as_bytes(), &[i as u8; 700]).unwrap();
    }
    let mut x = 12345u64;
    for i in 0..PUTS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = format!("hot{}", x % HOT_KEYS).into_bytes();
        let value = vec![1u8; (x % 1500) as usize];
        if let Err(err) = db.put(&key, &value) {
            let stats = db.stats();
            panic!(
                "put {i} of {PUTS} failed with {} live keys in a ring of {} bytes: {err}",
                stats.keys.unwrap_or(0),
                db.options().disk_budget_bytes.unwrap()
            );
        }
    }
    db.close().unwrap();
}

#[test]
fn sync_durability_collects_the_ring() {
    run(Durability::Sync);
}

#[test]
fn buffered_durability_collects_the_ring() {
    run(Durability::Buffered { max_delay: Duration::from_millis(1) });
}

#[test]
fn no_durability_collects_the_ring() {
    run(Durability::None);
}
