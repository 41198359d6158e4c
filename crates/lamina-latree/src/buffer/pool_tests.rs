//! Tests of the write-coalescing pool: a model-based property test (appends, sorted batches,
//! forgets, flushes against plain vectors), the X/Y single-pass sort, failures and restarts.

use std::sync::Arc;

use lamina_core::Error;
use lamina_storage::{FailKind, FaultPlan, FaultyStorage, MemoryStorage, Storage};
use proptest::prelude::*;

use super::*;

const NAME: &str = "latree-buffers";

fn pool(storage: &dyn Storage, page_bytes: u32, budget_bytes: u64) -> BufferPool {
    BufferPool::new(BufferStore::create(storage, NAME, page_bytes).unwrap(), budget_bytes).unwrap()
}

fn put(key: &[u8], value_bytes: usize, seq: u64) -> BufferEntry {
    BufferEntry::put(key, &vec![b'v'; value_bytes], seq).unwrap()
}

/// Sorts `entries` as an emptying would.
fn sorted(mut entries: Vec<BufferEntry>) -> Vec<BufferEntry> {
    entries.sort_by(BufferEntry::cmp_key_seq);
    entries
}

/// Reads `buffer` sorted, checking every fragment is read once and only its pages are touched.
fn sorted_checked(pool: &BufferPool, buffer: BufferId) -> Vec<BufferEntry> {
    let stats = pool.buffer_stats(buffer);
    let before = pool.store().stats();
    let mut stream = pool.sorted_entries(buffer).unwrap();
    let mut out = Vec::new();
    while let Some(entry) = stream.next_entry().unwrap() {
        out.push(entry);
    }
    assert_eq!(stream.fragments_read(), stats.fragments, "every fragment read once");
    let after = pool.store().stats();
    assert_eq!(after.units_read - before.units_read, stats.fragments);
    assert_eq!(after.pages_read - before.pages_read, stats.pages_spanned);
    out
}

