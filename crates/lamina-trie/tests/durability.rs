//! Durability of the trie engine beyond the conformance kit: a crash at every storage
//! operation of a workload that wraps the log ring (so garbage collection runs), the disk
//! budget refusing writes with `NoSpace` without losing acknowledged data, and garbage
//! collection keeping a ring far smaller than the data written.

// With the `shuttle` feature the engine only works inside shuttle executions.
#![cfg(not(feature = "shuttle"))]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::testkit::dump;
use lamina_core::{BatchOp, Error, OrderedIndex, WriteBatch};
use lamina_storage::crash_points::for_each_crash_point;
use lamina_storage::log::options::BUFFER_BYTES_MIN;
use lamina_storage::{FaultPlan, MemoryStorage, Storage};
use lamina_trie::{TrieEngine, TrieOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The smallest ring the smallest log buffer allows: the workloads below wrap it.
fn tiny_ring() -> TrieOptions {
    let options = TrieOptions::default().log_buffer_bytes(BUFFER_BYTES_MIN);
    let segment = options.log_options().segment_bytes_min();
    options.log_segment_bytes(segment).disk_budget_bytes(4096 + segment)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:03}", i % 23).into_bytes()
}

/// Step `i` of the crash workload, as the batch ops it amounts to.
fn step(i: u64) -> Vec<BatchOp> {
    let value = format!("value {i} {}", "x".repeat((i as usize * 37) % 200)).into_bytes();
    match i % 7 {
        3 => vec![BatchOp::Delete { key: key(i * 5) }],
        5 => vec![
            BatchOp::Put { key: key(i), value: value.clone() },
            BatchOp::Put { key: key(i + 1), value },
            BatchOp::Delete { key: key(i + 2) },
        ],
        _ => vec![BatchOp::Put { key: key(i), value }],
    }
}

fn apply(model: &mut Model, ops: &[BatchOp]) {
    for op in ops {
        match op {
            BatchOp::Put { key, value } => model.insert(key.clone(), value.clone()),
            BatchOp::Delete { key } => model.remove(key),
        };
    }
}

fn run_step(db: &TrieEngine, i: u64, ops: &[BatchOp]) -> lamina_core::Result<()> {
    match ops {
        [BatchOp::Put { key, value }] if i.is_multiple_of(2) => db.put(key, value),
        [BatchOp::Put { key, value }] => {
            // A CAS that always matches: the workload is single-threaded.
            let current = db.get(key)?;
            let outcome = db.compare_and_swap(key, current.as_deref(), Some(value))?;
            assert!(outcome.is_swapped());
            Ok(())
        }
        [BatchOp::Delete { key }] => db.delete(key).map(drop),
        _ => db.write_batch(&ops.iter().cloned().collect::<WriteBatch>()),
    }
}

#[test]
fn crash_at_every_storage_operation_keeps_acknowledged_writes() {
    const STEPS: u64 = 140;
    // (acknowledged model, model with the step in flight at the crash applied)
    let models: RefCell<(Model, Model)> = RefCell::default();
    let runs = for_each_crash_point(
        &FaultPlan::none().with_seed(7),
        |_| Ok(()),
        |storage| {
            *models.borrow_mut() = (Model::new(), Model::new());
            let db = TrieEngine::open(Arc::clone(storage), tiny_ring())?;
            for i in 0..STEPS {
                let ops = step(i);
                apply(&mut models.borrow_mut().1, &ops);
                let result = run_step(&db, i, &ops);
                if result.is_err() {
                    db.abandon();
                }
                result?;
                apply(&mut models.borrow_mut().0, &ops);
            }
            let gc =
                db.stats().extra.iter().find(|(n, _)| *n == "log_gc_records_dropped").unwrap().1;
            assert!(gc > 0, "the workload must wrap the ring");
            db.close()
        },
        |recovered, crash_op| {
            let db = TrieEngine::open(Arc::clone(recovered), tiny_ring())?;
            let state = dump(&db);
            let (acked, with_in_flight) = &*models.borrow();
            assert!(
                state == *acked || state == *with_in_flight,
                "crash at op {crash_op}: recovered state is neither the acknowledged history \
                 nor it plus the write in flight"
            );
            // The recovered engine takes new writes and keeps them.
            db.put(b"after", b"crash")?;
            db.close()?;
            let db = TrieEngine::open(Arc::clone(recovered), tiny_ring())?;
            assert_eq!(db.get(b"after")?.as_deref(), Some(&b"crash"[..]));
            db.close()
        },
    )
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(runs.crash_points > 100, "{runs:?}");
}

