//! Crash tests of the group-commit log: a scripted multi-threaded workload against the
//! `faulty` backend, crashing at every storage operation (every write, sync, rename, read)
//! in turn, torn writes included, with a share of unsynced writes surviving the crash. After recovery: every write acknowledged under `Sync` is
//! present, the state is exactly the acknowledged history applied in sequence order (a
//! prefix of it: under `Sync` nothing unacknowledged can be durable), nothing is torn, and
//! the recovered log accepts new writes and reopens again.

mod log_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Error, Result};
use lamina_storage::crash_points::for_each_crash_point;
use lamina_storage::log::SeqNo;
use lamina_storage::{FaultPlan, Storage};
use log_support::{
    AnyLog, AnyOptions, Model, key, record_ops, small_fixed_ring, small_log, small_segment_bytes,
    small_segments, value,
};
use parking_lot::Mutex;

/// Writes acknowledged (with their sequence numbers), and the writes in flight when the
/// crash struck (at most one per thread: the one that failed).
#[derive(Debug, Default)]
struct History {
    acked: Vec<(SeqNo, Vec<BatchOp>)>,
    in_flight: Vec<Vec<BatchOp>>,
    /// Chunk bytes and garbage-collected chunks of the last run that completed.
    completed: Option<(u64, u64)>,
}

type Acked = Arc<Mutex<History>>;

/// What thread `thread` writes as its `i`-th operation over `keys` keys.
type Script = fn(u64, u64, u64) -> Vec<BatchOp>;

fn script(thread: u64, i: u64, keys: u64) -> Vec<BatchOp> {
    let k = key((thread * 7 + i * 3) % keys);
    match i % 6 {
        2 => vec![BatchOp::Delete { key: k }],
        4 => vec![
            BatchOp::Put { key: k.clone(), value: value(thread, i, 20) },
            BatchOp::Put { key: key((i + 1) % keys), value: value(thread, i, 300) },
        ],
        _ => vec![BatchOp::Put { key: k, value: value(thread, i, 100 + (i as usize * 97) % 900) }],
    }
}

/// [`script`], and every fourth operation a batch of about 27 KiB, larger than the small
/// logs' 16 KiB write buffer, so that it is logged in parts (no key twice in it: the log
/// keeps only the last operation on a key, and the check compares operations).
fn script_with_large_batches(thread: u64, i: u64, keys: u64) -> Vec<BatchOp> {
    if i % 4 != 3 {
        return script(thread, i, keys);
    }
    let mut ops: Vec<BatchOp> = (0..30u64)
        .map(|j| BatchOp::Put {
            key: format!("large{thread}-{j:02}").into_bytes(),
            value: value(thread, i * 100 + j, 900),
        })
        .collect();
    ops.push(BatchOp::Delete { key: key((thread + i) % keys) });
    ops
}

fn workload(
    storage: &Arc<dyn Storage>,
    options: &AnyOptions,
    acked: &Acked,
    (threads, per_thread, keys): (u64, u64, u64),
    script: Script,
) -> Result<()> {
    let completed = acked.lock().completed;
    *acked.lock() = History { completed, ..History::default() };
    let (log, model) = AnyLog::open_with_model(storage.clone(), options)?;
    let first_error: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (log, model, acked, first_error) = (&log, &model, acked, &first_error);
            s.spawn(move || {
                for i in 0..per_thread {
                    let ops = script(t, i, keys);
                    match log.write(model, &ops) {
                        Ok(seq) => acked.lock().acked.push((seq, ops)),
                        Err(err) => {
                            acked.lock().in_flight.push(ops);
                            first_error.lock().get_or_insert(err);
                            return;
                        }
                    }
                }
            });
        }
    });
    match first_error.into_inner() {
        Some(err) => {
            log.abandon();
            Err(err)
        }
        None => {
            let stats = log.stats();
            acked.lock().completed = Some((stats.bytes_written, stats.gc_chunks_collected));
            log.close()
        }
    }
}

