//! Opening a segmented log: creating its first segment, or reading its segments back.
//!
//! Chunks are read in order from each segment; a bad chunk in a segment that is not the
//! last, or one followed by any valid chunk of this log later in the last segment (a clean
//! close always writes one), is [`Error::Corruption`]. Otherwise it is a torn tail (a crash
//! in mid-flush): the file is cut there and writing resumes, unless the log then ends
//! before the caller's committed sequence number (records it knows were synced), which is
//! corruption too, as is a log that starts after it (the oldest segment's `seq_floor` above
//! it: records the committed state needs were removed), and one whose newest chunk is a
//! segment end (`CHUNK_FLAG_SEGMENT_END`: the segment it names is gone). A roll a crash
//! interrupted (`segments.rs`: a newest segment without chunks, starting after the end
//! chunk its predecessor lacks or has torn) is undone: the predecessor's torn end is cut and
//! the empty segment removed. Every check runs before the first change to a file.

use std::collections::VecDeque;
use std::sync::Arc;

use lamina_core::{Error, Result};

use super::chunk::{
    BLOCK_BYTES, CHUNK_FLAG_SEGMENT_END, FILE_HEADER_BYTES, FileHeader, FileKind,
    SEGMENT_END_CHUNK_BYTES,
};
use super::options::SegmentLogOptions;
use super::record::{Record, SeqNo, resolve_batch_parts};
use super::recovery::{
    Opened, Sink, decode_payload, list_log_files, new_log_id, read_chunk, read_file_header,
};
use super::segments::{Segment, Segments, segment_capacity_bytes, segment_name};
use super::synced_mark;
use crate::backend::{Storage, StorageFile};

/// Opens or creates the segmented log described by `options` in `storage`.
/// What an engine's committed state says of its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    /// Records up to here are applied in the committed state; every later one is needed.
    pub applied_seq: SeqNo,
    /// The log was synced through here (at least `applied_seq`).
    pub synced_seq: SeqNo,
}

pub(crate) fn open_segments(
    storage: &Arc<dyn Storage>,
    options: &SegmentLogOptions,
    committed: Option<Committed>,
) -> Result<Opened> {
    let prefix = &options.log.file_prefix;
    let (has_ring, segments) = list_log_files(storage.as_ref(), prefix)?;
    if has_ring {
        return Err(Error::Incompatible {
            reason: format!("the log {prefix} is a ring; opened as a segmented log"),
        });
    }
    if !segments.is_empty() {
        return recover_segments(storage, &segments, options, committed);
    }
    let committed_seq = committed.map_or(0, |c| c.synced_seq);
    if committed_seq > 0 {
        return Err(Error::corruption(
            storage.path_of(&format!("{prefix}-*.seg")),
            0,
            format!(
                "no segment of the log is left, but the committed state says it was synced \
                 through sequence number {committed_seq}"
            ),
        ));
    }
    let log_id = new_log_id();
    let capacity_bytes =
        segment_capacity_bytes(options.segment_bytes, options.log.chunk_bytes_max());
    let segment =
        Segments::create_segment(storage.as_ref(), prefix, log_id, capacity_bytes, 0, 0, 0)?;
    let segments = Segments::new(
        storage.clone(),
        prefix.clone(),
        log_id,
        capacity_bytes,
        VecDeque::from([segment]),
        0,
    );
    Ok(Opened {
        sink: Sink::Segments(Arc::new(parking_lot::Mutex::new(segments))),
        records: Vec::new(),
        seq_hi: 0,
    })
}

