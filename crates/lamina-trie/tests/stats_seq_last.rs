//! `Stats` extra `seq_last` ("last sequence number assigned to a write", `src/tree.rs`) on a
//! durable engine. A durable batch is one log record with its own sequence number; a batch
//! whose operations change nothing (deletes of absent keys) publishes nothing, so the
//! publish path alone would leave `seq_last` behind the log, live and at recovery. The
//! engine and the replay advance it per record.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use std::sync::Arc;

use lamina_core::{OrderedIndex, Stats, WriteBatch};
use lamina_storage::log::options::BUFFER_BYTES_MIN;
use lamina_storage::{FaultPlan, FaultyStorage, Storage};
use lamina_trie::{TrieEngine, TrieOptions};

fn seq_last(stats: &Stats) -> u64 {
    stats.extra.iter().find(|(n, _)| *n == "seq_last").map(|&(_, v)| v).expect("seq_last")
}

#[test]
fn a_logged_batch_advances_seq_last_even_if_it_changes_nothing() {
    let storage = Arc::new(FaultyStorage::in_memory(FaultPlan::none()));
    let options =
        TrieOptions::default().log_buffer_bytes(BUFFER_BYTES_MIN).disk_budget_bytes(4 << 20);
    let db = TrieEngine::open(Arc::clone(&storage) as Arc<dyn Storage>, options.clone()).unwrap();
    db.put(b"a", b"1").unwrap();
    let before = seq_last(&db.stats());
    assert!(before > 0, "a logged put sets seq_last");
    let mut batch = WriteBatch::new();
    batch.delete(b"absent".to_vec());
    db.write_batch(&batch).unwrap();
    let after = seq_last(&db.stats());
    db.close().unwrap();
    drop(db);
    assert!(after > before, "the batch was logged with a new sequence number: {after}");
    let db = TrieEngine::open(storage as Arc<dyn Storage>, options).unwrap();
    assert_eq!(seq_last(&db.stats()), after, "replay restores seq_last");
}
