//! A segmented log's rolls, seen from its files (`docs/format/log.md`, "Segment end"):
//! every segment but the newest ends with an end chunk naming its successor, so a deleted
//! newest segment is `Corruption` naming it (it read as a crash before the segment and lost
//! its writes silently); a roll a crash interrupted (the new segment created, the old one's
//! end chunk not yet synced) is undone at recovery.

use std::sync::Arc;

use lamina_core::codec::Encode;
use lamina_core::{Durability, Error};
use lamina_storage::log::chunk::{FileHeader, SEGMENT_END_CHUNK_BYTES};
use lamina_storage::log::synced_mark::{SYNCED_MARK_OFFSETS, SyncedMark};
use lamina_storage::log::{LogOp, LogOptions, Record, SegmentLog, SegmentLogOptions};
use lamina_storage::{MemoryStorage, OpenMode, Storage};

const BUFFER_BYTES: usize = 16 * 1024;

fn options() -> SegmentLogOptions {
    let log = LogOptions {
        durability: Durability::Sync,
        buffer_bytes: BUFFER_BYTES,
        ..LogOptions::default()
    };
    // The smallest segments the buffer allows: 9 chunks of 4 KiB of data.
    let segment_bytes = log.chunk_bytes_max();
    SegmentLogOptions { log, segment_bytes }
}

/// The segment files, oldest first.
fn segments(storage: &Arc<dyn Storage>) -> Vec<String> {
    let mut names: Vec<String> =
        storage.list().unwrap().into_iter().filter(|n| n.starts_with("wal-")).collect();
    names.sort();
    names
}

/// A log of `puts` acknowledged puts (one 4 KiB chunk each), closed cleanly or crashed.
fn written(puts: u32, clean: bool) -> Arc<dyn Storage> {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let log = SegmentLog::open(storage.clone(), options(), |_| {}).unwrap();
    for i in 0..puts {
        log.append(LogOp::Put { key: &i.to_be_bytes(), value: b"acknowledged" }).unwrap();
    }
    if clean {
        log.close().unwrap();
    } else {
        log.abandon();
    }
    storage
}

fn reopen(storage: &Arc<dyn Storage>) -> Result<Vec<Record>, Error> {
    let mut records = Vec::new();
    let log = SegmentLog::open(storage.clone(), options(), |r| records.push(r))?;
    log.close()?;
    Ok(records)
}

#[test]
fn a_deleted_newest_segment_is_corruption_naming_it() {
    for clean in [true, false] {
        let storage = written(30, clean);
        let names = segments(&storage);
        assert!(names.len() >= 3, "the log rolled: {names:?}");
        let newest = names.last().unwrap();
        storage.remove(newest).unwrap();
        let err = reopen(&storage).expect_err("a log without its newest segment opened");
        let text = err.to_string();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
        assert!(text.contains(newest.as_str()) && text.contains("missing"), "{text}");
        // Refused before anything changed: the older segments are all still there.
        assert_eq!(segments(&storage), names[..names.len() - 1]);
    }
}

#[test]
fn an_intact_log_reopens_whole_after_rolls() {
    for clean in [true, false] {
        let storage = written(30, clean);
        assert_eq!(reopen(&storage).unwrap().len(), 30);
        // And again, after the reopen's writes.
        let log = SegmentLog::open(storage.clone(), options(), |_| {}).unwrap();
        for i in 30..60u32 {
            log.append(LogOp::Put { key: &i.to_be_bytes(), value: b"later" }).unwrap();
        }
        log.close().unwrap();
        assert_eq!(reopen(&storage).unwrap().len(), 60);
    }
}

/// How a crash interrupted the roll into the newest segment.
#[derive(Debug, Clone, Copy)]
enum Interrupted {
    /// Before the old segment's end chunk was written.
    NoEndChunk,
    /// While it was written: torn.
    TornEndChunk,
}

/// The files a crash leaves when it interrupts the last roll: the newest segment holds its
/// header only, and its predecessor lacks its end chunk or has it torn.
fn interrupt_last_roll(storage: &Arc<dyn Storage>, how: Interrupted) -> Vec<String> {
    let names = segments(storage);
    let (newest, before) = (&names[names.len() - 1], &names[names.len() - 2]);
    let newest_file = storage.open(newest, OpenMode::Existing).unwrap();
    newest_file.set_len(4096).unwrap();
    let before_file = storage.open(before, OpenMode::Existing).unwrap();
    let end_chunk_at = before_file.len().unwrap() - SEGMENT_END_CHUNK_BYTES;
    // The end chunk's sync never returned, so the predecessor's synced mark still says its
    // data chunks (`docs/format/log.md`, "Synced mark").
    let mut block = vec![0u8; 4096];
    before_file.read_exact_at(0, &mut block).unwrap();
    let header = FileHeader::parse(&block, std::path::Path::new(before)).unwrap();
    let mark = SyncedMark { log_id: header.log_id, end_pos: header.base_pos + end_chunk_at - 4096 };
    for offset in SYNCED_MARK_OFFSETS {
        before_file.write_all_at(offset, &mark.encode()).unwrap();
    }
    match how {
        Interrupted::NoEndChunk => before_file.set_len(end_chunk_at).unwrap(),
        Interrupted::TornEndChunk => {
            before_file.write_all_at(end_chunk_at + 8, &[0xA5; 40]).unwrap();
        }
    }
    names
}

#[test]
fn a_roll_a_crash_interrupted_is_undone() {
    for how in [Interrupted::NoEndChunk, Interrupted::TornEndChunk] {
        let storage = written(30, false);
        let names = segments(&storage);
        // The puts in the newest segment, lost with it here (a crash in the roll loses none:
        // nothing is written to the new segment before the end chunk is synced).
        let in_newest = {
            let file = storage.open(names.last().unwrap(), OpenMode::Existing).unwrap();
            (file.len().unwrap() - 4096) / 4096
        };
        interrupt_last_roll(&storage, how);
        let mut records = Vec::new();
        let log = SegmentLog::open(storage.clone(), options(), |r| records.push(r))
            .unwrap_or_else(|e| panic!("{how:?}: {e}"));
        assert_eq!(records.len() as u64, 30 - in_newest, "{how:?}");
        assert_eq!(segments(&storage), names[..names.len() - 1], "{how:?}: new segment removed");
        log.close().unwrap();
        // The log goes on: it rolls again, and every later write is read back.
        let log = SegmentLog::open(storage.clone(), options(), |_| {}).unwrap();
        for i in 100..130u32 {
            log.append(LogOp::Put { key: &i.to_be_bytes(), value: b"after" }).unwrap();
        }
        log.close().unwrap();
        assert_eq!(reopen(&storage).unwrap().len() as u64, 30 - in_newest + 30, "{how:?}");
    }
}

#[test]
fn a_damaged_end_chunk_before_a_segment_with_chunks_is_corruption() {
    // The newest segment has chunks, so the roll finished: its predecessor's end chunk was
    // synced, and damage to it is not a crash's.
    let storage = written(30, false);
    let names = segments(&storage);
    let before = &names[names.len() - 2];
    let file = storage.open(before, OpenMode::Existing).unwrap();
    let end_chunk_at = file.len().unwrap() - SEGMENT_END_CHUNK_BYTES;
    file.write_all_at(end_chunk_at + 8, &[0xA5; 40]).unwrap();
    let err = reopen(&storage).expect_err("a damaged end chunk opened");
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains(before.as_str()), "{err}");
}
