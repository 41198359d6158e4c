//! Under `Durability::None` (and `Buffered`) a segment log's appenders do not wait for a
//! slow sync: full buffers queue for the flusher, up to `QUEUED_BUFFERS_MAX`, and are
//! written in order, so recovery still reads every record of a cleanly closed log in
//! sequence. Past the bound, appenders wait (memory stays bounded). Under `Sync` nothing
//! is queued.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use lamina_core::Durability;
use lamina_storage::log::{
    LogOp, LogOptions, QUEUED_BUFFERS_MAX, Record, SegmentLog, SegmentLogOptions,
};
use lamina_storage::{FileOp, Hook, HookedStorage, MemoryStorage, Storage};

/// A liveness bound for threads that must finish (not a measure of speed).
const LIVENESS: Duration = Duration::from_mins(2);

/// Closed: every `sync_data` waits until it opens.
#[derive(Debug, Default)]
struct Gate {
    closed: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn set(&self, closed: bool) {
        *self.closed.lock().unwrap() = closed;
        self.cv.notify_all();
    }

    fn pass(&self) {
        let mut closed = self.closed.lock().unwrap();
        while *closed {
            closed = self.cv.wait(closed).unwrap();
        }
    }
}

/// Opens the gate when dropped, so a failing test cannot leave the flusher waiting.
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Memory storage whose file syncs wait at the gate.
fn gated_storage(gate: &Arc<Gate>) -> Arc<dyn Storage> {
    let gate = gate.clone();
    let hook: Hook = Arc::new(move |_, op| {
        if op == FileOp::Sync {
            gate.pass();
        }
    });
    Arc::new(HookedStorage::new(Arc::new(MemoryStorage::new()), hook))
}

const BUFFER_BYTES: usize = 16 * 1024;
const VALUE_BYTES: usize = 1000;

fn options(durability: Durability) -> SegmentLogOptions {
    let log = LogOptions { durability, buffer_bytes: BUFFER_BYTES, ..LogOptions::default() };
    let segment_bytes = 64 * log.chunk_bytes_max();
    SegmentLogOptions { log, segment_bytes }
}

fn value(i: u32) -> Vec<u8> {
    vec![(i % 251) as u8; VALUE_BYTES]
}

/// Appends records `from..to` on a thread; the receiver gets `()` when all are in.
fn append_on_thread(log: &Arc<SegmentLog>, from: u32, to: u32) -> mpsc::Receiver<()> {
    let (done, finished) = mpsc::channel();
    let log = log.clone();
    std::thread::spawn(move || {
        for i in from..to {
            log.append(LogOp::Put { key: &i.to_be_bytes(), value: &value(i) }).unwrap();
        }
        drop(log); // before telling: the test takes the log back once all are done
        let _ = done.send(());
    });
    finished
}

fn recovered(storage: Arc<dyn Storage>, options: SegmentLogOptions) -> Vec<Record> {
    let mut records = Vec::new();
    let log = SegmentLog::open(storage, options, |r| records.push(r)).unwrap();
    log.close().unwrap();
    records
}

/// A `Durability::None` log on storage whose syncs wait at the returned gate.
fn gated_log() -> (Arc<Gate>, Arc<dyn Storage>, Arc<SegmentLog>) {
    let gate = Arc::new(Gate::default());
    let storage = gated_storage(&gate);
    let log =
        Arc::new(SegmentLog::open(storage.clone(), options(Durability::None), |_| {}).unwrap());
    (gate, storage, log)
}

