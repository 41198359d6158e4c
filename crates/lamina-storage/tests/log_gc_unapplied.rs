//! The cyclic log's garbage collection runs while the writers of the chunk just synced are
//! still applying their operations (they are woken after the sync and apply when they are
//! scheduled). A delete that is durable but not yet applied must not let collection carry an
//! older put of its key into a later chunk: once the delete's own chunk is collected (a
//! delete is dropped then), that carried put would be all the log says about the key, and a
//! crash before its chunk is collected in turn would bring the deleted key back.

mod log_support;

use std::sync::Arc;
use std::time::Duration;

use lamina_core::{BatchOp, Durability};
use lamina_storage::{MemoryStorage, Storage};
use log_support::{Model, open_with, recovered_now, small_fixed_ring, value};

/// Keys written once and never overwritten until they are all deleted.
const COLD_KEYS: u64 = 400;

fn cold(i: u64) -> Vec<u8> {
    format!("cold{i:05}").into_bytes()
}

fn hot(i: u64) -> Vec<u8> {
    format!("hot{:02}", i % 4).into_bytes()
}

#[test]
fn collection_never_carries_a_put_past_a_durable_delete_still_being_applied() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_fixed_ring(Durability::Sync);
    // The delete below is applied 20 ms after it is durable: the collection that follows its
    // chunk's sync certainly runs in between.
    let model =
        Model { slow_apply: Some((cold(0), Duration::from_millis(20))), ..Model::default() };
    let (log, model) = open_with(storage.clone(), options.clone(), model).unwrap();
    // Every chunk of the first lap holds one cold key next to a hot one; then the hot keys
    // alone lap the ring a few times, so the cold puts live on only as carried records,
    // spread over the ring.
    for i in 0..COLD_KEYS {
        let ops = [
            BatchOp::Put { key: hot(i), value: value(i, 0, 2000) },
            BatchOp::Put { key: cold(i), value: value(i, 1, 40) },
        ];
        model.write(&log, &ops).unwrap();
    }
    let hot_put = |round: u64| [BatchOp::Put { key: hot(round), value: value(round, 2, 2000) }];
    for round in 0..300 {
        model.write(&log, &hot_put(round)).unwrap();
    }
    let collected_before = log.stats().gc_chunks_collected;
    assert!(collected_before > 100, "the ring must have lapped: {:?}", log.stats());
    let deletes: Vec<BatchOp> = (0..COLD_KEYS).map(|i| BatchOp::Delete { key: cold(i) }).collect();
    model.write(&log, &deletes).unwrap();
    // The delete is acknowledged. From now on, at every point a crash could strike (between
    // two acknowledged writes), recovery must find no cold key, until the ring has lapped
    // again and every chunk from before the delete is gone.
    for round in 0..300 {
        model.write(&log, &hot_put(round)).unwrap();
        let recovered = recovered_now(&storage, &options).snapshot();
        let back: Vec<_> = recovered.keys().filter(|k| k.starts_with(b"cold")).collect();
        assert!(back.is_empty(), "{} deleted keys back after {round} writes", back.len());
    }
    assert!(log.stats().gc_chunks_collected > collected_before + 100, "{:?}", log.stats());
    assert!(model.snapshot().keys().all(|k| k.starts_with(b"hot")));
    log.close().unwrap();
}

/// The chunk of a durable write whose writer has not applied it yet may itself come up for
/// collection (other writers have filled the ring meanwhile): the engine cannot vouch for
/// that record yet, so collection must stop before it, not drop it.
#[test]
fn collection_stops_before_a_durable_write_still_being_applied() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_fixed_ring(Durability::Sync);
    let slow_key = b"slow".to_vec();
    let model = Model {
        slow_apply: Some((slow_key.clone(), Duration::from_millis(300))),
        ..Model::default()
    };
    let (log, model) = open_with(storage.clone(), options.clone(), model).unwrap();
    let hot_put = |round: u64| [BatchOp::Put { key: hot(round), value: value(round, 2, 3000) }];
    // Lap the ring once so that collection runs after every flush.
    for round in 0..200 {
        model.write(&log, &hot_put(round)).unwrap();
    }
    let collected_before = log.stats().gc_chunks_collected;
    assert!(collected_before > 20, "the ring must have lapped: {:?}", log.stats());
    let slow_value = value(7, 7, 40);
    std::thread::scope(|s| {
        let (log, model) = (&log, &model);
        let writer = s.spawn(|| {
            model.write(log, &[BatchOp::Put { key: slow_key.clone(), value: slow_value.clone() }])
        });
        // While the slow write's chunk is durable but unapplied: enough other chunks that it
        // is within reach of collection (more than half the ring), fewer than the flusher
        // keeps buffers of.
        while log.stats().records_written < 201 {
            std::thread::yield_now();
        }
        for round in 0..60 {
            model.write(log, &hot_put(round)).unwrap();
        }
        writer.join().unwrap().unwrap();
    });
    assert!(log.stats().gc_chunks_collected > collected_before + 40, "{:?}", log.stats());
    let recovered = recovered_now(&storage, &options).snapshot();
    assert_eq!(recovered.get(&slow_key), Some(&slow_value), "the slow write is lost");
    log.close().unwrap();
}
