//! While a writer is slow to apply, read-ahead collection stops before its chunk, and the
//! other writers' flushes use up the free space ahead of the ring's writer. Collection
//! inside a flush then collects into the carry buffer but cannot write it: the carry chunk
//! needs more than the 8 KiB left, the carry buffer cannot take the next chunk, and the
//! flush fails with `NoSpace` ("full of live records"), sticky, on a ring a third live.
//! (Seen: head 8 KiB short of durable_clean + capacity, carry 8 KiB, 12 KiB collected in
//! the flush.) With a 1 s apply the same test passes. Nothing acknowledged is lost.

mod log_support;

use std::sync::Arc;
use std::time::Duration;

use lamina_core::{BatchOp, Durability};
use lamina_storage::{MemoryStorage, Storage};
use log_support::{Model, open_with, small_fixed_ring, value};

#[test]
fn a_slow_apply_does_not_kill_a_ring_with_room() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_fixed_ring(Durability::Sync);
    let slow_key = b"slow".to_vec();
    let model = Model {
        slow_apply: Some((slow_key.clone(), Duration::from_millis(2500))),
        ..Model::default()
    };
    let (log, model) = open_with(storage, options, model).unwrap();
    // A third of the ring stays live: read-ahead collection fills its carry buffer before it
    // is far enough ahead, so flushes routinely collect inside the flush.
    for i in 0..120u64 {
        let key = format!("cold{i:04}").into_bytes();
        model.write(&log, &[BatchOp::Put { key, value: value(i, 0, 1000) }]).unwrap();
    }
    // One write buffer per write: every chunk is 5 blocks.
    let hot = |i: u64| -> Vec<BatchOp> {
        (0..4)
            .map(|j| BatchOp::Put { key: format!("hot{j}").into_bytes(), value: value(i, j, 3900) })
            .collect()
    };
    for i in 0..200 {
        model.write(&log, &hot(i)).unwrap();
    }
    assert!(log.stats().gc_chunks_collected > 50, "{:?}", log.stats());
    let written_before = log.stats().records_written;
    std::thread::scope(|s| {
        let (log, model) = (&log, &model);
        let slow = s.spawn(|| {
            model.write(log, &[BatchOp::Put { key: slow_key.clone(), value: value(7, 7, 40) }])
        });
        // The slow write is durable, its writer still applying: keep writing.
        while log.stats().records_written == written_before {
            std::thread::yield_now();
        }
        for i in 0..200 {
            if let Err(err) = model.write(log, &hot(i)) {
                panic!("write {i} failed while the slow writer applies: {err} {:?}", log.stats());
            }
        }
        slow.join().unwrap().unwrap();
    });
    log.close().unwrap();
}