fn recover_segments(
    storage: &Arc<dyn Storage>,
    names: &[(u64, String)],
    options: &SegmentLogOptions,
    committed: Option<Committed>,
) -> Result<Opened> {
    let committed_seq = committed.map_or(0, |c| c.synced_seq);
    // The torn tail to cut off once every check has passed: the file, its path, where.
    let mut torn: Option<TornTail> = None;
    let mut files = VecDeque::new();
    let mut records = Vec::new();
    let mut seq_hi = 0;
    let mut log_id = None;
    let mut head = 0;
    let mut capacity_bytes = 0;
    // The newest segment of a roll a crash interrupted: removed once every check passed.
    let mut unfinished_roll: Option<String> = None;
    // Whether the last segment read ends with a segment end chunk.
    let mut ended = false;
    for (i, (index, name)) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        // The next segment, if it is the newest and a roll that never finished made it.
        let unfinished_next = |log_id: u64, expected: u64| -> Result<bool> {
            match names.get(i + 1) {
                Some((_, next)) if i + 2 == names.len() => {
                    is_unfinished_roll(storage.as_ref(), next, log_id, expected)
                }
                _ => Ok(false),
            }
        };
        let (file, header, len) = read_file_header(storage.as_ref(), name)?;
        let path = storage.path_of(name);
        check_segment_header(&path, &header, *index, *log_id.get_or_insert(header.log_id))?;
        if i > 0 && header.base_pos != head {
            return Err(Error::corruption(
                &path,
                0,
                format!("segment starts at {} not {head}", header.base_pos),
            ));
        }
        if i == 0 {
            check_starts_by_committed(&path, header.seq_floor, committed)?;
        }
        capacity_bytes = header.capacity_bytes;
        seq_hi = seq_hi.max(header.seq_floor);
        let chunks = read_segment_chunks(file.as_ref(), &header, len, &path, &mut records)?;
        check_reaches_synced_mark(file.as_ref(), &header, &chunks, &path)?;
        ended = chunks.ended;
        if !last {
            // Only the torn (or missing) end chunk of an unfinished roll may end a segment
            // that is not the newest early.
            let unfinished = !chunks.ended && unfinished_next(header.log_id, chunks.end_pos)?;
            if chunks.damaged_end && !unfinished {
                return Err(damaged_chunk(&path, chunks.end_offset));
            }
            if unfinished {
                unfinished_roll = Some(names[i + 1].1.clone());
            }
        }
        if chunks.damaged_end {
            // A torn tail from a crash in mid-flush: cut off below.
            torn = Some((file.clone(), path.clone(), chunks.end_offset));
        }
        let (offset, expected, segment_seq_hi) = (chunks.end_offset, chunks.end_pos, chunks.seq_hi);
        seq_hi = seq_hi.max(segment_seq_hi);
        head = expected;
        files.push_back(Segment {
            index: *index,
            name: name.clone(),
            file,
            base_pos: header.base_pos,
            data_len: offset - FILE_HEADER_BYTES,
            capacity_bytes: header.capacity_bytes,
            seq_hi: segment_seq_hi,
            synced_marks: 0,
        });
        if unfinished_roll.is_some() {
            break;
        }
    }
    if ended {
        return Err(missing_segment(storage, &options.log.file_prefix, &files));
    }
    check_reaches_committed(storage, &files, torn.as_ref(), seq_hi, committed_seq)?;
    if let Some((file, _, offset)) = torn {
        file.set_len(offset)?;
        file.sync_data()?;
    }
    if let Some(name) = unfinished_roll {
        storage.remove(&name)?;
        storage.sync_dir()?;
    }
    let log_id = log_id.expect("at least one segment");
    // Segments keep the size the log was created with.
    let capacity_bytes =
        capacity_bytes.max(options.log.chunk_bytes_max() + SEGMENT_END_CHUNK_BYTES);
    let (mut records, record_seq_max) = resolve_batch_parts(records);
    records.sort_by_key(|r| r.seq);
    let segments = Segments::new(
        storage.clone(),
        options.log.file_prefix.clone(),
        log_id,
        capacity_bytes,
        files,
        head,
    );
    Ok(Opened {
        sink: Sink::Segments(Arc::new(parking_lot::Mutex::new(segments))),
        records,
        seq_hi: seq_hi.max(record_seq_max),
    })
}

/// Refuses a segment whose chunks end before its synced mark: it lost a synced chunk to
/// damage or a cut (a crash's torn write is never below the mark; `synced_mark.rs`).
fn check_reaches_synced_mark(
    file: &dyn StorageFile,
    header: &FileHeader,
    chunks: &SegmentChunks,
    path: &std::path::Path,
) -> Result<()> {
    match synced_mark::read(file, header.log_id)? {
        Some(synced_pos) if synced_pos > chunks.end_pos => {
            Err(synced_mark::chunks_lost(path, chunks.end_offset, chunks.end_pos, synced_pos))
        }
        _ => Ok(()),
    }
}

/// Checks that a segment's header matches its name and the log.
fn check_segment_header(
    path: &std::path::Path,
    header: &FileHeader,
    index: u64,
    log_id: u64,
) -> Result<()> {
    if header.kind != FileKind::Segment || header.file_index != index {
        return Err(Error::corruption(path, 0, "segment header does not match its name"));
    }
    if header.log_id != log_id {
        return Err(Error::Incompatible {
            reason: format!("{} belongs to another log", path.display()),
        });
    }
    Ok(())
}

/// The error for a log whose newest segment ends with an end chunk: the segment it names is
/// gone.
fn missing_segment(storage: &Arc<dyn Storage>, prefix: &str, files: &VecDeque<Segment>) -> Error {
    let last = files.back().expect("at least one segment");
    let missing = segment_name(prefix, last.index + 1);
    Error::corruption(
        storage.path_of(&missing),
        0,
        format!(
            "this segment is missing: {} ends with a chunk saying the log continues in it",
            last.name
        ),
    )
}

/// What the chunks of one segment say.
struct SegmentChunks {
    /// File offset after the last valid chunk.
    end_offset: u64,
    /// Log position after it.
    end_pos: u64,
    /// Highest sequence number of the segment (its floor if it has no chunk).
    seq_hi: SeqNo,
    /// The last valid chunk is a segment end.
    ended: bool,
    /// A damaged chunk lies at `end_offset`, and no valid chunk of the log after it.
    damaged_end: bool,
}

