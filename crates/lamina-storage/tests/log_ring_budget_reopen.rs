//! The ring's disk budget can change from one open to the next and never strands data: at
//! the budget, writes that add data are refused with a `NoSpace` naming the option as users
//! set it while deletes and overwrites go on; raised at reopen, the ring grows further;
//! lowered below what the ring holds, new data is refused until deletes make room, and the
//! ring retires segments down to the new budget.

mod log_support;

use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Error};
use lamina_storage::log::{RingLog, RingLogOptions};
use lamina_storage::{MemoryStorage, Storage};
use log_support::{Model, key, open_with_model, small_growable_ring, small_segment_bytes, value};

fn with_budget(segments: u64) -> RingLogOptions {
    let budget = 4096 + segments * small_segment_bytes();
    RingLogOptions { disk_budget_bytes: Some(budget), ..small_growable_ring(Durability::Sync) }
}

/// Puts new 1 KiB keys from `first` on until the budget refuses one; returns the next key.
fn fill(log: &RingLog, model: &Model, first: u64) -> u64 {
    let mut i = first;
    loop {
        match model.write(log, &[BatchOp::Put { key: key(i), value: value(i, 0, 1000) }]) {
            Ok(_) => i += 1,
            Err(err) => {
                assert!(matches!(err, Error::NoSpace { .. }), "{err}");
                let message = err.to_string();
                assert!(message.contains("disk budget"), "{err}");
                for name in [
                    "lamina::Options::disk_budget_bytes",
                    "lamina_options.disk_budget_bytes",
                    "--disk-budget-bytes",
                ] {
                    assert!(message.contains(name), "names {name}: {err}");
                }
                return i;
            }
        }
        assert!(i < first + 100_000, "the budget never refused");
    }
}

fn reopen(
    storage: &Arc<dyn Storage>,
    options: RingLogOptions,
    expected: &Model,
) -> (RingLog, Arc<Model>) {
    let (log, model) = open_with_model(storage.clone(), options).unwrap();
    assert_eq!(model.snapshot(), expected.snapshot(), "every acknowledged write survives");
    (log, model)
}

#[test]
fn a_budget_raised_or_lowered_at_reopen_is_honored_without_stranding_data() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let segment = small_segment_bytes();
    let (log, model) = open_with_model(storage.clone(), with_budget(2)).unwrap();
    let next = fill(&log, &model, 0);
    let at_small_budget = next;
    // At the budget: a delete and an overwrite that does not grow the data still work.
    model.write(&log, &[BatchOp::Delete { key: key(0) }]).unwrap();
    model.write(&log, &[BatchOp::Put { key: key(1), value: value(1, 1, 900) }]).unwrap();
    assert!(log.stats().ring_segments <= 2, "{:?}", log.stats());
    log.close().unwrap();
    drop(log);

    // Raised: the ring grows into the new budget and takes more data.
    let (log, model) = reopen(&storage, with_budget(6), &model);
    let next = fill(&log, &model, next);
    assert!(next - at_small_budget > 2 * at_small_budget, "{next} after {at_small_budget}");
    let stats = log.stats();
    assert!(stats.ring_segments > 2 && stats.ring_segments <= 6, "{stats:?}");
    assert!(stats.file_bytes_allocated <= 4096 + 6 * segment, "{stats:?}");
    log.close().unwrap();
    drop(log);

    // Lowered below what the ring holds: new data is refused at once, deletes are accepted,
    // and as they free whole segments the ring shrinks back into the budget.
    let (log, model) = reopen(&storage, with_budget(2), &model);
    let err = model
        .write(&log, &[BatchOp::Put { key: key(next), value: value(next, 0, 1000) }])
        .unwrap_err();
    assert!(matches!(err, Error::NoSpace { .. }), "{err}");
    for i in 0..next {
        if i % 8 != 0 {
            model.write(&log, &[BatchOp::Delete { key: key(i) }]).unwrap();
        }
    }
    for round in 0..20 {
        for i in (0..next).step_by(8) {
            model
                .write(&log, &[BatchOp::Put { key: key(i), value: value(i, 2 + round, 1000) }])
                .unwrap();
        }
    }
    let stats = log.stats();
    assert!(stats.ring_segments <= 2, "shrunk into the budget: {stats:?}");
    assert!(stats.file_bytes_allocated <= 4096 + 2 * segment, "{stats:?}");
    // Room again for new data.
    model.write(&log, &[BatchOp::Put { key: key(next), value: value(next, 0, 1000) }]).unwrap();
    log.close().unwrap();
    drop(log);
    let (log, _) = reopen(&storage, with_budget(2), &model);
    log.close().unwrap();
}
