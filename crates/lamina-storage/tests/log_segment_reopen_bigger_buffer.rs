//! A truncate-mode log reopened with a larger `buffer_bytes` than it was created with: the
//! segment size stays the one in the segment headers, so the next recovery must still read
//! every chunk written after the reopen.

use std::sync::Arc;

use lamina_core::Durability;
use lamina_storage::log::{LogOp, LogOptions, Record, SegmentLog, SegmentLogOptions};
use lamina_storage::{MemoryStorage, Storage};

fn options(buffer_bytes: usize, segment_bytes: u64) -> SegmentLogOptions {
    let log = LogOptions { durability: Durability::Sync, buffer_bytes, ..LogOptions::default() };
    SegmentLogOptions { log, segment_bytes }
}

fn records(storage: &Arc<dyn Storage>, options: &SegmentLogOptions) -> Vec<Record> {
    let mut records = Vec::new();
    let log = SegmentLog::open(storage.clone(), options.clone(), |r| records.push(r)).unwrap();
    log.close().unwrap();
    records
}

#[test]
fn reopening_with_a_larger_buffer_loses_no_acknowledged_write() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    // Smallest segments the small buffer accepts: 9 chunks of 4 KiB.
    let small = options(16 * 1024, 0);
    let small = options(small.log.buffer_bytes, small.log.chunk_bytes_max());
    let log = SegmentLog::open(storage.clone(), small.clone(), |_| {}).unwrap();
    for i in 0..2u32 {
        log.append(LogOp::Put { key: &i.to_be_bytes(), value: b"before" }).unwrap();
    }
    log.close().unwrap();

    // Reopened with a 64 KiB buffer (the segment_bytes option is ignored: the headers win).
    let big = options(64 * 1024, options(64 * 1024, 0).log.chunk_bytes_max());
    let log = SegmentLog::open(storage.clone(), big.clone(), |_| {}).unwrap();
    // Each Sync append from one thread is a chunk of 4 KiB: 20 of them pass the 36 KiB the
    // active segment's header allows.
    for i in 2..22u32 {
        log.append(LogOp::Put { key: &i.to_be_bytes(), value: b"after" }).unwrap();
    }
    log.close().unwrap();

    let recovered = records(&storage, &big);
    assert_eq!(recovered.len(), 22, "acknowledged writes lost at recovery");
}
