//! Opening a log, the parts both logs share: what an opened log hands to the group-commit
//! writer, reading file headers and chunks back, and leftovers of interrupted file
//! creation. The ring's recovery is in `ring_recovery.rs`, the segments' in
//! `segment_recovery.rs`.
//!
//! Recovery verifies every chunk's checksums, accepts a torn or incomplete chunk only where
//! a crash in mid-flush can leave one (after the newest valid chunk, and only if that chunk
//! is not a clean close's), and reports [`Error::Corruption`] with the file and offset for
//! any other bad chunk. Records are returned sorted by sequence number (one pass in sequence
//! order replaces the contest paper's two passes).

use std::path::Path;
use std::sync::Arc;

use lamina_core::codec::Decode;
use lamina_core::{Error, Result};

use super::chunk::{BLOCK_BYTES, CHUNK_HEADER_BYTES, ChunkHeader, FILE_HEADER_BYTES, FileHeader};
use super::record::{Record, SeqNo, decode_records};
use super::ring::Ring;
use super::segments::{Segments, parse_segment_name};
use crate::backend::{OpenMode, Storage, StorageFile, io_error_kind};

/// Where the log writes.
#[derive(Debug)]
pub(crate) enum Sink {
    Ring(Box<Ring>),
    Segments(Arc<parking_lot::Mutex<Segments>>),
}

/// What opening a log found.
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

/// Removes the leftovers of a log file creation interrupted by a crash (never renamed,
/// never used), and says which of the log's files exist: whether the ring does, and the
/// segments, oldest first.
pub(crate) fn list_log_files(
    storage: &dyn Storage,
    prefix: &str,
) -> Result<(bool, Vec<(u64, String)>)> {
    let names = storage.list()?;
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
    Ok((has_ring, segments))
}

pub(crate) fn new_log_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    // splitmix64 finalizer
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

pub(crate) fn read_file_header(
    storage: &dyn Storage,
    name: &str,
) -> Result<(Arc<dyn StorageFile>, FileHeader, u64)> {
    let file = storage.open(name, OpenMode::Existing)?;
    let path = storage.path_of(name);
    let len = file.len()?;
    if len < FILE_HEADER_BYTES {
        // Log files are renamed into place with their header written and synced.
        return Err(Error::corruption(
            &path,
            len,
            format!("a log file of {len} bytes, shorter than its header"),
        ));
    }
    let mut block = vec![0u8; BLOCK_BYTES];
    file.read_exact_at(0, &mut block)?;
    let header = FileHeader::parse(&block, &path)?;
    Ok((file, header, len))
}

/// Reads the chunk at `offset` if it is a complete, valid chunk of log `log_id` ending at or
/// before `limit`; `None` for anything else (garbage, torn, another log's chunk).
pub(crate) fn read_chunk(
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

pub(crate) fn decode_payload(payload: &[u8], path: &Path, offset: u64) -> Result<Vec<Record>> {
    decode_records(payload).map_err(|e| e.at(path, offset + CHUNK_HEADER_BYTES as u64))
}
