//! The group-commit log: appends from many threads, reopen, retention, bad input.

mod log_support;

use std::sync::Arc;
use std::time::Duration;

use lamina_core::{BatchOp, Durability, Error, WriteBatch};
use lamina_storage::log::chunk::FileHeader;
use lamina_storage::log::synced_mark::{SYNCED_MARK_BYTES, SYNCED_MARK_OFFSETS};
use lamina_storage::log::{
    LogOp, Record, RecordOp, RingLog, RingLogOptions, SegmentLog, SegmentLogOptions,
};
use lamina_storage::{MemoryStorage, OpenMode, Storage};
use log_support::{
    Model, key, open_segments_with_model, open_with_model, small_fixed_ring, small_segment_bytes,
    small_segments, value,
};

fn collect(storage: Arc<dyn Storage>, options: SegmentLogOptions) -> Vec<Record> {
    let mut records = Vec::new();
    let log = SegmentLog::open(storage, options, |r| records.push(r)).unwrap();
    log.close().unwrap();
    records
}

#[test]
fn concurrent_appends_survive_reopen_in_sequence_order() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_segments(64 * 1024, Durability::Sync);
    let (log, model) = open_segments_with_model(storage.clone(), options.clone()).unwrap();
    std::thread::scope(|s| {
        for t in 0..6u64 {
            let (log, model) = (&log, &model);
            s.spawn(move || {
                for i in 0..150u64 {
                    let k = key(t * 1000 + i % 40);
                    let ops = match i % 7 {
                        3 => vec![BatchOp::Delete { key: k }],
                        5 => vec![
                            BatchOp::Put { key: k.clone(), value: value(t, i, 50) },
                            BatchOp::Put { key: key(t * 1000 + 999), value: value(t, i, 10) },
                            BatchOp::Delete { key: k },
                        ],
                        _ => vec![BatchOp::Put { key: k, value: value(t, i, 100) }],
                    };
                    model.write_segments(log, &ops).unwrap();
                }
            });
        }
    });
    let stats = log.stats();
    assert_eq!(stats.appends, 900);
    assert_eq!(stats.records_written, 900);
    assert!(stats.syncs <= 900);
    assert!(stats.segments > 1, "64 KiB segments must roll: {stats:?}");
    let expected = model.snapshot();
    log.close().unwrap();
    assert!(matches!(log.append(LogOp::Delete { key: b"x" }), Err(Error::Closed)));
    log.close().unwrap(); // idempotent

    let records = collect(storage.clone(), options.clone());
    assert_eq!(records.len(), 900);
    assert!(records.windows(2).all(|w| w[0].seq < w[1].seq), "replay is in sequence order");
    assert_eq!(records.first().unwrap().seq, 1);
    let (log, model) = open_segments_with_model(storage, options).unwrap();
    assert_eq!(model.snapshot(), expected);
    // Sequence numbers continue after reopen.
    assert_eq!(log.append(LogOp::Delete { key: b"k" }).unwrap(), 901);
}

#[test]
fn truncate_removes_old_segments_only() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_segments(40 * 1024, Durability::Sync);
    let log = SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap();
    let mut last = 0;
    for i in 0..100u64 {
        last = log.append(LogOp::Put { key: &key(i), value: &value(i, 0, 200) }).unwrap();
    }
    let before = log.stats().segments;
    assert!(before >= 3, "{before}");
    assert_eq!(log.truncate(0).unwrap(), 0);
    let removed = log.truncate(last / 2).unwrap();
    assert!(removed >= 1 && (removed as u64) < before);
    assert_eq!(log.stats().segments, before - removed as u64);
    log.close().unwrap();
    let records = collect(storage.clone(), options.clone());
    // Every record above the truncation point is still there; maybe a few below it.
    assert!(records.iter().filter(|r| r.seq > last / 2).count() as u64 == last - last / 2);
    assert_eq!(records.last().unwrap().seq, last);
    // A committed state that still needs a removed record is refused, before any change.
    let refused = SegmentLog::open_committed(storage.clone(), options.clone(), 1, |_| {});
    let err = refused.unwrap_err();
    assert!(matches!(err, lamina_core::Error::Corruption { .. }), "{err:?}");
    assert!(err.to_string().contains("the log starts after"), "{err}");
    let log = SegmentLog::open_committed(storage.clone(), options.clone(), last / 2, |_| {});
    log.unwrap().close().unwrap();
    // Truncating everything keeps the newest segment, and the log keeps working.
    let log = SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap();
    log.truncate(u64::MAX).unwrap();
    assert_eq!(log.stats().segments, 1);
    assert_eq!(log.append(LogOp::Delete { key: b"z" }).unwrap(), last + 1);
    log.close().unwrap();
    assert_eq!(collect(storage, options).last().unwrap().seq, last + 1);
}

