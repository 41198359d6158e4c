//! An engine could once install its liveness oracle (`Log::set_live_records`) after
//! appending. Collection used to copy every record forward while no oracle was installed,
//! puts past later deletes of their key included; once an oracle was installed, deletes were
//! dropped when their chunk was collected, so a put copied before the oracle arrived outlived
//! the delete that followed it, and a crash brought the key back. Now the oracle is an
//! argument of `RingLog::open` (opening without one does not compile: a doctest of
//! `RingLog`), so nothing can be appended or collected before it is there; this checks the
//! same property (a deleted key stays deleted at every point a crash could strike while
//! collection laps the ring) with the oracle there from the start.

mod log_support;

use std::sync::Arc;

use lamina_core::{BatchOp, Durability};
use lamina_storage::{MemoryStorage, Storage};
use log_support::{open_with_model, recovered_now, small_fixed_ring, small_segment_bytes, value};

#[test]
fn collection_never_resurrects_a_deleted_key() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_fixed_ring(Durability::Sync);
    let (log, model) = open_with_model(storage.clone(), options.clone()).unwrap();
    let filler = |i: u64| {
        [BatchOp::Put { key: format!("hot{}", i % 4).into_bytes(), value: value(i, 0, 20) }]
    };
    let cold = b"cold".to_vec();
    // One chunk per write (one writer, Sync): the put, some fillers, the delete.
    model.write(&log, &[BatchOp::Put { key: cold.clone(), value: value(0, 0, 20) }]).unwrap();
    for i in 0..10 {
        model.write(&log, &filler(i)).unwrap();
    }
    model.write(&log, &[BatchOp::Delete { key: cold.clone() }]).unwrap();
    let capacity_bytes = small_segment_bytes();
    let mut i = 10;
    while log.stats().disk_bytes < capacity_bytes / 2 {
        model.write(&log, &filler(i)).unwrap();
        i += 1;
        assert!(i < 10_000, "the ring never filled: {:?}", log.stats());
    }
    assert!(!model.snapshot().contains_key(&cold));
    // From now on, at every point a crash could strike, the deleted key must stay deleted.
    for round in 0..150 {
        model.write(&log, &filler(i + round)).unwrap();
        let recovered = recovered_now(&storage, &options).snapshot();
        assert!(
            !recovered.contains_key(&cold),
            "deleted key back after {round} more writes: {:?}",
            log.stats()
        );
    }
    log.close().unwrap();
}
