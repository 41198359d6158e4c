//! A write batch within the API's limits (`BATCH_OPS_MAX`, `BATCH_BYTES_MAX` = 64 MiB) must
//! be accepted by every engine. The durable trie logs a batch through its log, whose records
//! are at most its write buffer (`log_buffer_bytes`, 1 MiB by default): a larger batch is
//! logged in parts (`lamina_storage::log::record`). Until November 2026 it was refused with
//! `InvalidArgument` on a durable engine while the volatile one accepted it.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use std::sync::Arc;

use lamina_core::limits::{BATCH_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_core::{OrderedIndex, WriteBatch};
use lamina_storage::{FaultPlan, FaultyStorage, Storage};
use lamina_trie::{TrieEngine, TrieOptions};

/// 300 puts of 4 KiB values: about 1.2 MiB, far below `BATCH_BYTES_MAX`.
fn batch() -> WriteBatch {
    let mut batch = WriteBatch::new();
    for i in 0..300u32 {
        batch.put(i.to_be_bytes().to_vec(), vec![7u8; VALUE_BYTES_MAX]);
    }
    assert!(batch.payload_bytes() < BATCH_BYTES_MAX);
    batch.validate().expect("the batch is within the API limits");
    batch
}

#[test]
fn volatile_engine_accepts_the_batch() {
    let db = TrieEngine::volatile(TrieOptions::default()).unwrap();
    db.write_batch(&batch()).unwrap();
    assert_eq!(db.get(&299u32.to_be_bytes()).unwrap().unwrap().len(), VALUE_BYTES_MAX);
}

#[test]
fn durable_engine_accepts_a_valid_batch_larger_than_the_log_buffer() {
    let storage = Arc::new(FaultyStorage::in_memory(FaultPlan::none()));
    // The default log buffer (1 MiB); a ring of 32 MiB (the minimum is 12 chunks of two
    // buffers) so the test stays small.
    let options = TrieOptions::default().disk_budget_bytes(32 << 20);
    let db = TrieEngine::open(Arc::clone(&storage) as Arc<dyn Storage>, options.clone()).unwrap();
    let result = db.write_batch(&batch());
    assert!(result.is_ok(), "a batch within the API limits was refused: {result:?}");
    assert_eq!(db.get(&299u32.to_be_bytes()).unwrap().unwrap().len(), VALUE_BYTES_MAX);
    // And it is all there after a reopen.
    db.close().unwrap();
    drop(db);
    let db = TrieEngine::open(Arc::clone(&storage) as Arc<dyn Storage>, options).unwrap();
    for i in 0..300u32 {
        assert_eq!(db.get(&i.to_be_bytes()).unwrap().unwrap().len(), VALUE_BYTES_MAX, "{i}");
    }
}