/// Reads a segment's chunks in order, appending their records to `records`, up to the first
/// one that is not valid at its place. A valid chunk after that one, or after an end chunk,
/// is [`Error::Corruption`].
fn read_segment_chunks(
    file: &dyn StorageFile,
    header: &FileHeader,
    len: u64,
    path: &std::path::Path,
    records: &mut Vec<Record>,
) -> Result<SegmentChunks> {
    let limit = len.min(FILE_HEADER_BYTES + header.capacity_bytes);
    let mut out = SegmentChunks {
        end_offset: FILE_HEADER_BYTES,
        end_pos: header.base_pos,
        seq_hi: header.seq_floor,
        ended: false,
        damaged_end: false,
    };
    while out.end_offset < len {
        match read_chunk(file, out.end_offset, limit, header.log_id)? {
            Some((chunk, payload)) if chunk.pos == out.end_pos => {
                if out.ended {
                    return Err(Error::corruption(
                        path,
                        out.end_offset,
                        "a chunk after the segment's end chunk",
                    ));
                }
                out.ended = chunk.flags & CHUNK_FLAG_SEGMENT_END != 0;
                records.extend(decode_payload(&payload, path, out.end_offset)?);
                out.seq_hi = out.seq_hi.max(chunk.seq_hi);
                out.end_offset += chunk.chunk_len();
                out.end_pos = chunk.end();
            }
            _ => {
                if valid_chunk_after(file, out.end_offset, limit, header.log_id, out.end_pos)? {
                    return Err(damaged_chunk(path, out.end_offset));
                }
                out.damaged_end = true;
                break;
            }
        }
    }
    Ok(out)
}

fn damaged_chunk(path: &std::path::Path, offset: u64) -> Error {
    Error::corruption(path, offset, "damaged chunk followed by valid chunks")
}

fn valid_chunk_after(
    file: &dyn StorageFile,
    bad: u64,
    limit: u64,
    log_id: u64,
    expected: u64,
) -> Result<bool> {
    let mut offset = bad + BLOCK_BYTES as u64;
    while offset < limit {
        if let Some((chunk, _)) = read_chunk(file, offset, limit, log_id)?
            && chunk.pos > expected
        {
            return Ok(true);
        }
        offset += BLOCK_BYTES as u64;
    }
    Ok(false)
}

/// Whether segment `name` is the newest segment of a roll a crash interrupted, its
/// predecessor's chunks ending at log position `expected` without the end chunk: it starts
/// right after where that end chunk goes and holds no chunk of the log (the writer writes to
/// a new segment only after the end chunk is synced).
fn is_unfinished_roll(
    storage: &dyn Storage,
    name: &str,
    log_id: u64,
    expected: u64,
) -> Result<bool> {
    let (file, header, len) = read_file_header(storage, name)?;
    if header.kind != FileKind::Segment
        || header.log_id != log_id
        || header.base_pos != expected + SEGMENT_END_CHUNK_BYTES
    {
        return Ok(false);
    }
    let limit = len.min(FILE_HEADER_BYTES + header.capacity_bytes);
    let mut offset = FILE_HEADER_BYTES;
    while offset < limit {
        if read_chunk(file.as_ref(), offset, limit, log_id)?.is_some() {
            return Ok(false);
        }
        offset += BLOCK_BYTES as u64;
    }
    Ok(true)
}

/// Refuses a log whose oldest segment starts after the committed state's applied sequence
/// number: the records in between were in segments removed before it, and the committed
/// state still needs them (an older superblock slot was recovered because the newest is
/// damaged, or the oldest segments were deleted).
fn check_starts_by_committed(
    path: &std::path::Path,
    seq_floor: SeqNo,
    committed: Option<Committed>,
) -> Result<()> {
    match committed {
        Some(Committed { applied_seq, .. }) if seq_floor > applied_seq => Err(Error::corruption(
            path,
            0,
            format!(
                "the log starts after sequence number {seq_floor}, but the committed state \
                 needs its records from {} on (a newer committed state lost, or older \
                 segments deleted?)",
                applied_seq + 1
            ),
        )),
        _ => Ok(()),
    }
}

/// The type of the torn tail found by recovery: the file, its path, the offset to cut at.
type TornTail = (Arc<dyn StorageFile>, std::path::PathBuf, u64);

/// Refuses a log that ends before `committed_seq`, the sequence number through which the
/// caller's committed state says the log was synced: a lost later segment or a damaged last
/// chunk would otherwise silently revert acknowledged writes. Nothing is modified here.
fn check_reaches_committed(
    storage: &Arc<dyn Storage>,
    files: &VecDeque<Segment>,
    torn: Option<&TornTail>,
    seq_hi: SeqNo,
    committed_seq: SeqNo,
) -> Result<()> {
    if seq_hi >= committed_seq {
        return Ok(());
    }
    let (path, offset, what) = match torn {
        Some((_, path, offset)) => (path.clone(), *offset, "a damaged chunk ends the log"),
        None => {
            let last = files.back().expect("at least one segment");
            let path = storage.path_of(&last.name);
            (path, FILE_HEADER_BYTES + last.data_len, "the log ends (a later segment lost?)")
        }
    };
    Err(Error::corruption(
        &path,
        offset,
        format!(
            "{what} at sequence number {seq_hi}, before {committed_seq}, through which the \
             committed state says it was synced"
        ),
    ))
}
