//! A log over storage that asks for lockstep (`Storage::lockstep`, the deterministic
//! simulation's): no timer starts a flush or retries a stalled one, so the storage
//! operations of a run follow from the caller's calls alone. Counted with the faulty
//! storage's operation counter (deterministic); the sleeps only give a timer the chance to
//! fire, nothing is asserted about how long anything took.

use std::sync::Arc;
use std::time::Duration;

use lamina_core::{Durability, Error};
use lamina_storage::log::{LogOp, LogOptions, SegmentLog, SegmentLogOptions};
use lamina_storage::{FailKind, FaultPlan, FaultyStorage, Storage};

/// Longer than every timer of the log (the `Buffered` deadline below, the 100 ms retry of a
/// stalled flush).
const TIMERS_FIRE: Duration = Duration::from_millis(300);

fn options() -> SegmentLogOptions {
    SegmentLogOptions {
        log: LogOptions {
            durability: Durability::Buffered { max_delay: Duration::from_millis(1) },
            ..LogOptions::default()
        },
        ..SegmentLogOptions::default()
    }
}

fn open(plan: FaultPlan, lockstep: bool) -> (FaultyStorage, SegmentLog) {
    let faulty = FaultyStorage::in_memory(plan);
    faulty.set_lockstep(lockstep);
    let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
    assert_eq!(storage.lockstep(), lockstep);
    let log = SegmentLog::open(storage, options(), |_| {}).unwrap();
    (faulty, log)
}

fn put(log: &SegmentLog, i: u32) {
    log.append(LogOp::Put { key: &i.to_be_bytes(), value: b"value" }).unwrap();
}

#[test]
fn no_timer_flushes_in_lockstep() {
    let (faulty, log) = open(FaultPlan::none(), true);
    let opened = faulty.ops();
    put(&log, 1);
    std::thread::sleep(TIMERS_FIRE);
    assert_eq!(faulty.ops(), opened, "a timer flushed the buffer");
    log.sync().unwrap();
    assert_eq!(faulty.ops(), opened + 3, "the sync writes and syncs one chunk, then its mark");
    log.close().unwrap();
}

#[test]
fn without_lockstep_the_deadline_flushes() {
    // The control of the test above: the same calls on ordinary storage.
    // Polled, not timed: a loaded machine may schedule the flusher late, never not at all.
    let (faulty, log) = open(FaultPlan::none(), false);
    let opened = faulty.ops();
    put(&log, 1);
    let mut polls = 0;
    while faulty.ops() < opened + 3 && polls < 1000 {
        std::thread::sleep(Duration::from_millis(10));
        polls += 1;
    }
    // A chunk's write and sync, then its synced mark (`docs/format/log.md`).
    assert_eq!(faulty.ops(), opened + 3, "the deadline flushed the buffer, nothing else");
    log.close().unwrap();
}

#[test]
fn a_stalled_flush_is_retried_only_when_asked() {
    // Where the first flush's write lands: after the operations of opening the log.
    let opened = open(FaultPlan::none(), true).0.ops();
    let plan = FaultPlan::none().fail_at(opened + 1, FailKind::NoSpace, true);
    let (faulty, log) = open(plan, true);
    assert_eq!(faulty.ops(), opened);
    put(&log, 1);
    let err = log.sync().unwrap_err();
    assert!(matches!(err, Error::NoSpace { .. }), "{err:?}");
    assert_eq!(faulty.ops(), opened + 1, "one write, refused");
    std::thread::sleep(TIMERS_FIRE);
    assert_eq!(faulty.ops(), opened + 1, "a timer retried the stalled flush");
    // A sync that finds the stall asks for one retry: still full, refused again.
    assert!(matches!(log.sync(), Err(Error::NoSpace { .. })));
    assert_eq!(faulty.ops(), opened + 2);
    faulty.stop_failing();
    // Space is back: the next sync's retry writes and syncs the kept buffer (and its mark).
    log.sync().unwrap();
    assert_eq!(faulty.ops(), opened + 5);
    put(&log, 2);
    log.close().unwrap();
}