fn apply_in_order(mut records: Vec<(SeqNo, Vec<BatchOp>)>) -> BTreeMap<Vec<u8>, Vec<u8>> {
    records.sort_by_key(|(seq, _)| *seq);
    let mut map = BTreeMap::new();
    for (seq, ops) in &records {
        for op in ops {
            Model::apply_op(&mut map, *seq, op);
        }
    }
    map.into_iter().filter_map(|(k, (_, v))| Some((k, v?))).collect()
}

fn check(
    storage: &Arc<dyn Storage>,
    options: &AnyOptions,
    history: &Acked,
    crash_op: u64,
    contiguous: bool,
) -> Result<()> {
    let history = history.lock();
    let acked: BTreeMap<SeqNo, Vec<BatchOp>> = history.acked.iter().cloned().collect();
    let acked_max = acked.keys().max().copied().unwrap_or(0);
    let model = Arc::new(Model::default());
    let mut recovered = Vec::new();
    let log = AnyLog::open(storage.clone(), options, &model, |record| {
        recovered.push((record.seq, record_ops(&record.op)));
    })?;
    // Records recovered beyond the acknowledged ones: whole writes that were in flight (a
    // chunk that reached the medium before its sync), all after every acknowledged write.
    // The ring's garbage collection carries a batch's live puts forward as records of their
    // own (same sequence number), so the records of one sequence number are taken together.
    let mut by_seq: BTreeMap<SeqNo, Vec<BatchOp>> = BTreeMap::new();
    for (seq, ops) in &recovered {
        by_seq.entry(*seq).or_default().extend(ops.iter().cloned());
    }
    let keys = |ops: &[BatchOp]| -> Vec<String> {
        ops.iter().map(|op| String::from_utf8_lossy(op.key()).into_owned()).collect()
    };
    let mut in_flight = Vec::new();
    for (seq, ops) in &by_seq {
        match acked.get(seq) {
            // Collection drops what later writes superseded: what is left must be the
            // write's own operations (the final state is compared below).
            Some(acked_ops) => assert!(
                ops == acked_ops || (!contiguous && ops.iter().all(|op| acked_ops.contains(op))),
                "record {seq} changed (crash op {crash_op}): keys {:?} became {:?}",
                keys(acked_ops),
                keys(ops)
            ),
            // Never applied, so never carried: whole, as written.
            None => {
                assert!(
                    *seq > acked_max,
                    "unacknowledged record {seq} before acknowledged {acked_max}"
                );
                assert!(
                    history.in_flight.contains(ops),
                    "record {seq} was never written whole (crash op {crash_op}): {:?}",
                    keys(ops)
                );
                in_flight.push((*seq, ops.clone()));
            }
        }
    }
    if contiguous {
        let seqs: Vec<SeqNo> = recovered.iter().map(|(seq, _)| *seq).collect();
        let prefix: Vec<SeqNo> = (1..=seqs.len() as u64).collect();
        assert_eq!(seqs, prefix, "recovered records are not a prefix (crash op {crash_op})");
    }
    let mut expected_records: Vec<_> = history.acked.clone();
    expected_records.extend(in_flight);
    let mut expected = apply_in_order(expected_records);
    assert_eq!(model.snapshot(), expected, "after a crash at operation {crash_op}");
    // The recovered log is writable and reopens with the new write.
    log.write(&model, &[BatchOp::Put { key: b"after".to_vec(), value: b"crash".to_vec() }])?;
    expected.insert(b"after".to_vec(), b"crash".to_vec());
    log.close()?;
    drop(log);
    let (log, model) = AnyLog::open_with_model(storage.clone(), options)?;
    assert_eq!(model.snapshot(), expected, "second reopen after a crash at operation {crash_op}");
    log.close()
}