#[test]
fn cyclic_log_collects_garbage_within_its_budget() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let capacity_bytes = small_segment_bytes();
    let options = small_fixed_ring(Durability::Sync);
    let (log, model) = open_with_model(storage.clone(), options.clone()).unwrap();
    // 60 live keys overwritten over and over: many laps of the ring.
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (log, model) = (&log, &model);
            s.spawn(move || {
                for i in 0..400u64 {
                    let k = key((t * 15 + i) % 60);
                    let ops = if i % 11 == 0 {
                        vec![BatchOp::Delete { key: k }]
                    } else if i % 13 == 0 {
                        vec![
                            BatchOp::Put { key: k.clone(), value: value(t, i, 30) },
                            BatchOp::Put { key: k, value: value(t, i, 90) },
                        ]
                    } else {
                        vec![BatchOp::Put { key: k, value: value(t, i, 100 + (i as usize % 200)) }]
                    };
                    model.write(log, &ops).unwrap();
                }
            });
        }
    });
    let stats = log.stats();
    assert!(stats.bytes_written > 2 * capacity_bytes, "must wrap around: {stats:?}");
    assert!(stats.gc_chunks_collected > 0 && stats.gc_records_dropped > 0, "{stats:?}");
    assert!(stats.disk_bytes <= capacity_bytes);
    let ring_len = storage.open("wal.ring", OpenMode::Existing).unwrap().len().unwrap();
    assert_eq!(ring_len, 4096 + capacity_bytes, "the budget keeps it at one segment");
    let expected = model.snapshot();
    log.close().unwrap();
    let (log, model) = open_with_model(storage.clone(), options.clone()).unwrap();
    assert_eq!(model.snapshot(), expected);
    // And again after more writes.
    for i in 0..200u64 {
        model.write(&log, &[BatchOp::Put { key: key(i % 60), value: value(9, i, 64) }]).unwrap();
    }
    let expected = model.snapshot();
    log.close().unwrap();
    let (_log, model) = open_with_model(storage, options).unwrap();
    assert_eq!(model.snapshot(), expected);
}

