//! Opening a ring: creating it, or reading it back after a clean close or a crash.
//!
//! Every 4 KiB slot of every segment is probed for a valid chunk of this log whose position
//! matches its place in its segment (`pos % segment_bytes`). The newest valid chunk (largest
//! `pos`) ends the log; its `tail` starts it; the chunks from `tail` to the newest must form
//! an unbroken chain. Anything after the newest chunk is a torn tail or older data, unless
//! the newest chunk is a clean close's: then there was no crash, and a chain that breaks is
//! corruption, as a damaged chunk anywhere else always is. A ring whose file is shorter
//! than the segments its chunks say it had was cut short: corruption too, as is a missing
//! ring when the caller says the database exists.

use std::collections::VecDeque;
use std::sync::Arc;

use lamina_core::{Error, Result};

use super::chunk::{
    BLOCK_BYTES, CHUNK_FLAG_CLEAN_CLOSE, CHUNK_HEADER_BYTES, ChunkHeader, FILE_HEADER_BYTES,
    FileHeader, FileKind, RING_FORMAT_VERSION, RING_SEGMENTS_MAX,
};
use super::options::{RING_SEGMENTS_INITIAL, RingLogOptions};
use super::record::resolve_batch_parts;
use super::recovery::{
    Opened, Sink, decode_payload, list_log_files, new_log_id, read_chunk, read_file_header,
    ring_name,
};
use super::ring::{Layout, Ring, RingParts, SegmentSlot, Span};
use super::segments::create_log_file;
use super::synced_mark;
use crate::backend::{Storage, StorageFile};

/// What opening a ring found, beyond what every log reports.
#[derive(Debug)]
pub(crate) struct OpenedRing {
    pub opened: Opened,
    /// Whether the newest chunk was written by a clean close.
    pub clean: bool,
}

/// Most active segments `budget` allows in a ring of `segment_bytes` segments (at least
/// one: a ring never strands its data, it refuses writes that add data instead).
pub(crate) fn active_max(budget: Option<u64>, segment_bytes: u64) -> u64 {
    budget.map_or(u64::from(RING_SEGMENTS_MAX), |budget| {
        (budget.saturating_sub(FILE_HEADER_BYTES) / segment_bytes)
            .clamp(1, u64::from(RING_SEGMENTS_MAX))
    })
}

/// Opens or creates the ring described by `options` in `storage`.
pub(crate) fn open_ring(
    storage: &Arc<dyn Storage>,
    options: &RingLogOptions,
) -> Result<OpenedRing> {
    let prefix = &options.log.file_prefix;
    let (has_ring, segments) = list_log_files(storage.as_ref(), prefix)?;
    let name = ring_name(prefix);
    if !segments.is_empty() {
        return Err(Error::Incompatible {
            reason: format!("the log {prefix} is a segmented log; opened as a ring"),
        });
    }
    if has_ring {
        return recover_ring(storage.as_ref(), &name, options);
    }
    if options.intent.must_exist() {
        return Err(Error::corruption(
            storage.path_of(&name),
            0,
            "the log ring is missing, but the database exists: its records are lost (restore \
             the file from a backup)",
        ));
    }
    let segment_bytes = options.segment_bytes_for_new_ring();
    let active_max = active_max(options.disk_budget_bytes, segment_bytes);
    let count = RING_SEGMENTS_INITIAL.min(active_max);
    let log_id = new_log_id();
    let header = FileHeader {
        kind: FileKind::Ring,
        version: RING_FORMAT_VERSION,
        log_id,
        file_index: count,
        base_pos: 0,
        capacity_bytes: segment_bytes,
        seq_floor: 0,
    };
    let file = create_log_file(
        storage.as_ref(),
        &name,
        &header,
        FILE_HEADER_BYTES + count * segment_bytes,
    )?;
    let ring = Ring::new(RingParts {
        file,
        path: storage.path_of(&name),
        log_id,
        version: RING_FORMAT_VERSION,
        seq_floor: 0,
        header_segments: count,
        layout: Layout::new(segment_bytes, count as usize),
        payload_max: options.log.chunk_payload_max(),
        head: 0,
        tail: 0,
        spans: VecDeque::new(),
        active_max,
        disk_budget_bytes: options.disk_budget_bytes,
    });
    let opened = Opened { sink: Sink::Ring(Box::new(ring)), records: Vec::new(), seq_hi: 0 };
    Ok(OpenedRing { opened, clean: false })
}

/// A valid chunk found in the ring.
#[derive(Debug, Clone, Copy)]
struct Found {
    header: ChunkHeader,
    segment: usize,
    /// Offset in its segment.
    offset: u64,
}

