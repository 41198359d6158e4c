//! A torn tail can only follow a crash. Both logs end a clean close with a chunk that says
//! so; after it, a damaged newest data chunk is `Corruption` naming the file and offset,
//! never dropped as a torn tail (which silently reverted values and brought deleted keys
//! back). After a crash the same damage is a torn tail, as before.

mod log_support;

use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Error};
use lamina_storage::{MemoryStorage, OpenMode, Storage};
use log_support::{AnyLog, AnyOptions, key, small_fixed_ring, small_segments, value};

fn flip_block(storage: &Arc<dyn Storage>, file: &str, block: u64) {
    let file = storage.open(file, OpenMode::Existing).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(block * 4096 + 100, &mut byte).unwrap();
    byte[0] ^= 0x10;
    file.write_all_at(block * 4096 + 100, &byte).unwrap();
}

/// Ten one-chunk writes (one synced chunk each, blocks 1 to 10), then a clean close (the
/// marker is block 11) or a crash; then block 10 is damaged.
fn damage_newest_chunk(
    options: &AnyOptions,
    file: &str,
    clean: bool,
) -> lamina_core::Result<usize> {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let (log, model) = AnyLog::open_with_model(storage.clone(), options).unwrap();
    for i in 0..10 {
        log.write(&model, &[BatchOp::Put { key: key(i), value: value(i, 0, 100) }]).unwrap();
    }
    if clean {
        log.close().unwrap();
    } else {
        log.abandon();
    }
    drop(log);
    flip_block(&storage, file, 10);
    let (log, model) = AnyLog::open_with_model(storage, options)?;
    log.close().unwrap();
    Ok(model.snapshot().len())
}

fn check(options: &AnyOptions, file: &str) {
    match damage_newest_chunk(options, file, true) {
        Err(Error::Corruption { file: path, offset, .. }) => {
            assert!(path.to_string_lossy().ends_with(file), "{}", path.display());
            assert_eq!(offset, 10 * 4096);
        }
        other => panic!("a damaged chunk after a clean close must be corruption: {other:?}"),
    }
    assert_eq!(damage_newest_chunk(options, file, false).unwrap(), 9, "a crash's torn tail");
}

#[test]
fn a_damaged_newest_chunk_of_a_cleanly_closed_ring_is_corruption() {
    check(&AnyOptions::Ring(small_fixed_ring(Durability::Sync)), "wal.ring");
}

#[test]
fn a_damaged_newest_chunk_of_cleanly_closed_segments_is_corruption() {
    check(
        &AnyOptions::Segments(small_segments(1 << 20, Durability::Sync)),
        "wal-0000000000000000.seg",
    );
}

#[test]
fn a_ring_knows_whether_it_was_closed_cleanly() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let options = small_fixed_ring(Durability::Sync);
    let (log, model) = log_support::open_with_model(storage.clone(), options.clone()).unwrap();
    assert!(!log.opened_after_clean_close(), "new");
    model.write(&log, &[BatchOp::Put { key: key(1), value: value(1, 0, 10) }]).unwrap();
    log.abandon();
    drop(log);
    let (log, _) = log_support::open_with_model(storage.clone(), options.clone()).unwrap();
    assert!(!log.opened_after_clean_close(), "after a crash");
    log.close().unwrap();
    drop(log);
    let (log, model) = log_support::open_with_model(storage, options).unwrap();
    assert!(log.opened_after_clean_close());
    assert_eq!(model.snapshot().len(), 1);
}
