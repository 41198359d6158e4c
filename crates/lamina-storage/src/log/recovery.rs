//! Opening a log: creating it, or reading it back after a clean close or a crash.
//!
//! Recovery verifies every chunk's checksums, stops at a torn or incomplete chunk at the
//! tail (a crash in mid-flush), and reports [`Error::Corruption`] with the file and offset
//! for a bad chunk that valid chunks follow. Records are returned sorted by sequence number
//! (one pass in sequence order replaces the contest paper's two passes).

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use lamina_core::codec::Decode;
use lamina_core::{Error, Result};

use super::chunk::{
    BLOCK_BYTES, CHUNK_HEADER_BYTES, ChunkHeader, FILE_HEADER_BYTES, FileHeader, FileKind,
};
use super::options::{LogOptions, Retention};
use super::record::{Record, SeqNo, decode_records};
use super::ring::{Ring, Span};
use super::segments::{Segment, Segments, create_log_file, parse_segment_name};
use crate::backend::{OpenMode, Storage, StorageFile, io_error_kind};

/// Where the log writes.
#[derive(Debug)]
pub(crate) enum Sink {
    Ring(Box<Ring>),
    Segments(Arc<parking_lot::Mutex<Segments>>),
}

/// What [`open_sink`] found.
#[derive(Debug)]
pub(crate) struct Opened {
    pub sink: Sink,
    /// Every record of the log, in sequence order.
    pub records: Vec<Record>,
    /// Highest sequence number ever assigned (0 for a new log).
    pub seq_hi: SeqNo,
}

/// The ring file's name.
pub(crate) fn ring_name(prefix: &str) -> String {
    format!("{prefix}.ring")
}

fn new_log_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    // splitmix64 finalizer
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Opens or creates the log described by `options` in `storage`.
pub(crate) fn open_sink(storage: &Arc<dyn Storage>, options: &LogOptions) -> Result<Opened> {
    let prefix = &options.file_prefix;
    let names = storage.list()?;
    // Leftovers of a file creation interrupted by a crash: never renamed, never used.
    let ring = ring_name(prefix);
    for name in &names {
        let ours = name
            .strip_suffix(".tmp")
            .is_some_and(|base| base == ring || parse_segment_name(prefix, base).is_some());
        if ours {
            storage.remove(name)?;
        }
    }
    let has_ring = names.contains(&ring);
    let mut segments: Vec<(u64, String)> = names
        .iter()
        .filter_map(|n| parse_segment_name(prefix, n).map(|i| (i, n.clone())))
        .collect();
    segments.sort();
    match options.retention {
        Retention::Cyclic { .. } if !segments.is_empty() => Err(Error::Incompatible {
            reason: format!("the log {prefix} has truncate retention; opened as cyclic"),
        }),
        Retention::Truncate { .. } if has_ring => Err(Error::Incompatible {
            reason: format!("the log {prefix} has cyclic retention; opened as truncate"),
        }),
        Retention::Cyclic { capacity_bytes } if !has_ring => {
            let log_id = new_log_id();
            let header = FileHeader {
                kind: FileKind::Ring,
                log_id,
                file_index: 0,
                base_pos: 0,
                capacity_bytes,
                seq_floor: 0,
            };
            let file = create_log_file(
                storage.as_ref(),
                &ring,
                &header,
                FILE_HEADER_BYTES + capacity_bytes,
            )?;
            let path = storage.path_of(&ring);
            let payload_max = options.chunk_payload_max();
            let ring =
                Ring::new(file, path, log_id, capacity_bytes, payload_max, 0, 0, VecDeque::new());
            Ok(Opened { sink: Sink::Ring(Box::new(ring)), records: Vec::new(), seq_hi: 0 })
        }
        Retention::Cyclic { .. } => recover_ring(storage.as_ref(), &ring, options),
        Retention::Truncate { segment_bytes } if segments.is_empty() => {
            let log_id = new_log_id();
            let segment =
                Segments::create_segment(storage.as_ref(), prefix, log_id, segment_bytes, 0, 0, 0)?;
            let segments = Segments::new(
                storage.clone(),
                prefix.clone(),
                log_id,
                segment_bytes,
                VecDeque::from([segment]),
                0,
            );
            Ok(Opened {
                sink: Sink::Segments(Arc::new(parking_lot::Mutex::new(segments))),
                records: Vec::new(),
                seq_hi: 0,
            })
        }
        Retention::Truncate { .. } => recover_segments(storage, &segments, options),
    }
}