#[test]
fn cyclic_log_at_its_budget_is_no_space_for_new_data_and_loses_nothing() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_fixed_ring(Durability::Sync);
    let (log, model) = open_with_model(storage.clone(), options.clone()).unwrap();
    // Distinct keys of 1 KiB: all live; the ring must fill up.
    let mut acked = 0u64;
    let err = loop {
        match model.write(&log, &[BatchOp::Put { key: key(acked), value: value(acked, 0, 1024) }]) {
            Ok(_) => acked += 1,
            Err(err) => break err,
        }
        assert!(acked < 10_000, "a bounded ring cannot take unbounded live data");
    };
    assert!(matches!(err, Error::NoSpace { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("disk budget") && message.contains("--disk-budget-bytes"), "{err}");
    assert!(!message.contains("capacity_bytes"), "an option nobody can set: {err}");
    // Not sticky: deletes and overwrites that do not grow the data are accepted, and the
    // space a delete frees takes a new key again.
    model.write(&log, &[BatchOp::Delete { key: key(0) }]).unwrap();
    model.write(&log, &[BatchOp::Put { key: key(1), value: value(1, 1, 1024) }]).unwrap();
    model.write(&log, &[BatchOp::Put { key: key(acked), value: value(acked, 0, 1024) }]).unwrap();
    let err = model
        .write(&log, &[BatchOp::Put { key: key(acked + 1), value: value(acked, 0, 1024) }])
        .unwrap_err();
    assert!(matches!(err, Error::NoSpace { .. }), "{err}");
    let expected = model.snapshot();
    assert_eq!(expected.len() as u64, acked, "one deleted, one added");
    log.close().unwrap();
    drop(log);
    // Every acknowledged write is still there after reopening.
    let (_log, model) = open_with_model(storage, options).unwrap();
    assert_eq!(model.snapshot(), expected);
}

#[test]
fn buffered_and_none_durability_persist_on_sync_and_close() {
    for durability in
        [Durability::Buffered { max_delay: Duration::from_millis(5) }, Durability::None]
    {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let options = small_segments(1 << 20, durability);
        let log = SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap();
        for i in 0..50u64 {
            log.append(LogOp::Put { key: &key(i), value: b"v" }).unwrap();
        }
        log.sync().unwrap();
        assert_eq!(log.stats().durable_seq, 50);
        for i in 50..80u64 {
            log.append(LogOp::Put { key: &key(i), value: b"v" }).unwrap();
        }
        log.close().unwrap();
        assert_eq!(collect(storage, options).len(), 80, "{durability:?}");
    }
}

#[test]
fn oversized_input_is_refused_and_changes_nothing() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_segments(1 << 20, Durability::Sync);
    let log = SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap();
    let long_key = vec![1u8; 1025];
    assert!(
        log.append(LogOp::Put { key: &long_key, value: b"" }).unwrap_err().is_invalid_argument()
    );
    assert!(
        log.append(LogOp::Put { key: b"k", value: &[0u8; 4097] })
            .unwrap_err()
            .is_invalid_argument()
    );
    assert_eq!(log.append(LogOp::Put { key: b"ok", value: b"1" }).unwrap(), 1);
    // The empty key is a key: logged and recovered.
    assert_eq!(log.append(LogOp::Delete { key: b"" }).unwrap(), 2);
    log.close().unwrap();
    assert_eq!(collect(storage, options).len(), 2);
}

/// A batch larger than the write buffer (16 KiB here) is logged in parts and read back as
/// the one batch it was, with only the last operation on each key (which is what it
/// leaves behind); the records after it keep their order.
#[test]
fn a_batch_larger_than_the_write_buffer_is_logged_in_parts() {
    for durability in [Durability::Sync, Durability::None] {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let options = small_segments(1 << 20, durability);
        let log = SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap();
        let mut batch = WriteBatch::new();
        for i in 0..40u64 {
            batch.put(key(i), vec![i as u8; 1000]);
        }
        batch.delete(key(3));
        batch.put(key(5), b"last".to_vec());
        assert!(LogOp::Batch(&batch).encoded_len() > 2 * 16 * 1024);
        assert_eq!(log.append(LogOp::Put { key: b"before", value: b"1" }).unwrap(), 1);
        assert_eq!(log.append(LogOp::Batch(&batch)).unwrap(), 2);
        assert_eq!(log.append(LogOp::Put { key: b"after", value: b"1" }).unwrap(), 3);
        assert!(log.stats().chunks_written >= 3, "{:?}", log.stats());
        log.close().unwrap();
        let records = collect(storage, options);
        assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2, 3]);
        let RecordOp::Batch(ops) = &records[1].op else { panic!("{:?}", records[1]) };
        let mut expected: Vec<BatchOp> = (0..40u64)
            .filter(|i| *i != 3 && *i != 5)
            .map(|i| BatchOp::Put { key: key(i), value: vec![i as u8; 1000] })
            .collect();
        expected.push(BatchOp::Delete { key: key(3) });
        expected.push(BatchOp::Put { key: key(5), value: b"last".to_vec() });
        assert_eq!(ops, &expected, "{durability:?}");
    }
}

