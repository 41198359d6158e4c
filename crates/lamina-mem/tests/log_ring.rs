//! The durable `mem` engine over a small ring: garbage collection keeps live data through
//! many wrap-arounds, a full ring is a clear `NoSpace` that changes nothing, and a crash at
//! every storage operation loses no acknowledged write.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use lamina_core::testkit::{dump, key, value};
use lamina_core::{Durability, Error, OrderedIndex, WriteBatch};
use lamina_mem::{MemEngine, MemOptions};
use lamina_storage::log::{LogOptions, RingLogOptions};
use lamina_storage::{FaultPlan, MemoryStorage, Storage, for_each_crash_point};

const BUFFER_BYTES: usize = 16 << 10;

/// A store's whole content.
type Content = BTreeMap<Vec<u8>, Vec<u8>>;

/// The smallest ring segment the log accepts for our buffer size.
fn ring_bytes_min() -> u64 {
    let log = LogOptions { buffer_bytes: BUFFER_BYTES, ..LogOptions::default() };
    RingLogOptions { log, ..RingLogOptions::default() }.segment_bytes_min()
}

/// A ring of one `capacity`-byte segment that its disk budget keeps from growing.
fn options(durability: Durability, capacity: u64) -> MemOptions {
    MemOptions {
        durability,
        log_buffer_bytes: BUFFER_BYTES,
        log_segment_bytes: Some(capacity),
        disk_budget_bytes: Some(4096 + capacity),
        ..MemOptions::default()
    }
}

#[test]
fn overwrites_many_times_the_ring_size_keep_the_latest_values() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let capacity = ring_bytes_min();
    let db = MemEngine::open(storage.clone(), &options(Durability::None, capacity)).unwrap();
    let mut oracle = BTreeMap::new();
    let mut written = 0u64;
    let mut i = 0u64;
    while written < 8 * capacity {
        let (k, v) = (key("k", i % 64), value(i, 200));
        written += (k.len() + v.len()) as u64;
        db.put(&k, &v).unwrap();
        oracle.insert(k, v);
        if i.is_multiple_of(7) {
            let gone = key("k", (i * 13) % 64);
            db.delete(&gone).unwrap();
            oracle.remove(&gone);
        }
        i += 1;
    }
    db.close().unwrap();
    let db = MemEngine::open(storage.clone(), &options(Durability::None, capacity)).unwrap();
    assert_eq!(dump(&db), oracle);
    db.close().unwrap();
    let ring_file_bytes: u64 = storage
        .list()
        .unwrap()
        .iter()
        .map(|n| storage.open(n, lamina_storage::OpenMode::Existing).unwrap().len().unwrap())
        .sum();
    assert!(ring_file_bytes <= 4096 + capacity, "the ring grew to {ring_file_bytes} bytes");
}

#[test]
fn a_full_ring_is_no_space_and_changes_nothing() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let capacity = ring_bytes_min();
    let db = MemEngine::open(storage.clone(), &options(Durability::None, capacity)).unwrap();
    let mut oracle = BTreeMap::new();
    let mut failure = None;
    for i in 0..(capacity / 100) {
        let (k, v) = (key("unique", i), value(i, 1000));
        match db.put(&k, &v) {
            Ok(()) => {
                oracle.insert(k, v);
            }
            Err(e) => {
                failure = Some((k, e));
                break;
            }
        }
    }
    let (k, err) = failure.expect("live data larger than the ring must be refused");
    assert!(matches!(err, Error::NoSpace { .. }), "{err:?}");
    assert_eq!(db.get(&k).unwrap(), None, "a refused put must not be visible");
    assert_eq!(dump(&db), oracle);
}

/// One step of the scripted workload.
fn step(db: &MemEngine, i: u64, model: &mut Content) -> lamina_core::Result<()> {
    let k = key("c", (i * 7) % 23);
    match i % 5 {
        0..=2 => {
            let v = value(i, 300);
            db.put(&k, &v)?;
            model.insert(k, v);
        }
        3 => {
            db.delete(&k)?;
            model.remove(&k);
        }
        _ => {
            let mut batch = WriteBatch::new();
            let (a, b) = (key("b", i % 5), key("c", (i * 3) % 23));
            batch.put(a.clone(), value(i, 50)).delete(b.clone());
            db.write_batch(&batch)?;
            model.insert(a, value(i, 50));
            model.remove(&b);
        }
    }
    Ok(())
}

#[test]
fn a_crash_at_every_storage_operation_loses_no_acknowledged_write() {
    const STEPS: u64 = 260; // wraps the smallest ring about twice under Sync
    let capacity = ring_bytes_min();
    // States after 0, 1, 2, ... acknowledged steps; recovery must land on acked or acked + 1.
    let states: Arc<Mutex<Vec<Content>>> = Arc::default();
    let runs = for_each_crash_point(
        &FaultPlan::none().with_seed(7),
        |_| Ok(()),
        |storage| {
            let mut history = vec![BTreeMap::new()];
            let result = (|| {
                let db = MemEngine::open(storage.clone(), &options(Durability::Sync, capacity))?;
                let mut model = BTreeMap::new();
                for i in 0..STEPS {
                    step(&db, i, &mut model)?;
                    history.push(model.clone());
                }
                db.close()
            })();
            *states.lock().unwrap() = history;
            result
        },
        |storage, crash_op| {
            let history = states.lock().unwrap().clone();
            let acked = history.len() - 1;
            let db = MemEngine::open(storage.clone(), &options(Durability::Sync, capacity))?;
            let content = dump(&db);
            let in_flight = step_after(acked, &history);
            assert!(
                content == history[acked] || in_flight.as_ref() == Some(&content),
                "crash at op {crash_op}: recovered state is neither the {acked} acknowledged \
                 steps nor those plus the one in flight"
            );
            db.close()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(runs.crash_points > 500, "{runs:?}");
}

/// The state after the step in flight at a crash (the step after `acked` ones).
fn step_after(
    acked: usize,
    history: &[BTreeMap<Vec<u8>, Vec<u8>>],
) -> Option<BTreeMap<Vec<u8>, Vec<u8>>> {
    let i = acked as u64;
    if i >= 260 {
        return None;
    }
    let mut model = history[acked].clone();
    step(&MemEngine::volatile(), i, &mut model).ok()?;
    Some(model)
}
