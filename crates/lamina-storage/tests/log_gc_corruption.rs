//! Media corruption that the cyclic log's garbage collection finds while the log runs (a
//! chunk no longer matches its checksum when collection reads it back): the log refuses
//! writes from then on, and every writer gets `Error::Corruption` naming the ring file, not
//! a generic I/O error, so engines and users can tell the two apart.

mod log_support;

use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Error};
use lamina_storage::{FaultPlan, FaultyStorage, Storage};
use log_support::{open_with_model, small_fixed_ring, small_segment_bytes, value};

#[test]
fn corruption_found_by_collection_is_reported_as_corruption() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none());
    let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
    let options = small_fixed_ring(Durability::Sync);
    let capacity_bytes = small_segment_bytes();
    let (log, model) = open_with_model(storage, options).unwrap();
    let put = |i: u64| {
        [BatchOp::Put { key: format!("k{}", i % 8).into_bytes(), value: value(i, 0, 3000) }]
    };
    let mut i = 0;
    while log.stats().gc_chunks_collected == 0 {
        model.write(&log, &put(i)).unwrap();
        i += 1;
        assert!(i < 10_000, "collection never ran: {:?}", log.stats());
    }
    // One bit in the payload area of every 4 KiB block of the ring: whatever chunk
    // collection reads next no longer matches its checksum.
    for block in 0..capacity_bytes / 4096 {
        faulty.flip_bit("wal.ring", (4096 + block * 4096 + 200) * 8).unwrap();
    }
    let err = (i..i + 10_000)
        .find_map(|i| model.write(&log, &put(i)).err())
        .expect("collection reads a corrupt chunk within a lap");
    match &err {
        Error::Corruption { file, .. } => {
            assert!(file.to_string_lossy().contains("wal.ring"), "{err}");
        }
        other => panic!("expected Error::Corruption, got {other:?}"),
    }
    // Sticky: the next write gets the same kind of error.
    let again = model.write(&log, &put(0)).unwrap_err();
    assert!(matches!(again, Error::Corruption { .. }), "{again}");
    log.abandon();
}