fn recover_ring(storage: &dyn Storage, name: &str, options: &RingLogOptions) -> Result<OpenedRing> {
    let (file, header, len) = read_file_header(storage, name)?;
    let path = storage.path_of(name);
    if header.kind != FileKind::Ring {
        return Err(Error::Incompatible {
            reason: format!("{} is a log segment, not a ring", path.display()),
        });
    }
    let segment_bytes = header.capacity_bytes;
    if segment_bytes < options.segment_bytes_min() {
        return Err(Error::Incompatible {
            reason: format!(
                "{}: ring segments of {segment_bytes} bytes are below the {} bytes \
                 buffer_bytes {} needs",
                path.display(),
                options.segment_bytes_min(),
                options.log.buffer_bytes
            ),
        });
    }
    // A version 1 ring is one segment, whatever follows it in the file.
    let in_file = (len - FILE_HEADER_BYTES) / segment_bytes;
    let count = if header.version == 1 { in_file.min(1) } else { in_file };
    // The header records how many segments the file grew to (0 in version 1: one).
    let header_segments = header.file_index.max(1);
    if count < header_segments {
        return Err(Error::corruption(
            &path,
            len,
            format!(
                "the ring file is {len} bytes: {count} segments of {segment_bytes} bytes, but \
                 it had {header_segments}: it was cut short"
            ),
        ));
    }
    if count == 0 {
        return Err(Error::corruption(
            &path,
            len,
            format!(
                "the ring file is {len} bytes, shorter than its header and one segment of \
                 {segment_bytes} bytes: it was cut short"
            ),
        ));
    }
    let count = count.min(u64::from(RING_SEGMENTS_MAX)) as usize;
    let found = scan(file.as_ref(), header.log_id, segment_bytes, count)?;
    let payload_max = options
        .log
        .chunk_payload_max()
        .max(found.iter().map(|f| f.header.payload_len as usize).max().unwrap_or(0));
    let active_max = active_max(options.disk_budget_bytes, segment_bytes);
    let parts = |layout, head, tail, spans| RingParts {
        file: file.clone(),
        path: path.clone(),
        log_id: header.log_id,
        version: header.version,
        seq_floor: header.seq_floor,
        header_segments,
        layout,
        payload_max,
        head,
        tail,
        spans,
        active_max,
        disk_budget_bytes: options.disk_budget_bytes,
    };
    let offset_of = |f: &Found| FILE_HEADER_BYTES + f.segment as u64 * segment_bytes + f.offset;
    let newest = found.iter().copied().max_by_key(|f| f.header.pos);
    // The chunks found reach at least the ring's synced mark: a ring whose newest valid
    // chunk ends before lost a synced chunk to damage (a crash's torn write is never below
    // the mark; `synced_mark.rs`).
    let newest_end = newest.map_or(0, |f| f.header.end());
    if let Some(synced_pos) = synced_mark::read(file.as_ref(), header.log_id)?
        && synced_pos > newest_end
    {
        let offset = newest.as_ref().map_or(FILE_HEADER_BYTES, offset_of);
        return Err(synced_mark::chunks_lost(&path, offset, newest_end, synced_pos));
    }
    let Some(newest) = newest else {
        let ring = Ring::new(parts(Layout::new(segment_bytes, count), 0, 0, VecDeque::new()));
        let opened = Opened {
            sink: Sink::Ring(Box::new(ring)),
            records: Vec::new(),
            seq_hi: header.seq_floor,
        };
        return Ok(OpenedRing { opened, clean: false });
    };
    let (tail, end) = (newest.header.tail, newest.header.end());
    if tail > newest.header.pos {
        return Err(Error::corruption(&path, offset_of(&newest), "chunk tail out of range"));
    }
    let window: Vec<Found> = found.iter().copied().filter(|f| f.header.pos >= tail).collect();
    let (window, spans, records, expected) =
        read_window(file.as_ref(), &path, header.log_id, segment_bytes, count, len, tail, window)?;
    assert_eq!(expected, end, "window must end with the newest chunk");
    let (mut records, record_seq_max) = resolve_batch_parts(records);
    records.sort_by_key(|r| r.seq);
    let layout = recovered_layout(segment_bytes, count, &found, &window, &newest);
    let ring = Ring::new(parts(layout, end, tail, spans));
    let clean = newest.header.flags & CHUNK_FLAG_CLEAN_CLOSE != 0;
    let seq_hi = newest.header.seq_hi.max(header.seq_floor).max(record_seq_max);
    let opened = Opened { sink: Sink::Ring(Box::new(ring)), records, seq_hi };
    Ok(OpenedRing { opened, clean })
}