/// The fault plan's seed (torn-write lengths): `LAMINA_CRASH_SEED` or the test's default.
fn seed(default: u64) -> u64 {
    std::env::var("LAMINA_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn crash_everywhere(
    options: &AnyOptions,
    shape: (u64, u64, u64),
    (seed, unsynced_survival_percent): (u64, u8),
    contiguous: bool,
    script: Script,
) -> (u64, u64) {
    let acked: Acked = Arc::default();
    let plan = FaultPlan::none().with_seed(seed).unsynced_survival(unsynced_survival_percent);
    let runs = for_each_crash_point(
        &plan,
        |_| Ok(()),
        |storage| workload(storage, options, &acked, shape, script),
        |storage, crash_op| check(storage, options, &acked, crash_op, contiguous),
    )
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(runs.crash_points > 20, "{runs:?}");
    let completed = acked.lock().completed.expect("the last run completes");
    eprintln!("{runs:?}, chunk bytes and chunks collected of a full run: {completed:?}");
    completed
}

#[test]
fn truncate_log_survives_a_crash_at_every_operation() {
    // Segments of one maximal chunk: the workload rolls to new segment files often, so
    // crashes strike file creation, renames and directory syncs too.
    let segment_bytes = small_log(Durability::Sync).chunk_bytes_max();
    let options = AnyOptions::Segments(small_segments(segment_bytes, Durability::Sync));
    crash_everywhere(&options, (4, 25, 12), (seed(1), 30), true, script);
}

#[test]
fn cyclic_log_survives_a_crash_at_every_operation() {
    // The smallest ring: the workload laps it several times, so crashes strike garbage
    // collection reads and overwrites of collected regions.
    let options = AnyOptions::Ring(small_fixed_ring(Durability::Sync));
    let (bytes, collected) = crash_everywhere(&options, (3, 200, 16), (seed(2), 50), false, script);
    let capacity_bytes = small_segment_bytes();
    assert!(bytes > capacity_bytes * 3 / 2 && collected > 100, "the workload must lap the ring");
}

/// An I/O error (EIO or ENOSPC) at any operation fails the writers waiting on it with a
/// clear error (EIO: every waiter of every generation, and the log refuses further writes);
/// reopening finds every acknowledged write.
#[test]
fn io_errors_fail_every_waiter_and_lose_nothing_acknowledged() {
    let options = AnyOptions::Ring(small_fixed_ring(Durability::Sync));
    io_errors_at_every_operation(&options, (4, 15, 8), script, 60);
}

/// The same with batches in parts: a part's chunk that fails (ENOSPC: rejected, the log goes
/// on; EIO: the log fails) fails its batch, which is then never recovered in part.
#[test]
fn io_errors_never_tear_a_batch_in_parts() {
    let segment_bytes = small_log(Durability::Sync).chunk_bytes_max();
    for options in [
        AnyOptions::Ring(small_fixed_ring(Durability::Sync)),
        AnyOptions::Segments(small_segments(segment_bytes, Durability::Sync)),
    ] {
        io_errors_at_every_operation(&options, (2, 16, 8), script_with_large_batches, 50);
    }
}

fn io_errors_at_every_operation(
    options: &AnyOptions,
    shape: (u64, u64, u64),
    script: Script,
    ops: u64,
) {
    use lamina_storage::{FailKind, FaultyStorage};
    for (op, kind) in (1..=ops).flat_map(|op| [(op, FailKind::Eio), (op, FailKind::NoSpace)]) {
        let faulty = FaultyStorage::in_memory(FaultPlan::none().fail_at(op, kind, false));
        let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
        let acked: Acked = Arc::default();
        let result = workload(&storage, options, &acked, shape, script);
        if let Err(err) = &result {
            match kind {
                FailKind::NoSpace => assert!(matches!(err, Error::NoSpace { .. }), "{err}"),
                FailKind::Eio => assert!(matches!(err, Error::Io { .. }), "{err}"),
            }
        }
        let expected = apply_in_order(acked.lock().acked.clone());
        // Power off (keeping only what was synced) and reopen without faults.
        let storage: Arc<dyn Storage> = Arc::new(faulty.reopen_after_crash().unwrap());
        let (log, model) = AnyLog::open_with_model(storage, options)
            .unwrap_or_else(|e| panic!("op {op} {kind:?}: reopen failed: {e}"));
        let recovered = model.snapshot();
        // Everything acknowledged is there (a failed flush may still have reached the medium).
        for (k, v) in &expected {
            if recovered.get(k) != Some(v) {
                // Only a later in-flight write of the same key may shadow it.
                let shadowed = acked.lock().in_flight.iter().flatten().any(|op| op.key() == k);
                assert!(shadowed, "op {op} {kind:?}: lost {k:?}");
            }
        }
        assert_no_torn_batch(&recovered, &format!("op {op} {kind:?}"));
        log.close().unwrap();
    }
}

/// Every key `large{thread}-..` of [`script_with_large_batches`] holds a value of the same
/// batch (its operation number, `value`'s round / 100): a batch is all or nothing.
fn assert_no_torn_batch(state: &BTreeMap<Vec<u8>, Vec<u8>>, when: &str) {
    let mut batch_of_thread: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in state {
        let key = String::from_utf8_lossy(k);
        let Some(thread) = key.strip_prefix("large").and_then(|rest| rest.split('-').next()) else {
            continue;
        };
        let value = String::from_utf8_lossy(v);
        let round: u64 = value.split(':').nth(1).and_then(|r| r.parse().ok()).expect("a round");
        let batch = (round / 100).to_string();
        let first = batch_of_thread.entry(thread.to_string()).or_insert_with(|| batch.clone());
        assert_eq!(*first, batch, "{when}: {key} is from another batch than its thread's others");
    }
    for thread in batch_of_thread.keys() {
        let count =
            state.keys().filter(|k| k.starts_with(format!("large{thread}-").as_bytes())).count();
        assert_eq!(count, 30, "{when}: a batch of thread {thread} is partly there");
    }
}

/// Under `Buffered` durability an acknowledged write may be lost in a crash, but only as part
/// of a suffix: the recovered state is the history applied up to some sequence number.
fn check_prefix(
    storage: &Arc<dyn Storage>,
    options: &AnyOptions,
    history: &Acked,
    crash_op: u64,
) -> Result<()> {
    let history = history.lock();
    let model = Arc::new(Model::default());
    let mut max_seq = 0;
    let mut by_seq: BTreeMap<SeqNo, Vec<BatchOp>> = BTreeMap::new();
    let log = AnyLog::open(storage.clone(), options, &model, |record| {
        max_seq = max_seq.max(record.seq);
        by_seq.entry(record.seq).or_default().extend(record_ops(&record.op));
    })?;
    let mut prefix: Vec<_> =
        history.acked.iter().filter(|(seq, _)| *seq <= max_seq).cloned().collect();
    // A batch in parts is acknowledged only once durable: one that failed (the crash) may
    // still have reached the log, whole.
    let acked: BTreeMap<SeqNo, &Vec<BatchOp>> =
        history.acked.iter().map(|(s, o)| (*s, o)).collect();
    for (seq, ops) in by_seq {
        if !acked.contains_key(&seq) {
            assert!(
                history.in_flight.contains(&ops),
                "record {seq} was never written whole (crash op {crash_op})"
            );
            prefix.push((seq, ops));
        }
    }
    let (recovered, expected) = (model.snapshot(), apply_in_order(prefix));
    let differ: Vec<String> = recovered
        .keys()
        .chain(expected.keys())
        .filter(|k| recovered.get(*k) != expected.get(*k))
        .map(|k| {
            let side = if recovered.contains_key(k) { "+" } else { "-" };
            format!("{side}{}", String::from_utf8_lossy(k))
        })
        .collect();
    assert!(
        differ.is_empty(),
        "not the history up to {max_seq} after a crash at operation {crash_op}: keys {differ:?} \
         differ"
    );
    log.close()
}

#[test]
fn buffered_cyclic_log_recovers_a_prefix_after_a_crash_at_every_operation() {
    let durability = Durability::Buffered { max_delay: std::time::Duration::from_millis(1) };
    let options = AnyOptions::Ring(small_fixed_ring(durability));
    let acked: Acked = Arc::default();
    let plan = FaultPlan::none().with_seed(seed(3)).unsynced_survival(50);
    let runs = for_each_crash_point(
        &plan,
        |_| Ok(()),
        |storage| workload(storage, &options, &acked, (3, 600, 16), script),
        |storage, crash_op| check_prefix(storage, &options, &acked, crash_op),
    )
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(runs.crash_points > 20, "{runs:?}");
    let (bytes, collected) = acked.lock().completed.expect("the last run completes");
    let capacity_bytes = small_segment_bytes();
    assert!(
        bytes > capacity_bytes * 3 / 2 && collected > 20,
        "must lap the ring: {bytes} {collected}"
    );
}

#[test]
fn buffered_truncate_log_recovers_a_prefix_after_a_crash_at_every_operation() {
    let durability = Durability::Buffered { max_delay: std::time::Duration::from_millis(1) };
    let segment_bytes = small_log(durability).chunk_bytes_max();
    let options = AnyOptions::Segments(small_segments(segment_bytes, durability));
    let acked: Acked = Arc::default();
    let plan = FaultPlan::none().with_seed(seed(4)).unsynced_survival(50);
    let runs = for_each_crash_point(
        &plan,
        |_| Ok(()),
        |storage| workload(storage, &options, &acked, (3, 100, 16), script),
        |storage, crash_op| check_prefix(storage, &options, &acked, crash_op),
    )
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(runs.crash_points > 20, "{runs:?}");
}

/// Batches larger than the write buffer, logged in parts, under `Sync`: a crash at any
/// operation recovers each one whole or not at all (an acknowledged one whole), and the
/// records after a dropped one never reuse its sequence number.
#[test]
fn batches_in_parts_survive_a_crash_at_every_operation_of_the_truncate_log() {
    let segment_bytes = small_log(Durability::Sync).chunk_bytes_max();
    let segments = AnyOptions::Segments(small_segments(segment_bytes, Durability::Sync));
    crash_everywhere(&segments, (2, 12, 12), (seed(5), 30), true, script_with_large_batches);
}

#[test]
fn batches_in_parts_survive_a_crash_at_every_operation_of_the_cyclic_log() {
    let ring = AnyOptions::Ring(small_fixed_ring(Durability::Sync));
    crash_everywhere(&ring, (2, 40, 12), (seed(6), 50), false, script_with_large_batches);
}

/// The same under `Buffered`: the recovered state is the history up to some sequence number,
/// batches whole.
fn buffered_batches_in_parts_recover_a_prefix(options: &AnyOptions, seed: u64) {
    let acked: Acked = Arc::default();
    let plan = FaultPlan::none().with_seed(seed).unsynced_survival(50);
    let runs = for_each_crash_point(
        &plan,
        |_| Ok(()),
        |storage| workload(storage, options, &acked, (2, 24, 12), script_with_large_batches),
        |storage, crash_op| check_prefix(storage, options, &acked, crash_op),
    )
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(runs.crash_points > 20, "{runs:?}");
}

#[test]
fn buffered_batches_in_parts_recover_a_prefix_of_the_truncate_log() {
    let durability = Durability::Buffered { max_delay: std::time::Duration::from_millis(1) };
    let segment_bytes = small_log(durability).chunk_bytes_max();
    let options = AnyOptions::Segments(small_segments(segment_bytes, durability));
    buffered_batches_in_parts_recover_a_prefix(&options, seed(7));
}

#[test]
fn buffered_batches_in_parts_recover_a_prefix_of_the_cyclic_log() {
    let durability = Durability::Buffered { max_delay: std::time::Duration::from_millis(1) };
    buffered_batches_in_parts_recover_a_prefix(
        &AnyOptions::Ring(small_fixed_ring(durability)),
        seed(8),
    );
}