#[test]
fn appenders_do_not_wait_for_a_slow_sync_and_the_queue_is_bounded() {
    let (gate, storage, log) = gated_log();
    let per_buffer = (BUFFER_BYTES / (VALUE_BYTES + 64)) as u32;

    // Every sync blocks: without the queue, appenders would wait once the fill buffer and
    // the one being synced are both full (two buffers' worth).
    gate.set(true);
    let _opened_at_the_end = OpenOnDrop(gate.clone());
    let within_queue = per_buffer * (QUEUED_BUFFERS_MAX as u32 / 2);
    let finished = append_on_thread(&log, 0, within_queue);
    let outcome = finished.recv_timeout(LIVENESS);
    if outcome.is_err() {
        gate.set(false);
        panic!("appends waited for a blocked sync: {:?}", log.writer_stats());
    }
    let stats = log.writer_stats();
    assert!(stats.buffers_queued >= 2, "{stats:?}");

    // Far past the bound: the appender must wait for the sync (the queue is bounded).
    let past_bound = within_queue + per_buffer * (QUEUED_BUFFERS_MAX as u32 + 4);
    let finished = append_on_thread(&log, within_queue, past_bound);
    let mut polls = 0;
    while log.writer_stats().queued_buffers_peak < QUEUED_BUFFERS_MAX as u64 {
        std::thread::sleep(Duration::from_millis(5));
        polls += 1;
        assert!(polls < 24_000, "the queue never filled: {:?}", log.writer_stats());
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(finished.try_recv().is_err(), "appends went past the queue's bound");
    assert_eq!(log.writer_stats().queued_buffers_peak, QUEUED_BUFFERS_MAX as u64);
    gate.set(false);
    finished.recv_timeout(LIVENESS).expect("appends resume once the sync completes");
    let Ok(log) = Arc::try_unwrap(log) else { panic!("an appender still holds the log") };
    log.close().unwrap();

    // Every record, in order: the queued chunks were written in the order of their records.
    let records = recovered(storage, options(Durability::None));
    assert_eq!(records.len(), past_bound as usize);
    for (i, record) in records.iter().enumerate() {
        assert_eq!(record.seq, i as u64 + 1, "records out of order");
    }
}

#[test]
fn sync_appends_queue_nothing() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let log = Arc::new(SegmentLog::open(storage, options(Durability::Sync), |_| {}).unwrap());
    let writers: Vec<_> =
        (0..4u32).map(|t| append_on_thread(&log, t * 100, t * 100 + 60)).collect();
    for finished in writers {
        finished.recv_timeout(LIVENESS).expect("sync appends finish");
    }
    assert_eq!(log.writer_stats().buffers_queued, 0);
    let Ok(log) = Arc::try_unwrap(log) else { panic!("an appender still holds the log") };
    log.close().unwrap();
}

#[test]
fn a_sync_through_a_record_waits_for_no_later_ones() {
    let (gate, storage, log) = gated_log();
    let per_buffer = (BUFFER_BYTES / (VALUE_BYTES + 64)) as u32;

    // Records still in the fill buffer: a sync through them flushes it.
    append_on_thread(&log, 0, per_buffer / 2).recv_timeout(LIVENESS).unwrap();
    let committed = log.next_seq() - 1;
    log.sync_through(committed).unwrap();
    assert!(log.writer_stats().durable_seq >= committed);

    // Later records whose syncs never finish: a sync through the earlier ones returns, a
    // sync of everything waits.
    gate.set(true);
    let _opened_at_the_end = OpenOnDrop(gate.clone());
    let later = per_buffer / 2 + per_buffer * 3;
    append_on_thread(&log, per_buffer / 2, later).recv_timeout(LIVENESS).unwrap();
    let (sync_through, through_done) = mpsc::channel();
    let (sync_all, all_done) = mpsc::channel();
    {
        let log = log.clone();
        std::thread::spawn(move || {
            let ok = log.sync_through(committed).is_ok();
            drop(log); // before telling: the test takes the log back at the end
            sync_through.send(ok)
        });
    }
    {
        let log = log.clone();
        std::thread::spawn(move || {
            let ok = log.sync().is_ok();
            drop(log);
            sync_all.send(ok)
        });
    }
    assert_eq!(through_done.recv_timeout(LIVENESS), Ok(true), "the sync through waited");
    std::thread::sleep(Duration::from_millis(50));
    assert!(all_done.try_recv().is_err(), "a sync of everything waits for the blocked syncs");
    gate.set(false);
    assert_eq!(all_done.recv_timeout(LIVENESS), Ok(true));
    let Ok(log) = Arc::try_unwrap(log) else { panic!("a thread still holds the log") };
    log.close().unwrap();
    assert_eq!(recovered(storage, options(Durability::None)).len(), later as usize);
}
