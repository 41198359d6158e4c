//! Collected ring space becomes writable only once a durable chunk's `tail` is past it
//! (`durable_clean` advances only in `write_chunk`). Flushes may use the free space ahead
//! down to nothing; a flush that then needs collection can collect but never write a chunk
//! to free what it collected, and fails with `NoSpace` ("full of live records"), for good,
//! here on a ring holding no live record at all (with an empty carry, `Ring::flush` does not
//! even try to write a chunk; with space 0 it could not anyway).
//!
//! Read-ahead collection normally keeps 6 chunks free ahead; it is held back while a writer
//! is slow to apply (collection stops before its chunk) and other writers keep flushing.
//! The slow writer finishes within the 2 s the flush waits for it: the wait's timeout is
//! not what fails. Seen: head = durable_clean + capacity exactly, window empty, carry empty.
//! Same root cause as `log_gc_slow_apply_nospace.rs`.

mod log_support;

use std::sync::Arc;
use std::time::Duration;

use lamina_core::{BatchOp, Durability};
use lamina_storage::{MemoryStorage, Storage};
use log_support::{Model, open_with, small_fixed_ring, value};

#[test]
fn a_ring_of_garbage_never_reports_full() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_fixed_ring(Durability::Sync);
    let slow_key = b"slow".to_vec();
    let model =
        Model { slow_apply: Some((slow_key.clone(), Duration::from_secs(3))), ..Model::default() };
    let (log, model) = open_with(storage, options, model).unwrap();
    // Each write is one 5-block chunk that leaves nothing live: every key it puts, it
    // deletes in the same batch.
    let garbage = |i: u64| -> Vec<BatchOp> {
        let mut ops: Vec<BatchOp> = (0..4)
            .map(|j| BatchOp::Put { key: format!("k{j}").into_bytes(), value: value(i, j, 3900) })
            .collect();
        ops.extend((0..4).map(|j| BatchOp::Delete { key: format!("k{j}").into_bytes() }));
        ops
    };
    for i in 0..60 {
        model.write(&log, &garbage(i)).unwrap();
    }
    assert!(log.stats().gc_chunks_collected > 10, "{:?}", log.stats());
    let written_before = log.stats().records_written;
    std::thread::scope(|s| {
        let (log, model) = (&log, &model);
        let slow = s.spawn(|| model.write(log, &[BatchOp::Delete { key: slow_key.clone() }]));
        while log.stats().records_written == written_before {
            std::thread::yield_now();
        }
        for i in 0..40 {
            if let Err(err) = model.write(log, &garbage(i)) {
                panic!("write {i} failed: {err} {:?}", log.stats());
            }
        }
        slow.join().unwrap().unwrap();
    });
    assert!(model.snapshot().is_empty());
    log.close().unwrap();
}
