//! A ring the caller says exists (`OpenIntent::MustExist`: the database's `LAMINA` file says
//! so) is never an empty log: missing, it is `Corruption` naming the file; cut short (to
//! its header, or to fewer segments than its chunks record), it is `Corruption` whatever
//! the intent. Without the intent, a missing ring is a new one.

mod log_support;

use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Error, OpenIntent};
use lamina_storage::log::RingLogOptions;
use lamina_storage::{MemoryStorage, OpenMode, Storage};
use log_support::{key, open_with_model, small_growable_ring, small_segment_bytes, value};

fn options(intent: OpenIntent) -> RingLogOptions {
    RingLogOptions { intent, ..small_growable_ring(Durability::Sync) }
}

/// A ring with four segments' worth of data, cleanly closed.
fn written() -> Arc<dyn Storage> {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let (log, model) =
        open_with_model(storage.clone(), options(OpenIntent::CreateIfMissing)).unwrap();
    for i in 0..1600 {
        model.write(&log, &[BatchOp::Put { key: key(i), value: value(i, 0, 1000) }]).unwrap();
    }
    assert!(log.stats().ring_segments >= 4, "{:?}", log.stats());
    log.close().unwrap();
    storage
}

fn expect_corruption(storage: Arc<dyn Storage>, intent: OpenIntent, what: &str) {
    match open_with_model(storage, options(intent)) {
        Err(Error::Corruption { file, reason, .. }) => {
            assert!(file.to_string_lossy().ends_with("wal.ring"), "{what}: {}", file.display());
            eprintln!("{what}: {reason}");
        }
        Err(other) => panic!("{what}: expected corruption, got {other}"),
        Ok((_, model)) => {
            panic!("{what}: opened with {} keys instead of failing", model.snapshot().len())
        }
    }
}

#[test]
fn a_missing_ring_of_an_existing_database_is_corruption() {
    let storage = written();
    storage.remove("wal.ring").unwrap();
    expect_corruption(storage.clone(), OpenIntent::MustExist, "missing");
    // Without the intent it is simply a new, empty log.
    let (log, model) = open_with_model(storage, options(OpenIntent::CreateIfMissing)).unwrap();
    assert!(model.snapshot().is_empty());
    log.close().unwrap();
}

#[test]
fn a_ring_cut_to_its_header_is_corruption() {
    let storage = written();
    storage.open("wal.ring", OpenMode::Existing).unwrap().set_len(4096).unwrap();
    expect_corruption(storage.clone(), OpenIntent::MustExist, "cut to 4 KiB");
    expect_corruption(storage, OpenIntent::CreateIfMissing, "cut to 4 KiB, no intent");
}

#[test]
fn a_ring_cut_by_whole_segments_is_corruption() {
    let storage = written();
    let file = storage.open("wal.ring", OpenMode::Existing).unwrap();
    let segments = (file.len().unwrap() - 4096) / small_segment_bytes();
    file.set_len(4096 + (segments - 1) * small_segment_bytes()).unwrap();
    expect_corruption(storage, OpenIntent::MustExist, "one segment short");
}