#[test]
fn foreign_or_future_files_are_refused() {
    let options = small_segments(1 << 20, Durability::Sync);
    // Not a lamina log at all, at a log's name: a damaged log file.
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let file = storage.open("wal-0000000000000000.seg", OpenMode::Create).unwrap();
    file.write_all_at(0, &vec![b'x'; 8192]).unwrap();
    let err = SegmentLog::open(storage, options.clone(), |_| {}).unwrap_err();
    assert!(
        matches!(err, Error::Corruption { .. }) && err.to_string().contains("not a lamina log")
    );
    // A future format version (a valid header of a version this build does not read).
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap().close().unwrap();
    let file = storage.open("wal-0000000000000000.seg", OpenMode::Existing).unwrap();
    let mut block = vec![0u8; 4096];
    file.read_exact_at(0, &mut block).unwrap();
    let header = FileHeader::parse(&block, std::path::Path::new("seg")).unwrap();
    file.write_all_at(0, &FileHeader { version: 7, ..header }.to_block()).unwrap();
    let err = SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap_err();
    assert!(
        matches!(err, Error::Incompatible { .. }) && err.to_string().contains("version 7"),
        "{err}"
    );
    // The wrong retention mode.
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap().close().unwrap();
    let err = open_with_model(storage.clone(), small_fixed_ring(Durability::Sync)).unwrap_err();
    assert!(matches!(err, Error::Incompatible { .. }), "{err}");
    // And the other way around.
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    open_with_model(storage.clone(), small_fixed_ring(Durability::Sync))
        .unwrap()
        .0
        .close()
        .unwrap();
    let err = SegmentLog::open(storage, options, |_| {}).unwrap_err();
    assert!(matches!(err, Error::Incompatible { .. }), "{err}");
}

/// The two logs, behind the calls this test makes.
#[derive(Debug)]
enum AnyLog {
    Ring(RingLog, Arc<Model>),
    Segments(SegmentLog),
}

impl AnyLog {
    fn open(storage: &Arc<dyn Storage>, ring: bool) -> lamina_core::Result<AnyLog> {
        if ring {
            let (log, model) =
                open_with_model(storage.clone(), small_fixed_ring(Durability::Sync))?;
            Ok(AnyLog::Ring(log, model))
        } else {
            let options = small_segments(1 << 20, Durability::Sync);
            Ok(AnyLog::Segments(SegmentLog::open(storage.clone(), options, |_| {})?))
        }
    }

    fn records(storage: &Arc<dyn Storage>, ring: bool) -> usize {
        match AnyLog::open(storage, ring).unwrap() {
            AnyLog::Ring(log, model) => {
                log.close().unwrap();
                model.snapshot().len()
            }
            AnyLog::Segments(log) => {
                log.close().unwrap();
                collect(storage.clone(), small_segments(1 << 20, Durability::Sync)).len()
            }
        }
    }

    fn put(&self, k: &[u8], v: &[u8]) {
        match self {
            AnyLog::Ring(log, model) => {
                model.write(log, &[BatchOp::Put { key: k.to_vec(), value: v.to_vec() }]).unwrap();
            }
            AnyLog::Segments(log) => {
                log.append(LogOp::Put { key: k, value: v }).unwrap();
            }
        }
    }

    fn close(&self) {
        match self {
            AnyLog::Ring(log, _) => log.close().unwrap(),
            AnyLog::Segments(log) => log.close().unwrap(),
        }
    }

    fn crash(&self) {
        match self {
            AnyLog::Ring(log, _) => log.abandon(),
            AnyLog::Segments(log) => log.abandon(),
        }
    }
}