fn read_file_header(
    storage: &dyn Storage,
    name: &str,
) -> Result<(Arc<dyn StorageFile>, FileHeader, u64)> {
    let file = storage.open(name, OpenMode::Existing)?;
    let path = storage.path_of(name);
    let len = file.len()?;
    if len < FILE_HEADER_BYTES {
        return Err(Error::Incompatible {
            reason: format!("{} is not a lamina log file ({len} bytes)", path.display()),
        });
    }
    let mut block = vec![0u8; BLOCK_BYTES];
    file.read_exact_at(0, &mut block)?;
    let header = FileHeader::parse(&block, &path)?;
    Ok((file, header, len))
}

/// Reads the chunk at `offset` if it is a complete, valid chunk of log `log_id` ending at or
/// before `limit`; `None` for anything else (garbage, torn, another log's chunk).
fn read_chunk(
    file: &dyn StorageFile,
    offset: u64,
    limit: u64,
    log_id: u64,
) -> Result<Option<(ChunkHeader, Vec<u8>)>> {
    if offset + BLOCK_BYTES as u64 > limit {
        return Ok(None);
    }
    let mut block = vec![0u8; BLOCK_BYTES];
    match file.read_exact_at(offset, &mut block) {
        Ok(()) => {}
        Err(e) if io_error_kind(&e) == Some(std::io::ErrorKind::UnexpectedEof) => return Ok(None),
        Err(e) => return Err(e),
    }
    let Ok(header) = ChunkHeader::decode(&block) else { return Ok(None) };
    if header.log_id != log_id || offset + header.chunk_len() > limit {
        return Ok(None);
    }
    let payload_end = CHUNK_HEADER_BYTES + header.payload_len as usize;
    let mut payload = if payload_end <= BLOCK_BYTES {
        block[CHUNK_HEADER_BYTES..payload_end].to_vec()
    } else {
        let mut rest = vec![0u8; payload_end - BLOCK_BYTES];
        match file.read_exact_at(offset + BLOCK_BYTES as u64, &mut rest) {
            Ok(()) => {}
            Err(e) if io_error_kind(&e) == Some(std::io::ErrorKind::UnexpectedEof) => {
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
        let mut payload = block[CHUNK_HEADER_BYTES..].to_vec();
        payload.append(&mut rest);
        payload
    };
    if !header.payload_matches(&payload) {
        return Ok(None);
    }
    payload.shrink_to_fit();
    Ok(Some((header, payload)))
}

fn decode_payload(payload: &[u8], path: &Path, offset: u64) -> Result<Vec<Record>> {
    decode_records(payload).map_err(|e| e.at(path, offset + CHUNK_HEADER_BYTES as u64))
}

fn recover_ring(storage: &dyn Storage, name: &str, options: &LogOptions) -> Result<Opened> {
    let (file, header, len) = read_file_header(storage, name)?;
    let path = storage.path_of(name);
    if header.kind != FileKind::Ring {
        return Err(Error::Incompatible {
            reason: format!("{} is a log segment, not a ring", path.display()),
        });
    }
    let capacity = header.capacity_bytes;
    if capacity < options.ring_bytes_min() {
        return Err(Error::Incompatible {
            reason: format!(
                "{}: ring of {capacity} bytes is below the {} bytes buffer_bytes {} needs",
                path.display(),
                options.ring_bytes_min(),
                options.buffer_bytes
            ),
        });
    }
    let limit = (FILE_HEADER_BYTES + capacity).min(len);
    // Pass 1: every valid chunk in the ring.
    let mut found: Vec<(ChunkHeader, u64)> = Vec::new();
    let mut offset = FILE_HEADER_BYTES;
    while offset < limit {
        match read_chunk(file.as_ref(), offset, limit, header.log_id)? {
            Some((chunk, _)) if chunk.pos % capacity == offset - FILE_HEADER_BYTES => {
                found.push((chunk, offset));
                offset += chunk.chunk_len();
            }
            _ => offset += BLOCK_BYTES as u64,
        }
    }
    let offset_of = |pos: u64| FILE_HEADER_BYTES + pos % capacity;
    let payload_max = options.chunk_payload_max().max(header_payload_max(&found));
    let Some(&(newest, _)) = found.iter().max_by_key(|(c, _)| c.pos) else {
        let ring =
            Ring::new(file, path, header.log_id, capacity, payload_max, 0, 0, VecDeque::new());
        return Ok(Opened {
            sink: Sink::Ring(Box::new(ring)),
            records: Vec::new(),
            seq_hi: header.seq_floor,
        });
    };
    let (tail, end) = (newest.tail, newest.end());
    if tail > newest.pos || end - tail > capacity {
        return Err(Error::corruption(&path, offset_of(newest.pos), "chunk tail out of range"));
    }
    // Pass 2: the window [tail, end) must be an unbroken chain of valid chunks.
    let mut window: Vec<(ChunkHeader, u64)> =
        found.into_iter().filter(|(c, _)| c.pos >= tail).collect();
    window.sort_by_key(|(c, _)| c.pos);
    let mut expected = tail;
    let mut spans = VecDeque::new();
    let mut records = Vec::new();
    for (i, &(chunk, offset)) in window.iter().enumerate() {
        let chained = if i == 0 { chunk.pos == tail } else { chunk.prev_end == expected };
        if !chained {
            return Err(Error::corruption(
                &path,
                offset_of(expected),
                "damaged or missing chunk followed by valid chunks",
            ));
        }
        let Some((_, payload)) = read_chunk(file.as_ref(), offset, limit, header.log_id)? else {
            return Err(Error::corruption(&path, offset, "chunk changed during recovery"));
        };
        records.extend(decode_payload(&payload, &path, offset)?);
        spans.push_back(Span {
            pos: chunk.pos,
            len: chunk.chunk_len(),
            payload_len: chunk.payload_len,
        });
        expected = chunk.end();
    }
    assert_eq!(expected, end, "window must end with the newest chunk");
    records.sort_by_key(|r| r.seq);
    let ring = Ring::new(file, path, header.log_id, capacity, payload_max, end, tail, spans);
    Ok(Opened {
        sink: Sink::Ring(Box::new(ring)),
        records,
        seq_hi: newest.seq_hi.max(header.seq_floor),
    })
}

/// A log written with a larger buffer may hold larger chunks; collection must accept them.
fn header_payload_max(found: &[(ChunkHeader, u64)]) -> usize {
    found.iter().map(|(c, _)| c.payload_len as usize).max().unwrap_or(0)
}

fn recover_segments(
    storage: &Arc<dyn Storage>,
    names: &[(u64, String)],
    options: &LogOptions,
) -> Result<Opened> {
    let mut files = VecDeque::new();
    let mut records = Vec::new();
    let mut seq_hi = 0;
    let mut log_id = None;
    let mut head = 0;
    let mut segment_bytes = 0;
    for (i, (index, name)) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        let (file, header, len) = read_file_header(storage.as_ref(), name)?;
        let path = storage.path_of(name);
        if header.kind != FileKind::Segment || header.file_index != *index {
            return Err(Error::corruption(&path, 0, "segment header does not match its name"));
        }
        if *log_id.get_or_insert(header.log_id) != header.log_id {
            return Err(Error::Incompatible {
                reason: format!("{} belongs to another log", path.display()),
            });
        }
        if i > 0 && header.base_pos != head {
            return Err(Error::corruption(
                &path,
                0,
                format!("segment starts at {} not {head}", header.base_pos),
            ));
        }
        segment_bytes = header.capacity_bytes;
        seq_hi = seq_hi.max(header.seq_floor);
        let limit = len.min(FILE_HEADER_BYTES + header.capacity_bytes);
        let mut offset = FILE_HEADER_BYTES;
        let mut expected = header.base_pos;
        let mut segment_seq_hi = header.seq_floor;
        while offset < len {
            match read_chunk(file.as_ref(), offset, limit, header.log_id)? {
                Some((chunk, payload)) if chunk.pos == expected => {
                    records.extend(decode_payload(&payload, &path, offset)?);
                    segment_seq_hi = segment_seq_hi.max(chunk.seq_hi);
                    offset += chunk.chunk_len();
                    expected = chunk.end();
                }
                _ => {
                    if !last
                        || valid_chunk_after(file.as_ref(), offset, limit, header.log_id, expected)?
                    {
                        return Err(Error::corruption(
                            &path,
                            offset,
                            "damaged chunk followed by valid chunks",
                        ));
                    }
                    // A torn tail from a crash in mid-flush: cut it off.
                    file.set_len(offset)?;
                    file.sync_data()?;
                    break;
                }
            }
        }
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
        });
    }
    let log_id = log_id.expect("at least one segment");
    // Segment size stays what the log was created with.
    let segment_bytes = segment_bytes.max(options.chunk_bytes_max());
    records.sort_by_key(|r| r.seq);
    let segments = Segments::new(
        storage.clone(),
        options.file_prefix.clone(),
        log_id,
        segment_bytes,
        files,
        head,
    );
    Ok(Opened {
        sink: Sink::Segments(Arc::new(parking_lot::Mutex::new(segments))),
        records,
        seq_hi,
    })
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