#[derive(Debug, Clone)]
enum Op {
    Append { buffer: u64, key: Vec<u8>, value_bytes: usize, delete: bool },
    Batch { buffer: u64, keys: Vec<Vec<u8>>, value_bytes: usize },
    Forget { buffer: u64 },
    Flush,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let key = proptest::collection::vec(0u8..4, 1..4);
    prop_oneof![
        8 => (0u64..6, key.clone(), 0usize..120, any::<bool>())
            .prop_map(|(buffer, key, value_bytes, delete)| Op::Append { buffer, key, value_bytes, delete }),
        2 => (0u64..6, proptest::collection::vec(key, 0..40), 0usize..60)
            .prop_map(|(buffer, keys, value_bytes)| Op::Batch { buffer, keys, value_bytes }),
        1 => (0u64..6).prop_map(|buffer| Op::Forget { buffer }),
        1 => Just(Op::Flush),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_pool_keeps_every_entry_in_order(
        ops in proptest::collection::vec(op_strategy(), 1..120),
        page_bytes in prop_oneof![Just(512u32), Just(4096)],
        budget_bytes in 0u64..6000,
    ) {
        let storage = MemoryStorage::new();
        let mut pool = pool(&storage, page_bytes, budget_bytes);
        let mut model: Vec<Vec<BufferEntry>> = vec![Vec::new(); 6];
        let mut seq = 0u64;
        let mut next_seq = || { seq += 1; seq };
        for op in ops {
            match op {
                Op::Append { buffer, key, value_bytes, delete } => {
                    let entry = if delete {
                        BufferEntry::delete(&key, next_seq()).unwrap()
                    } else {
                        put(&key, value_bytes, next_seq())
                    };
                    pool.append(BufferId(buffer), entry.clone()).unwrap();
                    model[buffer as usize].push(entry);
                }
                Op::Batch { buffer, keys, value_bytes } => {
                    let batch = sorted(keys.iter().map(|k| put(k, value_bytes, next_seq())).collect());
                    pool.append_sorted_batch(BufferId(buffer), batch.clone()).unwrap();
                    model[buffer as usize].extend(batch);
                }
                Op::Forget { buffer } => {
                    let stats = pool.forget(BufferId(buffer));
                    prop_assert_eq!(stats.entries, model[buffer as usize].len() as u64);
                    model[buffer as usize].clear();
                }
                Op::Flush => {
                    pool.flush_all().unwrap();
                    prop_assert_eq!(pool.stats().bytes_in_memory, 0);
                }
            }
            pool.check();
        }
        for (buffer, expected) in model.iter().enumerate() {
            let id = BufferId(buffer as u64);
            let contents = pool.read(id).unwrap();
            let mut appended: Vec<_> = contents.newest_first().cloned().collect();
            appended.reverse();
            prop_assert_eq!(&appended, expected);
            prop_assert_eq!(pool.buffer_stats(id).entries, expected.len() as u64);
            prop_assert_eq!(sorted_checked(&pool, id), sorted(expected.clone()));
            for key in [&[0u8][..], &[1, 2], &[3, 3, 3]] {
                let newest = expected.iter().filter(|e| e.key() == key).max_by_key(|e| e.seq());
                let found = pool.find(id, key).unwrap();
                prop_assert_eq!(found.as_ref(), newest);
            }
        }
        // Forgetting everything leaves no live byte in the store.
        for buffer in 0..6 {
            pool.forget(BufferId(buffer));
        }
        prop_assert_eq!(pool.stats().store.live_bytes, 0);
        prop_assert_eq!(pool.stats().store.live_pages, 0);
    }
}

#[test]
fn x_is_sorted_in_memory_and_merged_with_the_streamed_y() {
    let storage = MemoryStorage::new();
    // A budget below one page: the big Y batch goes to flash while it is appended.
    let mut pool = pool(&storage, 512, 400);
    let id = BufferId(7);
    let mut all = Vec::new();
    let mut seq = 0;
    // X: 30 entries in descending key order.
    for i in (0..30u32).rev() {
        seq += 1;
        let entry = put(&(i * 7).to_be_bytes(), 20, seq);
        pool.append(id, entry.clone()).unwrap();
        all.push(entry);
    }
    // Y: the parent's batch of 200 sorted entries (many pages).
    let batch = sorted(
        (0..200u32)
            .map(|i| {
                seq += 1;
                put(&(i * 3).to_be_bytes(), 20, seq)
            })
            .collect(),
    );
    pool.append_sorted_batch(id, batch.clone()).unwrap();
    all.extend(batch);
    // More X after the batch (a lookup-free update path could do this at the root).
    for i in 0..5u32 {
        seq += 1;
        let entry = put(&(i * 11).to_be_bytes(), 20, seq);
        pool.append(id, entry.clone()).unwrap();
        all.push(entry);
    }
    let stats = pool.buffer_stats(id);
    assert_eq!(stats.y_entries, 200);
    assert!(stats.fragments > 10, "{stats:?}");
    let out = sorted_checked(&pool, id);
    assert!(out.is_sorted_by(|a, b| a.cmp_key_seq(b).is_le()));
    assert_eq!(out, sorted(all));
}

#[test]
fn a_failed_page_write_leaves_the_entry_out() {
    // Op 1 opens the file; op 2, the first page write, fails once.
    let storage = FaultyStorage::in_memory(FaultPlan::none().fail_at(2, FailKind::Eio, false));
    let mut pool = pool(&storage, 512, 100);
    let id = BufferId(1);
    for seq in 0..3 {
        pool.append(id, put(b"k", 20, seq)).unwrap(); // 24 bytes each
    }
    let err = pool.append(id, put(b"k", 90, 3)).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    pool.check();
    assert_eq!(pool.buffer_stats(id).entries, 3);
    assert_eq!(pool.stats().store.units_written, 0);
    pool.append(id, put(b"k", 90, 3)).unwrap();
    pool.check();
    let seqs: Vec<u64> = pool.read(id).unwrap().newest_first().map(BufferEntry::seq).collect();
    assert_eq!(seqs, vec![3, 2, 1, 0]);
}

#[test]
fn buffers_are_attached_again_after_a_restart() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let mut pool = pool(&*storage, 512, 1000);
    for seq in 0..100u64 {
        pool.append(BufferId(seq % 3), put(&seq.to_be_bytes(), 10, seq)).unwrap();
    }
    let batch = sorted((100..140u64).map(|seq| put(&(seq % 17).to_be_bytes(), 5, seq)).collect());
    pool.append_sorted_batch(BufferId(1), batch).unwrap();
    pool.flush_all().unwrap();
    let ids = [BufferId(0), BufferId(1), BufferId(2)];
    let roots: Vec<BufferRoot> = ids.iter().map(|&id| pool.root(id).unwrap()).collect();
    let contents: Vec<_> = ids.iter().map(|&id| pool.read(id).unwrap()).collect();
    let sorted_before: Vec<_> = ids.iter().map(|&id| sorted_checked(&pool, id)).collect();
    let live_bytes = pool.stats().store.live_bytes;
    drop(pool);

