//! A panic in the log's flusher thread (a bug, or an engine's liveness oracle panicking
//! during garbage collection) must fail every writer with a clear error, those waiting on
//! the chunk in flight included, never leave them waiting forever; the log then refuses
//! writes and `close` reports the failure.

mod log_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lamina_core::{BatchOp, Durability, Error};
use lamina_storage::log::{LiveRecords, RingLog, SeqNo};
use lamina_storage::{MemoryStorage, Storage};
use log_support::{Model, small_fixed_ring, value};

/// The model's answers, until `armed`: then the first question panics.
struct PanickingOracle {
    model: Arc<Model>,
    armed: AtomicBool,
}

impl LiveRecords for PanickingOracle {
    fn is_current(&self, key: &[u8], seq: SeqNo) -> bool {
        assert!(!self.armed.load(Ordering::Relaxed), "oracle panics on purpose");
        self.model.is_current(key, seq)
    }

    fn live_bytes(&self) -> u64 {
        self.model.live_bytes()
    }
}

#[test]
fn a_panicking_flusher_fails_every_writer_instead_of_hanging_them() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let model = Arc::new(Model::default());
    let oracle = Arc::new(PanickingOracle { model: model.clone(), armed: AtomicBool::new(false) });
    let log =
        RingLog::open(storage, small_fixed_ring(Durability::Sync), oracle.clone(), |_| {}).unwrap();
    let put = |t: u64, i: u64| {
        [BatchOp::Put { key: format!("k{}", i % 8).into_bytes(), value: value(t, i, 3000) }]
    };
    let mut i = 0;
    while log.stats().gc_chunks_collected == 0 {
        model.write(&log, &put(9, i)).unwrap();
        i += 1;
        assert!(i < 10_000, "collection never ran: {:?}", log.stats());
    }
    oracle.armed.store(true, Ordering::Relaxed);
    // Four writers: each must get an error (the one whose flush triggered the panicking
    // collection may still have been acknowledged first), and none may hang.
    let errors: Vec<Error> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..4u64)
            .map(|t| {
                let (log, model) = (&log, &model);
                s.spawn(move || {
                    (0..10_000u64).find_map(|i| model.write(log, &put(t, i)).err()).expect("fails")
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for err in &errors {
        assert!(matches!(err, Error::Io { .. }), "{err}");
        assert!(err.to_string().contains("panicked"), "{err}");
    }
    let closed = log.close().unwrap_err();
    assert!(closed.to_string().contains("panicked"), "{closed}");
}