#[test]
fn over_budget_is_no_space_and_loses_nothing() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = TrieEngine::open(Arc::clone(&storage), tiny_ring()).unwrap();
    let mut model = Model::new();
    let value = vec![7u8; 4000];
    let err = loop {
        let k = format!("live{:06}", model.len()).into_bytes();
        match db.put(&k, &value) {
            Ok(()) => model.insert(k, value.clone()),
            Err(err) => break err,
        };
        assert!(model.len() < 10_000, "a bounded ring cannot hold unbounded live data");
    };
    assert!(matches!(err, Error::NoSpace { .. }), "{err}");
    assert!(err.to_string().contains("--disk-budget-bytes"), "names the option: {err}");
    assert!(matches!(db.put(b"more", &value), Err(Error::NoSpace { .. })), "stays refused");
    assert_eq!(db.get(b"more").unwrap(), None, "a refused write changes nothing");
    // Not stuck: a delete is accepted, and makes room for a new key of the same size.
    let (gone, _) = model.pop_first().unwrap();
    assert!(db.delete(&gone).unwrap());
    db.put(b"more", &value).unwrap();
    model.insert(b"more".to_vec(), value.clone());
    assert_eq!(dump(&db), model, "reads keep working");
    let _ = db.close();
    drop(db);
    let db = TrieEngine::open(storage, tiny_ring()).unwrap();
    assert_eq!(dump(&db), model, "every acknowledged write survives");
}

#[test]
fn garbage_collection_keeps_a_small_ring_going() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = tiny_ring().durability(lamina_core::Durability::None);
    let budget = options.disk_budget_bytes.unwrap();
    let db = TrieEngine::open(Arc::clone(&storage), options.clone()).unwrap();
    let mut model = Model::new();
    let mut written = 0u64;
    for i in 0..20_000u64 {
        let (k, v) = (key(i * 7), format!("{i:0200}").into_bytes());
        written += (k.len() + v.len()) as u64;
        db.put(&k, &v).unwrap();
        model.insert(k, v);
        if i % 11 == 0 {
            db.delete(&key(i)).unwrap();
            model.remove(&key(i));
        }
    }
    assert!(written > 5 * budget, "wrote {written} bytes through a {budget}-byte ring");
    db.close().unwrap();
    drop(db);
    let db = TrieEngine::open(storage, options).unwrap();
    assert_eq!(dump(&db), model);
}

#[test]
fn corrupt_log_is_reported_not_dropped() {
    let storage = Arc::new(lamina_storage::FaultyStorage::in_memory(FaultPlan::none()));
    let db = TrieEngine::open(Arc::clone(&storage) as Arc<dyn Storage>, tiny_ring()).unwrap();
    for i in 0..20u64 {
        db.put(&key(i), b"value").unwrap();
    }
    db.close().unwrap();
    drop(db);
    // A bit inside the first chunk (after the 4 KiB file header), followed by valid chunks.
    let ring = format!("{}.ring", lamina_trie::LOG_FILE_PREFIX);
    storage.flip_bit(&ring, (4096 + 64) * 8).unwrap();
    match TrieEngine::open(storage as Arc<dyn Storage>, tiny_ring()) {
        Err(Error::Corruption { file, .. }) => {
            assert!(file.to_string_lossy().contains(&ring), "{}", file.display());
        }
        other => panic!("expected a corruption error, got {other:?}"),
    }
}
