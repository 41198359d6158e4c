//! A torn tail can only follow a crash. Both logs end a clean close with a chunk that says
//! so; after it, a damaged newest data chunk is `Corruption` naming the file and offset,
//! never dropped as a torn tail (which silently reverted values and brought deleted keys
//! back). After a crash the same damage is `Corruption` too when the chunk's synced mark
//! says it was synced (`docs/format/log.md`, "Synced mark"); only a crash that came before
//! the mark was written (a chunk no writer was told was durable) leaves a torn tail.

mod log_support;

use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Error};
use lamina_storage::log::synced_mark::{SYNCED_MARK_BYTES, SYNCED_MARK_OFFSETS};
use lamina_storage::{MemoryStorage, OpenMode, Storage};
use log_support::{AnyLog, AnyOptions, key, small_fixed_ring, small_segments, value};

fn flip_block(storage: &Arc<dyn Storage>, file: &str, block: u64) {
    let file = storage.open(file, OpenMode::Existing).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(block * 4096 + 100, &mut byte).unwrap();
    byte[0] ^= 0x10;
    file.write_all_at(block * 4096 + 100, &byte).unwrap();
}

/// How the ten writes end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// A clean close.
    Clean,
    /// A crash after the last chunk's synced mark was written.
    Crash,
    /// A crash before any synced mark reached the file (its slots zero): the newest chunk
    /// may be one no writer was told was durable.
    CrashBeforeMark,
}

/// Ten one-chunk writes (one synced chunk each, blocks 1 to 10), then `end` (a clean close
/// writes its marker as block 11); then block 10 is damaged.
fn damage_newest_chunk(options: &AnyOptions, file: &str, end: End) -> lamina_core::Result<usize> {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let (log, model) = AnyLog::open_with_model(storage.clone(), options).unwrap();
    for i in 0..10 {
        log.write(&model, &[BatchOp::Put { key: key(i), value: value(i, 0, 100) }]).unwrap();
    }
    if end == End::Clean {
        log.close().unwrap();
    } else {
        log.abandon();
    }
    drop(log);
    if end == End::CrashBeforeMark {
        let f = storage.open(file, OpenMode::Existing).unwrap();
        for offset in SYNCED_MARK_OFFSETS {
            f.write_all_at(offset, &[0; SYNCED_MARK_BYTES]).unwrap();
        }
    }
    flip_block(&storage, file, 10);
    let (log, model) = AnyLog::open_with_model(storage, options)?;
    log.close().unwrap();
    Ok(model.snapshot().len())
}

fn check(options: &AnyOptions, file: &str) {
    for end in [End::Clean, End::Crash] {
        match damage_newest_chunk(options, file, end) {
            Err(Error::Corruption { file: path, offset, .. }) => {
                assert!(path.to_string_lossy().ends_with(file), "{}", path.display());
                // The segment's chunks end at the damaged one; the ring names its newest
                // valid chunk (the one before) after a crash.
                assert!(offset == 10 * 4096 || offset == 9 * 4096, "{end:?}: offset {offset}");
            }
            other => panic!("a damaged synced chunk must be corruption ({end:?}): {other:?}"),
        }
    }
    assert_eq!(
        damage_newest_chunk(options, file, End::CrashBeforeMark).unwrap(),
        9,
        "a crash's torn tail"
    );
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