fn corrupt_middle_and_tail(ring: bool, file_name: &str) {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let log = AnyLog::open(&storage, ring).unwrap();
    for i in 0..10u64 {
        log.put(&key(i), &value(i, 0, 100));
    }
    // A crash (every append was synced; no clean close).
    log.crash();
    drop(log);
    let file = storage.open(file_name, OpenMode::Existing).unwrap();
    // Chunks are one block each here: block 1 is the first chunk, block 10 the last.
    let flip = |block: u64| {
        let mut byte = [0u8];
        file.read_exact_at(block * 4096 + 100, &mut byte).unwrap();
        byte[0] ^= 0x10;
        file.write_all_at(block * 4096 + 100, &byte).unwrap();
    };
    // The last chunk damaged: it was synced (its synced mark says so), so this is damage,
    // not a crash's torn write.
    flip(10);
    let err = AnyLog::open(&storage, ring).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    // A torn last chunk (a crash before its mark was written): recovery stops before it.
    for offset in SYNCED_MARK_OFFSETS {
        file.write_all_at(offset, &[0; SYNCED_MARK_BYTES]).unwrap();
    }
    assert_eq!(AnyLog::records(&storage, ring), 9);
    // A bad chunk followed by valid ones: corruption, naming the file and offset.
    let log = AnyLog::open(&storage, ring).unwrap();
    log.put(b"again", b"1");
    log.close();
    drop(log);
    flip(4);
    let err = AnyLog::open(&storage, ring).unwrap_err();
    match err {
        Error::Corruption { file, offset, .. } => {
            assert!(file.to_string_lossy().contains(file_name));
            assert_eq!(offset, 4 * 4096);
        }
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn torn_tail_is_dropped_and_bad_middle_chunk_is_corruption() {
    corrupt_middle_and_tail(false, "wal-0000000000000000.seg");
    corrupt_middle_and_tail(true, "wal.ring");
}

#[test]
fn group_commit_coalesces_concurrent_sync_writers() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let mut options = small_segments(1 << 20, Durability::Sync);
    options.log.linger_max = Duration::from_millis(5);
    let log = SegmentLog::open(storage, options, |_| {}).unwrap();
    let per_thread = 50u64;
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let log = &log;
            s.spawn(move || {
                for i in 0..per_thread {
                    log.append(LogOp::Put { key: &key(t * 100 + i), value: &[7u8; 100] }).unwrap();
                }
            });
        }
    });
    let stats = log.stats();
    assert_eq!(stats.records_written, 8 * per_thread);
    // Appends that arrive during a flush share the next chunk: fewer syncs than records.
    assert!(stats.syncs < stats.records_written, "{stats:?}");
}

#[test]
fn buffered_appends_become_durable_without_a_sync_call() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let durability = Durability::Buffered { max_delay: Duration::from_millis(20) };
    let options = small_segments(1 << 20, durability);
    let log = SegmentLog::open(storage, options, |_| {}).unwrap();
    let seq = log.append(LogOp::Put { key: b"k", value: b"v" }).unwrap();
    // Returned at once; the background flusher syncs it on its own (no timing asserted).
    let mut polls = 0;
    while log.stats().durable_seq < seq {
        polls += 1;
        assert!(polls < 10_000, "the flusher never synced a buffered append");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(log.stats().syncs, 1);
}

#[test]
fn log_is_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RingLog>();
    assert_send_sync::<SegmentLog>();
}

#[test]
fn cyclic_log_with_buffered_durability_laps_and_reopens() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let capacity_bytes = small_segment_bytes();
    let durability = Durability::Buffered { max_delay: Duration::from_millis(2) };
    let options = small_fixed_ring(durability);
    let (log, model) = open_with_model(storage.clone(), options.clone()).unwrap();
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (log, model) = (&log, &model);
            s.spawn(move || {
                for i in 0..3000u64 {
                    let k = key((t * 7 + i) % 40);
                    let ops = if i % 9 == 0 {
                        vec![BatchOp::Delete { key: k }]
                    } else {
                        vec![BatchOp::Put { key: k, value: value(t, i, 200) }]
                    };
                    model.write(log, &ops).unwrap();
                }
            });
        }
    });
    log.sync().unwrap();
    let stats = log.stats();
    assert!(stats.bytes_written > 2 * capacity_bytes, "must wrap around: {stats:?}");
    let expected = model.snapshot();
    log.close().unwrap();
    let (_log, model) = open_with_model(storage, options).unwrap();
    assert_eq!(model.snapshot(), expected);
}