/// Checks that the window `[tail, ..)` is an unbroken chain of valid chunks written while
/// the file had at most `count` segments, and reads its records. Returns the window sorted by
/// position, its spans, its records and the end of its last chunk.
#[allow(clippy::too_many_arguments)] // one caller; the ring's geometry and the window
#[allow(clippy::type_complexity)]
fn read_window(
    file: &dyn StorageFile,
    path: &std::path::Path,
    log_id: u64,
    segment_bytes: u64,
    count: usize,
    len: u64,
    tail: u64,
    mut window: Vec<Found>,
) -> Result<(Vec<Found>, VecDeque<Span>, Vec<super::record::Record>, u64)> {
    let offset_of = |f: &Found| FILE_HEADER_BYTES + f.segment as u64 * segment_bytes + f.offset;
    window.sort_by_key(|f| f.header.pos);
    let mut expected = tail;
    let mut spans = VecDeque::new();
    let mut records = Vec::new();
    for (i, f) in window.iter().enumerate() {
        let chunk = f.header;
        let chained = if i == 0 { chunk.pos == tail } else { chunk.prev_end == expected };
        if !chained {
            return Err(Error::corruption(
                path,
                missing_at(&window, i, segment_bytes),
                "damaged or missing chunk followed by valid chunks",
            ));
        }
        // Version 1 rings record no segment count (0: one segment).
        if chunk.ring_segments as usize > count {
            return Err(Error::corruption(
                path,
                len,
                format!(
                    "the chunk at offset {} was written when the ring had {} segments; the \
                     file holds {count}: it was cut short",
                    offset_of(f),
                    chunk.ring_segments
                ),
            ));
        }
        let offset = offset_of(f);
        let limit = offset + chunk.chunk_len();
        let Some((_, payload)) = read_chunk(file, offset, limit, log_id)? else {
            return Err(Error::corruption(path, offset, "chunk changed during recovery"));
        };
        records.extend(decode_payload(&payload, path, offset)?);
        spans.push_back(Span {
            pos: chunk.pos,
            len: chunk.chunk_len(),
            payload_len: chunk.payload_len,
            segment: f.segment,
        });
        expected = chunk.end();
    }
    Ok((window, spans, records, expected))
}

/// Every valid chunk of log `log_id` in the first `count` segments, each at the offset its
/// position calls for. Reads a segment at a time.
fn scan(
    file: &dyn StorageFile,
    log_id: u64,
    segment_bytes: u64,
    count: usize,
) -> Result<Vec<Found>> {
    use lamina_core::codec::Decode;
    let mut found = Vec::new();
    let mut buf = vec![0u8; usize::try_from(segment_bytes).expect("segments fit in memory")];
    for segment in 0..count {
        let start = FILE_HEADER_BYTES + segment as u64 * segment_bytes;
        file.read_exact_at(start, &mut buf)?;
        let mut offset = 0u64;
        while offset + BLOCK_BYTES as u64 <= segment_bytes {
            let at = offset as usize;
            let chunk = ChunkHeader::decode(&buf[at..at + BLOCK_BYTES]).ok().filter(|chunk| {
                let end = offset + chunk.chunk_len();
                chunk.log_id == log_id
                    && chunk.pos % segment_bytes == offset
                    && end <= segment_bytes
                    && chunk.payload_matches(
                        &buf[at + CHUNK_HEADER_BYTES..][..chunk.payload_len as usize],
                    )
            });
            match chunk {
                Some(header) => {
                    found.push(Found { header, segment, offset });
                    offset += header.chunk_len();
                }
                None => offset += BLOCK_BYTES as u64,
            }
        }
    }
    Ok(found)
}

/// File offset where the chunk that should precede `window[i]` would have been: right after
/// the chunk before it, in that chunk's segment (or at `tail` for the first).
fn missing_at(window: &[Found], i: usize, segment_bytes: u64) -> u64 {
    let at =
        |segment: usize, offset: u64| FILE_HEADER_BYTES + segment as u64 * segment_bytes + offset;
    match i {
        0 => at(window[0].segment, window[0].header.tail % segment_bytes),
        _ => {
            let before = &window[i - 1];
            at(before.segment, before.offset + before.header.chunk_len())
        }
    }
}

/// The layout the chunks found describe: each segment's latest visit is the newest visit of
/// a window chunk in it; the writer is in the newest chunk's visit, over the newest older
/// visit whose chunks remain ahead of it in that segment. Zero-filling ahead stops at the
/// end of any valid chunk found (the rest of a segment may still be a hole).
fn recovered_layout(
    segment_bytes: u64,
    count: usize,
    found: &[Found],
    window: &[Found],
    newest: &Found,
) -> Layout {
    let mut slots = vec![SegmentSlot::FRESH; count];
    for f in found {
        let slot = &mut slots[f.segment];
        slot.written_to = slot.written_to.max(f.offset + f.header.chunk_len());
    }
    let visit = newest.header.pos / segment_bytes;
    let mut overwrites = None;
    for f in window {
        let v = f.header.pos / segment_bytes;
        let slot = &mut slots[f.segment];
        slot.latest = Some(slot.latest.map_or(v, |latest| latest.max(v)));
        if f.segment == newest.segment && v < visit {
            overwrites = Some(overwrites.map_or(v, |w: u64| w.max(v)));
        }
    }
    Layout::recovered(segment_bytes, slots, visit, newest.segment, overwrites)
}
