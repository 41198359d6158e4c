//! The ring's size follows its live records: without a disk budget it grows past its
//! initial two segments as data is added (one segment per visit while the live records are
//! over half of it), keeps every record across reopens, and stays within twice the live
//! records plus a few segments on the device; after most keys are deleted it retires
//! (punches out) segments until it is back within that bound.

mod log_support;

use std::sync::Arc;
use std::time::Duration;

use lamina_core::{BatchOp, Durability};
use lamina_storage::log::{LogStats, RingLog};
use lamina_storage::{MemoryStorage, Storage};
use log_support::{Model, key, open_with_model, small_growable_ring, small_segment_bytes, value};

/// Zero-filling ahead of the writer (`ZERO_AHEAD_BYTES` of the ring writer).
const ZERO_AHEAD_BYTES: u64 = 256 << 10;

/// The documented bound: the file's header, twice the live records, two segments of
/// slack (growth goes a segment at a time and shrinking keeps one in hand), and the
/// zero-filled part ahead of the writer.
fn bound(stats: &LogStats) -> u64 {
    4096 + 2 * stats.live_bytes + 2 * small_segment_bytes() + ZERO_AHEAD_BYTES
}

fn write_all(log: &RingLog, model: &Model, ops: impl IntoIterator<Item = BatchOp>) {
    for op in ops {
        model.write(log, &[op]).unwrap();
    }
    log.sync().unwrap();
}

#[test]
fn the_ring_grows_with_live_data_and_shrinks_after_deletes() {
    for durability in
        [Durability::Sync, Durability::Buffered { max_delay: Duration::from_millis(1) }]
    {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let options = small_growable_ring(durability);
        let segment = small_segment_bytes();
        let (log, model) = open_with_model(storage.clone(), options.clone()).unwrap();
        assert_eq!(log.stats().ring_segments, 0, "stats come with the first flush");
        // 3000 keys of 1 KiB: about seven times the initial ring (two segments).
        let puts = (0..3000).map(|i| BatchOp::Put { key: key(i), value: value(i, 0, 1000) });
        write_all(&log, &model, puts);
        let grown = log.stats();
        assert!(grown.live_bytes > 3 * 1000 * 1000, "{grown:?}");
        assert!(grown.ring_segments_grown > 4, "{grown:?}");
        assert!(grown.ring_bytes >= grown.live_bytes, "{grown:?}");
        assert!(grown.file_bytes_allocated <= bound(&grown), "{grown:?}");
        let expected = model.snapshot();
        log.close().unwrap();
        drop(log);
        let (log, model) = open_with_model(storage.clone(), options.clone()).unwrap();
        assert_eq!(model.snapshot(), expected, "{durability:?}");

        // Delete nine keys in ten; keep overwriting the rest so that collection laps the
        // ring and segments come free.
        let deletes = (0..3000).filter(|i| i % 10 != 0).map(|i| BatchOp::Delete { key: key(i) });
        write_all(&log, &model, deletes);
        for round in 1..=12 {
            let overwrites = (0..3000)
                .step_by(10)
                .map(|i| BatchOp::Put { key: key(i), value: value(i, round, 1000) });
            write_all(&log, &model, overwrites);
        }
        let shrunk = log.stats();
        assert!(shrunk.ring_segments_retired > 0, "{shrunk:?}");
        assert!(shrunk.ring_segments < grown.ring_segments, "{shrunk:?} vs {grown:?}");
        assert!(shrunk.file_bytes_allocated <= bound(&shrunk), "{shrunk:?}");
        assert!(shrunk.file_bytes_allocated < grown.file_bytes_allocated / 2, "{shrunk:?}");
        let expected = model.snapshot();
        log.close().unwrap();
        drop(log);
        let (log, model) = open_with_model(storage, options).unwrap();
        assert_eq!(model.snapshot(), expected, "{durability:?}");
        log.close().unwrap();
        assert!(segment > 0);
    }
}