    let store = BufferStore::open(&*storage, NAME, 512).unwrap();
    let mut pool = BufferPool::new(store, 1000).unwrap();
    for (id, root) in ids.iter().zip(&roots) {
        pool.attach(*id, root).unwrap();
    }
    pool.check();
    assert_eq!(pool.stats().store.live_bytes, live_bytes);
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(pool.read(*id).unwrap(), contents[i]);
        assert_eq!(sorted_checked(&pool, *id), sorted_before[i]);
    }
    // A root of another buffer, or one that disagrees with the chain, is corruption and
    // changes nothing.
    let err = pool.attach(BufferId(9), &roots[0]).unwrap_err();
    assert!(err.to_string().contains("not BufferId(9)"), "{err}");
    pool.forget(BufferId(0));
    let live_bytes = pool.stats().store.live_bytes;
    let bad = BufferRoot { entries: roots[0].entries + 1, ..roots[0].clone() };
    let err = pool.attach(BufferId(0), &bad).unwrap_err();
    assert!(err.to_string().contains("its root says"), "{err}");
    assert_eq!(pool.stats().store.live_bytes, live_bytes);
    pool.check();
}

#[test]
fn forgetting_buffers_leaves_mostly_dead_units() {
    let storage = MemoryStorage::new();
    let mut pool = pool(&storage, 512, 0);
    // Budget 0: each append writes the previous entry as its own unit.
    for seq in 0..10u64 {
        pool.append(BufferId(seq % 2), put(&seq.to_be_bytes(), 30, seq)).unwrap();
    }
    pool.flush_all().unwrap();
    assert_eq!(pool.stats().store.units_written, 10);
    pool.forget(BufferId(0));
    assert_eq!(pool.store().units_mostly_dead(0), vec![0, 2, 4, 6, 8]);
    assert_eq!(pool.stats().store.live_pages, 5);
}

#[test]
fn a_damaged_page_is_corruption_for_reads_and_emptyings() {
    let storage = FaultyStorage::in_memory(FaultPlan::none());
    let mut pool = pool(&storage, 512, 0);
    let id = BufferId(4);
    for seq in 0..6u64 {
        pool.append(id, put(&seq.to_be_bytes(), 10, seq)).unwrap();
    }
    pool.flush_all().unwrap();
    // A bit of the third unit's value bytes.
    storage.flip_bit(NAME, (2 * 512 + 60) * 8).unwrap();
    for err in [pool.read(id).unwrap_err(), pool.find(id, b"k").unwrap_err()] {
        assert!(matches!(&err, Error::Corruption { offset: 1024, .. }), "{err:?}");
        assert!(err.to_string().contains(NAME), "{err}");
    }
    let err = pool.sorted_entries(id).unwrap_err();
    assert!(matches!(err, Error::Corruption { offset: 1024, .. }), "{err:?}");
}

#[test]
fn limits_are_checked() {
    let storage = MemoryStorage::new();
    let store = BufferStore::create(&storage, NAME, 512).unwrap();
    let err = BufferPool::new(store, POOL_BYTES_MAX + 1).unwrap_err();
    assert!(err.to_string().contains("buffer_pool_bytes"), "{err}");
}
