use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use super::*;
use crate::log::chunk::{FILE_HEADER_BYTES, FileHeader, FileKind, RING_FORMAT_VERSION};
use crate::log::options::{LiveRecords, LogOptions, RingLogOptions};
use crate::log::record::{LogOp, SeqNo};
use crate::log::ring_recovery::open_ring;
use crate::log::segments::create_log_file;
use crate::{MemoryStorage, Storage};

/// Every put is current.
struct AllLive;

impl LiveRecords for AllLive {
    fn is_current(&self, _key: &[u8], _seq: SeqNo) -> bool {
        true
    }

    fn live_bytes(&self) -> u64 {
        0
    }
}

fn one_segment_options() -> RingLogOptions {
    let log =
        LogOptions { buffer_bytes: 16 * 1024, file_prefix: "wal".into(), ..LogOptions::default() };
    let options = RingLogOptions { log, ..RingLogOptions::default() };
    let segment = options.segment_bytes_min();
    RingLogOptions {
        segment_bytes: Some(segment),
        disk_budget_bytes: Some(FILE_HEADER_BYTES + segment),
        ..options
    }
}

/// Collection inside a flush can collect every chunk (`cleaned == head`, no spans); the
/// next chunk may then start the next visit, past `head`. It must start the window: its
/// `tail` and the collection frontier are its own position, not the old `head` (recovery
/// would find no chunk at the tail: corruption; collection would assert).
#[test]
fn a_chunk_after_everything_was_collected_starts_the_window() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = one_segment_options();
    let capacity = options.segment_bytes.unwrap();
    let header = FileHeader {
        kind: FileKind::Ring,
        version: RING_FORMAT_VERSION,
        log_id: 7,
        file_index: 0,
        base_pos: 0,
        capacity_bytes: capacity,
        seq_floor: 0,
    };
    let file = create_log_file(storage.as_ref(), "wal.ring", &header, FILE_HEADER_BYTES + capacity)
        .unwrap();
    // Everything collected, the writer one block before the segment's end (second lap).
    let head = 2 * capacity - 4096;
    let slot = SegmentSlot { latest: Some(1), retired: false, written_to: capacity };
    let mut ring = Ring::new(RingParts {
        file,
        path: storage.path_of("wal.ring"),
        log_id: 7,
        version: RING_FORMAT_VERSION,
        seq_floor: 0,
        header_segments: 1,
        layout: Layout::recovered(capacity, vec![slot], 1, 0, Some(0)),
        payload_max: options.log.chunk_payload_max(),
        head,
        tail: head,
        spans: VecDeque::new(),
        active_max: 1,
        disk_budget_bytes: options.disk_budget_bytes,
    });
    // A two-block chunk does not fit before the end: it starts the next lap.
    let mut payload = Vec::new();
    LogOp::Put { key: b"k", value: &[1u8; 4096] }.encode_to(1, &mut payload);
    ring.flush(&payload, 1, 1, 0, &AllLive, &mut || true).unwrap();
    assert_eq!(ring.head(), 2 * capacity + 8192);
    let opened = open_ring(&storage, &options).unwrap().opened;
    assert_eq!(opened.records.len(), 1);
    // Collection starts at the window's first chunk (it asserts log order).
    assert!(ring.collect_one(&AllLive, &HashSet::new()).unwrap().is_some());
    assert_eq!(ring.gc.chunks_collected, 1);
}
