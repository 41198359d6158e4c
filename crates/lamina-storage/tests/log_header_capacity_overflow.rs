//! A log file header is checksummed, but its fields are trusted within the checksum:
//! `capacity_bytes` near `u64::MAX` (a multiple of 4096, so `FileHeader::decode` accepts
//! it) overflows `FILE_HEADER_BYTES + capacity` in recovery. Opening must fail with an
//! error, not panic.

use std::sync::Arc;

use lamina_core::Durability;
use lamina_storage::log::chunk::{FileHeader, FileKind};
use lamina_storage::log::{
    LiveRecords, LogOptions, RingLog, RingLogOptions, SegmentLog, SegmentLogOptions, SeqNo,
};
use lamina_storage::{MemoryStorage, OpenMode, Storage};

struct NothingLive;

impl LiveRecords for NothingLive {
    fn is_current(&self, _key: &[u8], _seq: SeqNo) -> bool {
        false
    }

    fn live_bytes(&self) -> u64 {
        0
    }
}

fn open_with_header(kind: FileKind, name: &str) -> std::thread::Result<()> {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let header = FileHeader {
        kind,
        version: FileHeader::current_version(kind),
        log_id: 1,
        file_index: 0,
        base_pos: 0,
        capacity_bytes: u64::MAX - 4095,
        seq_floor: 0,
    };
    let file = storage.open(name, OpenMode::Create).unwrap();
    file.write_all_at(0, &header.to_block()).unwrap();
    file.sync_data().unwrap();
    let log = LogOptions { durability: Durability::Sync, ..LogOptions::default() };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || match kind {
        FileKind::Ring => {
            let options = RingLogOptions { log, ..RingLogOptions::default() };
            if let Ok(log) = RingLog::open(storage, options, Arc::new(NothingLive), |_| {}) {
                log.abandon();
            }
        }
        FileKind::Segment => {
            let options = SegmentLogOptions { log, segment_bytes: 64 << 20 };
            if let Ok(log) = SegmentLog::open(storage, options, |_| {}) {
                log.abandon();
            }
        }
    }))
}

#[test]
fn a_huge_capacity_in_a_valid_header_is_an_error_not_a_panic() {
    let ring_ok = open_with_header(FileKind::Ring, "wal.ring").is_ok();
    let name = "wal-0000000000000000.seg";
    let segments_ok = open_with_header(FileKind::Segment, name).is_ok();
    assert!(ring_ok && segments_ok, "recovery panicked: ring {ring_ok}, segments {segments_ok}");
}
