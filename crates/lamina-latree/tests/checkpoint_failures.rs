//! A checkpoint that fails (an I/O error or a full disk at each of its storage operations in
//! turn): the engine goes on (a failed log sync excepted, which is sticky), the next
//! checkpoint commits, and nothing acknowledged is lost, through a close or a crash.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{OpenIntent, OrderedIndex};
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::{FailKind, FaultPlan, FaultyStorage};

fn options(intent: OpenIntent) -> LaTreeEngineOptions {
    common::explicit_checkpoint_options(64, intent)
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn put_range(db: &LaTreeEngine, range: std::ops::Range<u32>, model: &mut Model) {
    for i in range {
        let key = format!("key{:06}", i.wrapping_mul(7919) % 100_000).into_bytes();
        if db.put(&key, &i.to_le_bytes()).is_ok() {
            model.insert(key, i.to_le_bytes().to_vec());
        }
    }
}

/// The workload up to the checkpoint under test; returns the storage's op count before it.
fn prepare(storage: &FaultyStorage, model: &mut Model) -> (LaTreeEngine, u64) {
    let db = LaTreeEngine::open(Arc::new(storage.clone()), &options(OpenIntent::CreateIfMissing))
        .unwrap();
    put_range(&db, 0..600, model);
    (db, storage.ops())
}

#[test]
fn every_failure_point_of_a_checkpoint_loses_nothing() {
    // A dry run counts the checkpoint's operations.
    let dry = FaultyStorage::in_memory(FaultPlan::none());
    let (db, before) = prepare(&dry, &mut Model::new());
    db.checkpoint().unwrap();
    let ops = dry.ops() - before;
    assert!(ops >= 4, "a checkpoint writes and syncs ({ops} ops)");
    drop(db);
    let mut retried = 0;
    for kind in [FailKind::Eio, FailKind::NoSpace] {
        for n in before + 1..=before + ops {
            let storage = FaultyStorage::in_memory(FaultPlan::none().fail_at(n, kind, false));
            let mut model = Model::new();
            let (db, at) = prepare(&storage, &mut model);
            assert_eq!(at, before, "the workload is deterministic");
            let first = db.checkpoint();
            put_range(&db, 600..700, &mut model);
            if db.failure().is_none() {
                if first.is_err() {
                    retried += 1;
                }
                db.checkpoint().unwrap();
                db.close().unwrap();
            } else {
                db.crash(); // sticky (the log's sync failed): recovery from the log
            }
            drop(db);
            storage.stop_failing();
            let db = LaTreeEngine::open(Arc::new(storage.clone()), &options(OpenIntent::MustExist))
                .unwrap();
            assert_eq!(lamina_core::testkit::dump(&db), model, "{kind:?} at op {n}");
            db.verify().unwrap();
            db.close().unwrap();
        }
    }
    assert!(retried > 0, "some failed checkpoints were retried without reopening");
}