#[test]
fn first_lap_zero_fills_the_sparse_ring_ahead_of_the_writer() {
    // `lamina_storage::log` ring: ZERO_AHEAD_BYTES.
    const ZERO_AHEAD_BYTES: u64 = 256 << 10;
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let capacity_bytes = 1 << 20;
    let options = RingLogOptions {
        segment_bytes: Some(capacity_bytes),
        disk_budget_bytes: Some(4096 + capacity_bytes),
        ..small_fixed_ring(Durability::Sync)
    };
    let (log, model) = open_with_model(storage.clone(), options.clone()).unwrap();
    // Bytes written that are not chunks (or their synced marks): the file header, then the
    // zeros.
    let not_chunks = || {
        let stats = log.stats();
        let marks = stats.chunks_written * SYNCED_MARK_BYTES as u64;
        storage.io_stats().bytes_written - stats.bytes_written - marks
    };
    let created = not_chunks();
    let put =
        |i: u64| model.write(&log, &[BatchOp::Put { key: key(i % 8), value: value(0, i, 40) }]);
    put(0).unwrap();
    assert_eq!(not_chunks() - created, ZERO_AHEAD_BYTES, "the first chunk zero-fills ahead");
    for i in 1..40 {
        put(i).unwrap();
    }
    assert_eq!(not_chunks() - created, ZERO_AHEAD_BYTES, "chunks inside the zeroed part");
    // Past a whole lap: the zeros stop at the ring's end, and none follow the wrap.
    for i in 40..600 {
        put(i).unwrap();
    }
    assert!(log.stats().bytes_written > capacity_bytes + ZERO_AHEAD_BYTES, "{:?}", log.stats());
    let after_lap = not_chunks();
    assert!(after_lap - created <= capacity_bytes, "{after_lap}");
    for i in 600..700 {
        put(i).unwrap();
    }
    assert_eq!(not_chunks(), after_lap, "no zeros after the first lap");
    let expected = model.snapshot();
    log.close().unwrap();
    let (_log, model) = open_with_model(storage, options).unwrap();
    assert_eq!(model.snapshot(), expected);
}

/// A lone `Sync` writer never yields its core while it waits (fewer waiters than cores, or
/// as many on a one-core machine): it parks and is woken, so it spins in vain never.
#[test]
fn a_lone_sync_writer_sleeps_instead_of_yielding() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_fixed_ring(Durability::Sync);
    assert!(!options.log.sync_wait_yield_max.is_zero(), "yielding is on by default");
    let (log, model) = open_with_model(storage, options).unwrap();
    for i in 0..50u64 {
        model.write(&log, &[BatchOp::Put { key: key(i % 7), value: value(0, i, 40) }]).unwrap();
    }
    let stats = log.stats();
    assert_eq!(stats.sync_waits_yielded, 0, "{stats:?}");
    assert!(stats.sync_waits_parked <= 50, "at most one sleep per append: {stats:?}");
    log.close().unwrap();
}

/// A segment holding only leading parts of a batch counts the batch's sequence number: an
/// engine that truncates through the records before the batch (what it persisted) keeps
/// every part, and the batch reads back whole.
#[test]
fn truncation_before_a_batch_in_parts_keeps_its_parts() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    // Segments of one maximal chunk: each part lands in a segment of its own.
    let segment_bytes = small_segments(1 << 20, Durability::Sync).log.chunk_bytes_max();
    let options = small_segments(segment_bytes, Durability::Sync);
    let log = SegmentLog::open(storage.clone(), options.clone(), |_| {}).unwrap();
    let before = log.append(LogOp::Put { key: b"before", value: b"1" }).unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..60u64 {
        batch.put(key(i), vec![i as u8; 1000]);
    }
    let seq = log.append(LogOp::Batch(&batch)).unwrap();
    assert!(log.stats().chunks_written >= 4, "{:?}", log.stats());
    log.truncate(before).unwrap();
    log.close().unwrap();
    let records = collect(storage, options);
    let batch_record = records.iter().find(|r| r.seq == seq).expect("the batch survives");
    let RecordOp::Batch(ops) = &batch_record.op else { panic!("{batch_record:?}") };
    assert_eq!(ops.len(), 60);
}
