//! Crash safety of a ring that grows and shrinks: a workload that takes the smallest ring
//! past half live (the ring appends segments), deletes most of it (the ring retires
//! segments: punched out), and keeps overwriting (collection laps what is left), crashing at
//! every storage operation in turn (torn writes included, a share of unsynced writes
//! surviving). After recovery the state is exactly the acknowledged writes, or those plus
//! the one in flight, and the recovered ring takes writes and reopens again.

mod log_support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use lamina_core::{BatchOp, Durability, Result};
use lamina_storage::log::RingLogOptions;
use lamina_storage::{FaultPlan, Storage, for_each_crash_point};
use log_support::{key, open_with_model, small_growable_ring, value};

type Content = BTreeMap<Vec<u8>, Vec<u8>>;

// Chunks of two blocks: a segment holds 54, the first two visits 108 puts, after which
// the live records are past half the ring.
const PUTS: u64 = 120;
const DELETES: u64 = 100;
const OVERWRITES: u64 = 40;

/// Step `i` of the workload: one record (a batch of two puts or deletes, or one put).
fn step(i: u64) -> Vec<BatchOp> {
    let pair = |j: u64| [key(2 * j), key(2 * j + 1)];
    if i < PUTS {
        pair(i).map(|k| BatchOp::Put { key: k, value: value(i, 0, 4000) }).to_vec()
    } else if i < PUTS + DELETES {
        pair(i - PUTS).map(|k| BatchOp::Delete { key: k }).to_vec()
    } else {
        let k = 2 * PUTS - 1 - (i % 8);
        vec![BatchOp::Put { key: key(k), value: value(k, i, 3000) }]
    }
}

fn apply(content: &mut Content, ops: &[BatchOp]) {
    for op in ops {
        match op {
            BatchOp::Put { key, value } => {
                content.insert(key.clone(), value.clone());
            }
            BatchOp::Delete { key } => {
                content.remove(key);
            }
        }
    }
}

fn options(durability: Durability) -> RingLogOptions {
    small_growable_ring(durability)
}

#[test]
fn a_growing_and_shrinking_ring_survives_a_crash_at_every_operation() {
    crash_everywhere(Durability::Sync);
}

/// Under `Buffered` durability a crash may lose acknowledged writes, but only a suffix: the
/// recovered state is the history up to some step.
#[test]
fn a_growing_and_shrinking_buffered_ring_recovers_a_prefix_after_a_crash_at_every_operation() {
    crash_everywhere(Durability::Buffered { max_delay: std::time::Duration::from_millis(1) });
}

fn crash_everywhere(durability: Durability) {
    // States after 0, 1, 2, ... acknowledged steps.
    let states: Arc<Mutex<Vec<Content>>> = Arc::default();
    let grown_and_retired = Arc::new(Mutex::new((0, 0)));
    let plan = FaultPlan::none().with_seed(11).unsynced_survival(30);
    let runs = for_each_crash_point(
        &plan,
        |_| Ok(()),
        |storage| {
            let mut history = vec![Content::new()];
            let result = (|| -> Result<()> {
                let (log, model) = open_with_model(storage.clone(), options(durability))?;
                let mut content = Content::new();
                for i in 0..PUTS + DELETES + OVERWRITES {
                    let ops = step(i);
                    model.write(&log, &ops)?;
                    apply(&mut content, &ops);
                    history.push(content.clone());
                }
                let stats = log.stats();
                *grown_and_retired.lock().unwrap() =
                    (stats.ring_segments_grown, stats.ring_segments_retired);
                log.close()
            })();
            *states.lock().unwrap() = history;
            result
        },
        |storage, crash_op| check(storage, durability, &states.lock().unwrap(), crash_op),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (grown, retired) = *grown_and_retired.lock().unwrap();
    assert!(grown > 0 && retired > 0, "the ring must grow and shrink: {grown} {retired}");
    assert!(runs.crash_points > 100, "{runs:?}");
}

fn check(
    storage: &Arc<dyn Storage>,
    durability: Durability,
    history: &[Content],
    crash_op: u64,
) -> Result<()> {
    let acked = history.len() - 1;
    let (log, model) = open_with_model(storage.clone(), options(durability))?;
    let recovered = model.snapshot();
    let in_flight = (acked as u64) < PUTS + DELETES + OVERWRITES;
    let mut next = history[acked].clone();
    if in_flight {
        apply(&mut next, &step(acked as u64));
    }
    if durability == Durability::Sync {
        assert!(
            recovered == history[acked] || (in_flight && recovered == next),
            "crash at op {crash_op}: the recovered state is neither the {acked} acknowledged \
             steps nor those plus the one in flight"
        );
    } else {
        assert!(
            history.contains(&recovered) || (in_flight && recovered == next),
            "crash at op {crash_op}: the recovered state is no prefix of the history"
        );
    }
    // The recovered ring takes writes and reopens with them.
    model.write(&log, &[BatchOp::Put { key: b"after".to_vec(), value: b"crash".to_vec() }])?;
    let expected = model.snapshot();
    log.close()?;
    drop(log);
    let (log, model) = open_with_model(storage.clone(), options(durability))?;
    assert_eq!(model.snapshot(), expected, "second reopen after a crash at op {crash_op}");
    log.close()
}
