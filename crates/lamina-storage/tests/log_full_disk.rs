//! A full disk (ENOSPC from operation N on, for every operation) under both logs and every
//! durability: the write that meets it gets `Error::NoSpace` naming the log's real file (not
//! the `.tmp` name it was created under); once space is back the same handle accepts writes
//! again, `close` succeeds, and nothing acknowledged is lost.

mod log_support;

use std::sync::Arc;
use std::time::Duration;

use lamina_core::{BatchOp, Durability, Error};
use lamina_storage::{FailKind, FaultPlan, FaultyStorage, Storage};
use log_support::{AnyLog, AnyOptions, key, small_growable_ring, small_segments, value};

fn put(i: u64) -> Vec<BatchOp> {
    vec![BatchOp::Put { key: key(i % 50), value: value(i, 0, 1000) }]
}

/// Runs the scenario with the failures starting at operation `fail_at` of a new log
/// (`fresh`) or of one reopened; returns whether a write met the full disk (operations
/// before the workload's end).
fn full_disk_then_space_again(options: &AnyOptions, file: &str, fail_at: u64, fresh: bool) -> bool {
    let plan = FaultPlan::none().fail_at(fail_at, FailKind::NoSpace, true);
    let faulty = if fresh {
        FaultyStorage::in_memory(plan)
    } else {
        let faulty = FaultyStorage::in_memory(FaultPlan::none());
        let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
        // Created and cleanly closed with no fault: the file exists.
        AnyLog::open_with_model(storage, options).unwrap().0.close().unwrap();
        // Operations are counted from the reopen on.
        faulty.reopen_after_crash_with(plan).unwrap()
    };
    let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
    let Ok((log, model)) = AnyLog::open_with_model(storage.clone(), options) else {
        return false; // the disk filled up while the log was opened: nothing to test here
    };
    let buffered = matches!(options, AnyOptions::Ring(o) if o.log.durability != Durability::Sync)
        || matches!(options, AnyOptions::Segments(o) if o.log.durability != Durability::Sync);
    let mut failed = None;
    for i in 0..60 {
        match log.write(&model, &put(i)) {
            Ok(_) => {}
            Err(err) => {
                failed = Some((i, err));
                break;
            }
        }
        if buffered && i % 10 == 9 {
            // Buffered writes meet the full disk at a flush: `sync` reports it.
            if let Err(err) = log.sync() {
                failed = Some((i + 1, err));
                break;
            }
        }
    }
    let Some((i, err)) = failed else {
        log.close().unwrap();
        return false;
    };
    match &err {
        Error::NoSpace { context } => {
            assert!(context.contains(file), "names {file}: {err}");
            assert!(!context.contains(".tmp"), "names a file that does not exist: {err}");
        }
        other => panic!("expected NoSpace, got {other:?}"),
    }
    // Still full: still refused, and the log is not broken for it.
    assert!(matches!(log.write(&model, &put(1000)), Err(Error::NoSpace { .. })));
    faulty.stop_failing();
    // Space is back: the same handle writes again (a buffered one retries its stalled
    // flush first).
    for j in 0..20 {
        log.write(&model, &put(i + 100 + j)).unwrap();
    }
    log.close().unwrap();
    let expected = model.snapshot();
    drop(log);
    // Power off (keeping only what was synced) and reopen: every acknowledged write is
    // there (the model applied exactly the acknowledged ones, and buffered ones were
    // acknowledged before the disk filled).
    let storage: Arc<dyn Storage> = Arc::new(faulty.reopen_after_crash().unwrap());
    let (log, recovered) = AnyLog::open_with_model(storage, options).unwrap();
    assert_eq!(recovered.snapshot(), expected, "fail_at {fail_at}");
    log.close().unwrap();
    true
}

fn every_failure_point(options: &AnyOptions, file: &str) {
    for fresh in [true, false] {
        let hit = (1..60).filter(|&n| full_disk_then_space_again(options, file, n, fresh)).count();
        assert!(hit >= 5, "the disk filled up during the workload only {hit} times");
    }
}

#[test]
fn a_ring_under_sync_recovers_from_a_full_disk() {
    every_failure_point(&AnyOptions::Ring(small_growable_ring(Durability::Sync)), "wal.ring");
}

#[test]
fn a_ring_under_buffered_recovers_from_a_full_disk() {
    let durability = Durability::Buffered { max_delay: Duration::from_millis(1) };
    every_failure_point(&AnyOptions::Ring(small_growable_ring(durability)), "wal.ring");
}

#[test]
fn a_segmented_log_recovers_from_a_full_disk() {
    let options = AnyOptions::Segments(small_segments(1 << 20, Durability::Sync));
    every_failure_point(&options, "wal-0000000000000000.seg");
    let durability = Durability::Buffered { max_delay: Duration::from_millis(1) };
    let options = AnyOptions::Segments(small_segments(1 << 20, durability));
    every_failure_point(&options, "wal-0000000000000000.seg");
}
