//! A log file header is checksummed, but its fields are trusted within the checksum:
//! `capacity_bytes` near `u64::MAX` (a multiple of 4096, so `FileHeader::decode` accepts
//! it) overflows `FILE_HEADER_BYTES + capacity` in recovery. Opening must fail with an
//! error, not panic.

use std::sync::Arc;

use lamina_core::Durability;
use lamina_storage::log::chunk::{FileHeader, FileKind};
use lamina_storage::log::{Log, LogOptions, Retention};
use lamina_storage::{MemoryStorage, OpenMode, Storage};

fn open_with_header(kind: FileKind, name: &str, retention: Retention) -> std::thread::Result<()> {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let header = FileHeader {
        kind,
        log_id: 1,
        file_index: 0,
        base_pos: 0,
        capacity_bytes: u64::MAX - 4095,
        seq_floor: 0,
    };
    let file = storage.open(name, OpenMode::Create).unwrap();
    file.write_all_at(0, &header.to_block()).unwrap();
    file.sync_data().unwrap();
    let options = LogOptions { retention, durability: Durability::Sync, ..LogOptions::default() };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        if let Ok(log) = Log::open(storage, options, |_| {}) {
            log.abandon();
        }
    }))
}

#[test]
fn a_huge_capacity_in_a_valid_header_is_an_error_not_a_panic() {
    let ring = Retention::Cyclic { capacity_bytes: 64 << 20 };
    let ring_ok = open_with_header(FileKind::Ring, "wal.ring", ring).is_ok();
    let segments = Retention::Truncate { segment_bytes: 64 << 20 };
    let name = "wal-0000000000000000.seg";
    let segments_ok = open_with_header(FileKind::Segment, name, segments).is_ok();
    assert!(ring_ok && segments_ok, "recovery panicked: ring {ring_ok}, segments {segments_ok}");
}
