//! The synced mark (`docs/format/log.md`, "Synced mark"): after a crash, a segment log cut in
//! half or whose newest chunk is damaged is `Corruption` naming the file, where it read as
//! a crash's torn write and lost acknowledged writes without an error (the crash-image
//! damage sweep, `docs/results/reliability.md`); a write the crash really tore, past the
//! mark, is still cut as a torn tail, and damage to the mark itself loses nothing.

use std::sync::Arc;

use lamina_core::{Durability, Error};
use lamina_storage::log::synced_mark::{SYNCED_MARK_BYTES, SYNCED_MARK_OFFSETS};
use lamina_storage::log::{LogOp, LogOptions, Record, SegmentLog, SegmentLogOptions};
use lamina_storage::{MemoryStorage, OpenMode, Storage, StorageFile};

const SEGMENT: &str = "wal-0000000000000000.seg";
const PUTS: u32 = 10;

fn options() -> SegmentLogOptions {
    let log = LogOptions { durability: Durability::Sync, ..LogOptions::default() };
    SegmentLogOptions { log, segment_bytes: 4 << 20 }
}

/// `PUTS` acknowledged puts, one synced chunk each (blocks 1 to 10), then a crash.
fn crashed() -> Arc<dyn Storage> {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let log = SegmentLog::open(storage.clone(), options(), |_| {}).unwrap();
    for i in 0..PUTS {
        log.append(LogOp::Put { key: &i.to_be_bytes(), value: b"acknowledged" }).unwrap();
    }
    log.abandon();
    storage
}

fn segment(storage: &Arc<dyn Storage>) -> Arc<dyn StorageFile> {
    storage.open(SEGMENT, OpenMode::Existing).unwrap()
}

fn reopen(storage: &Arc<dyn Storage>) -> Result<Vec<Record>, Error> {
    let mut records = Vec::new();
    let log = SegmentLog::open(storage.clone(), options(), |r| records.push(r))?;
    log.close()?;
    Ok(records)
}

fn assert_corruption_naming_the_segment(err: &Error) {
    match err {
        Error::Corruption { file, .. } => {
            assert!(file.to_string_lossy().ends_with(SEGMENT), "{}", file.display());
            assert!(err.to_string().contains("synced"), "{err}");
        }
        other => panic!("expected Corruption, got {other}"),
    }
}

#[test]
fn a_segment_cut_in_half_after_a_crash_is_corruption() {
    let storage = crashed();
    let file = segment(&storage);
    let len = file.len().unwrap();
    assert_eq!(len, (1 + u64::from(PUTS)) * 4096, "one block of header, one per chunk");
    file.set_len(len / 2).unwrap();
    let err = reopen(&storage).expect_err("a log cut in half opened");
    assert_corruption_naming_the_segment(&err);
    // Refused before anything changed.
    assert_eq!(segment(&storage).len().unwrap(), len / 2);
}

#[test]
fn the_newest_chunk_damaged_after_a_crash_is_corruption() {
    let storage = crashed();
    let file = segment(&storage);
    let at = u64::from(PUTS) * 4096 + 70;
    let mut byte = [0u8];
    file.read_exact_at(at, &mut byte).unwrap();
    file.write_all_at(at, &[byte[0] ^ 0x20]).unwrap();
    let err = reopen(&storage).expect_err("a damaged synced chunk opened");
    assert_corruption_naming_the_segment(&err);
    match err {
        Error::Corruption { offset, .. } => assert_eq!(offset, u64::from(PUTS) * 4096),
        _ => unreachable!(),
    }
}

#[test]
fn a_torn_write_past_the_mark_is_still_a_torn_tail() {
    let storage = crashed();
    let file = segment(&storage);
    // The next chunk's write, torn by the crash: half a block of what a chunk starts with.
    let next = (1 + u64::from(PUTS)) * 4096;
    file.write_all_at(next, &[0x4c; 2048]).unwrap();
    assert_eq!(reopen(&storage).unwrap().len(), PUTS as usize);
    // The torn bytes were cut; the log goes on.
    assert_eq!(segment(&storage).len().unwrap() % 4096, 0);
    assert_eq!(reopen(&storage).unwrap().len(), PUTS as usize);
}

#[test]
fn damage_to_the_mark_itself_loses_nothing() {
    for damaged in [vec![0], vec![1], vec![0, 1]] {
        let storage = crashed();
        let file = segment(&storage);
        for slot in damaged {
            let at = SYNCED_MARK_OFFSETS[slot] + 17;
            file.write_all_at(at, &[0xa5]).unwrap();
        }
        assert_eq!(reopen(&storage).unwrap().len(), PUTS as usize);
    }
}

#[test]
fn a_log_without_marks_reads_as_before() {
    // As written by a build before the mark: the newest chunk damaged reads as a torn tail.
    let storage = crashed();
    let file = segment(&storage);
    for offset in SYNCED_MARK_OFFSETS {
        file.write_all_at(offset, &[0; SYNCED_MARK_BYTES]).unwrap();
    }
    let at = u64::from(PUTS) * 4096 + 70;
    file.write_all_at(at, &[0xee]).unwrap();
    assert_eq!(reopen(&storage).unwrap().len(), PUTS as usize - 1);
}
