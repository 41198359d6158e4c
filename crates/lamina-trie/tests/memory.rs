//! `Stats::memory_bytes` and the content-block allocator (`src/slab.rs`, `src/pool.rs`):
//! large values live in huge-page chunks that are counted, reused through the epoch
//! collector, and reused by the next tree after a tree is dropped.
//!
//! The allocator is process-wide, so this file holds one test: its binary is the only user
//! of the slab and the byte counts are exact.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use lamina_core::{OrderedIndex, Stats};
use lamina_trie::{TrieEngine, TrieOptions};

const KEYS: u64 = 1000;
const VALUE_BYTES: usize = 4096;
/// A content node of an 8-byte key and a 4 KiB value: 16 + 8 + 4096 bytes, in the 4160
/// class.
const BLOCK_BYTES: u64 = 4160;
const CHUNK_BYTES: u64 = 2 << 20;

fn extra(stats: &Stats, name: &str) -> u64 {
    stats.extra.iter().find(|(n, _)| *n == name).map(|&(_, v)| v).expect(name)
}

fn fill(db: &TrieEngine, byte: u8) {
    for k in 0..KEYS {
        db.put(&k.to_be_bytes(), &[byte; VALUE_BYTES]).unwrap();
    }
}

#[test]
fn large_values_are_counted_reused_and_outlive_their_tree() {
    let db = TrieEngine::volatile(TrieOptions::default()).unwrap();
    fill(&db, 1);
    let stats = db.stats();
    let chunks = extra(&stats, "content_chunks_bytes");
    let idle = extra(&stats, "content_idle_bytes");
    assert_eq!(chunks, (KEYS * BLOCK_BYTES).div_ceil(CHUNK_BYTES) * CHUNK_BYTES);
    // One thread allocated every block and none was freed: all chunk bytes are either a
    // live block or idle.
    assert_eq!(idle, chunks - KEYS * BLOCK_BYTES);
    assert!(stats.memory_bytes >= chunks, "{} < {chunks}", stats.memory_bytes);
    assert!(stats.memory_bytes < chunks + (4 << 20), "inner nodes take well under 4 MiB");

    // Overwrites retire the old blocks through the epoch collector; they come back as
    // free blocks, so the slab grows by much less than another copy of the data.
    for round in 0..10 {
        fill(&db, 2 + round);
    }
    let after = extra(&db.stats(), "content_chunks_bytes");
    assert!(after < 2 * chunks, "{after} bytes of chunks after 10 rounds (first {chunks})");
    assert_eq!(db.get(&7u64.to_be_bytes()).unwrap().unwrap(), vec![11u8; VALUE_BYTES]);
    drop(db);

    // The next tree takes the blocks the dropped one gave back.
    let db = TrieEngine::volatile(TrieOptions::default()).unwrap();
    fill(&db, 3);
    assert_eq!(extra(&db.stats(), "content_chunks_bytes"), after);
    assert_eq!(db.get(&999u64.to_be_bytes()).unwrap().unwrap(), vec![3u8; VALUE_BYTES]);
}
