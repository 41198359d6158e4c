//! An engine may install its liveness oracle (`Log::set_live_records`) after appending.
//! Collection used to copy every record forward while no oracle was installed, puts past
//! later deletes of their key included; once an oracle was installed, deletes were dropped
//! when their chunk was collected, so a put copied before the oracle arrived outlived the
//! delete that followed it, and a crash brought the key back. Now nothing is collected
//! without an oracle.

mod log_support;

use std::sync::Arc;

use lamina_core::{BatchOp, Durability};
use lamina_storage::log::{Log, Retention};
use lamina_storage::{MemoryStorage, Storage};
use log_support::{Model, recovered_now, small_options, small_ring, value};

#[test]
fn an_oracle_installed_after_appends_never_resurrects_a_deleted_key() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_options(small_ring(), Durability::Sync);
    let model = Arc::new(Model::default());
    let log = Log::open(storage.clone(), options.clone(), |r| model.apply_record(&r)).unwrap();
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
    // No oracle yet: nothing is collected, however full the ring gets.
    let Retention::Cyclic { capacity_bytes } = options.retention else { unreachable!() };
    let mut i = 10;
    while log.stats().disk_bytes < capacity_bytes / 2 {
        model.write(&log, &filler(i)).unwrap();
        i += 1;
        assert!(i < 10_000, "the ring never filled: {:?}", log.stats());
    }
    assert_eq!(log.stats().gc_chunks_collected, 0, "{:?}", log.stats());
    log.set_live_records(model.clone());
    assert!(!model.snapshot().contains_key(&cold));
    // From now on, at every point a crash could strike, the deleted key must stay deleted.
    for round in 0..150 {
        model.write(&log, &filler(i + round)).unwrap();
        let recovered = recovered_now(&storage, &options).snapshot();
        assert!(
            !recovered.contains_key(&cold),
            "deleted key back after {round} writes with the oracle: {:?}",
            log.stats()
        );
    }
    log.close().unwrap();
}
