//! A ring written before rings could grow (file format version 1: one fixed ring, its
//! `capacity_bytes` the whole ring) opens as a ring of one segment, keeps its records, and
//! when it first needs to grow is rewritten as version 2 (so that an older build refuses
//! the grown file instead of reading only its first segment).

mod log_support;

use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Error};
use lamina_storage::log::chunk::{FileHeader, RING_FORMAT_VERSION};
use lamina_storage::{MemoryStorage, OpenMode, Storage};
use log_support::{key, open_with_model, small_fixed_ring, small_growable_ring, value};

fn header(storage: &Arc<dyn Storage>) -> FileHeader {
    let file = storage.open("wal.ring", OpenMode::Existing).unwrap();
    let mut block = vec![0u8; 4096];
    file.read_exact_at(0, &mut block).unwrap();
    FileHeader::parse(&block, std::path::Path::new("wal.ring")).unwrap()
}

#[test]
fn a_version_1_ring_opens_and_grows_as_version_2() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    // A one-segment ring with some records, its header then rewritten as version 1.
    let (log, model) =
        open_with_model(storage.clone(), small_fixed_ring(Durability::Sync)).unwrap();
    for i in 0..100 {
        model.write(&log, &[BatchOp::Put { key: key(i), value: value(i, 0, 1000) }]).unwrap();
    }
    log.close().unwrap();
    drop(log);
    let old = FileHeader { version: 1, ..header(&storage) };
    let file = storage.open("wal.ring", OpenMode::Existing).unwrap();
    file.write_all_at(0, &old.to_block()).unwrap();
    file.sync_data().unwrap();
    drop(file);
    assert_eq!(header(&storage).version, 1);

    // Opened without a budget: the records are there, and growth rewrites the header.
    let options = small_growable_ring(Durability::Sync);
    let (log, reopened) = open_with_model(storage.clone(), options.clone()).unwrap();
    assert_eq!(reopened.snapshot(), model.snapshot());
    for i in 100..1200 {
        reopened.write(&log, &[BatchOp::Put { key: key(i), value: value(i, 0, 1000) }]).unwrap();
    }
    assert!(log.stats().ring_segments > 1, "{:?}", log.stats());
    log.close().unwrap();
    drop(log);
    assert_eq!(header(&storage).version, RING_FORMAT_VERSION);
    let (log, again) = open_with_model(storage.clone(), options).unwrap();
    assert_eq!(again.snapshot(), reopened.snapshot());
    log.close().unwrap();

    // A future version is refused as incompatible, not read.
    let future = FileHeader { version: RING_FORMAT_VERSION + 1, ..header(&storage) };
    let mut block = future.to_block();
    block[8..12].copy_from_slice(&(RING_FORMAT_VERSION + 1).to_le_bytes());
    storage.open("wal.ring", OpenMode::Existing).unwrap().write_all_at(0, &block).unwrap();
    let err = open_with_model(storage, small_growable_ring(Durability::Sync)).unwrap_err();
    assert!(matches!(err, Error::Incompatible { .. }), "{err}");
}
