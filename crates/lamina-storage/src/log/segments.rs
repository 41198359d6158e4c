//! Truncate retention: the log is a sequence of segment files; the engine reports with
//! [`crate::log::Log::truncate`] up to which sequence number its data is persisted
//! elsewhere, and whole segments below that are removed.
//!
//! Moving to a new segment (a roll): the old segment is cut to its chunks, the new one is
//! created (header synced, directory synced), then the old one gets a
//! [`CHUNK_FLAG_SEGMENT_END`] chunk, synced, before the new one gets its first chunk. Every
//! segment keeps room for that chunk after its data. So a log whose newest chunk is a
//! segment end lost its newest segment (recovery: `Error::Corruption`), and a crash during
//! a roll leaves either a new segment without chunks after an old one without its end
//! (recovery removes the new one) or both, complete.

use std::collections::VecDeque;
use std::sync::Arc;

use lamina_core::Result;

use super::chunk::{
    CHUNK_FLAG_SEGMENT_END, ChunkHeader, FILE_HEADER_BYTES, FileHeader, FileKind,
    SEGMENT_END_CHUNK_BYTES, chunk_len, encode_chunk,
};
use super::record::SeqNo;
use super::synced_mark::{self, SyncedMark};
use crate::backend::{OpenMode, Storage, StorageFile};

/// One segment file.
#[derive(Debug, Clone)]
pub(crate) struct Segment {
    pub index: u64,
    pub name: String,
    pub file: Arc<dyn StorageFile>,
    pub base_pos: u64,
    /// Data bytes used (chunks), after the header.
    pub data_len: u64,
    /// Most bytes of chunks this segment may hold: its header's `capacity_bytes` (recovery
    /// reads no further), which a reopen with a larger buffer does not change. Data chunks
    /// leave the last [`SEGMENT_END_CHUNK_BYTES`] of it to the segment's end chunk.
    pub capacity_bytes: u64,
    /// Highest sequence number of a record in this segment (or its floor if empty).
    pub seq_hi: SeqNo,
    /// Synced marks written to this segment by this process; the next goes to slot
    /// `synced_marks % 2` (`synced_mark.rs`).
    pub synced_marks: u64,
}

/// The segments of a truncate-mode log, oldest first; the last one is written.
#[derive(Debug)]
pub(crate) struct Segments {
    storage: Arc<dyn Storage>,
    prefix: String,
    log_id: u64,
    /// `capacity_bytes` of the segments this writer creates (the end chunk's room included).
    capacity_bytes: u64,
    files: VecDeque<Segment>,
    head: u64,
    scratch: Vec<u8>,
}

/// The `capacity_bytes` of the segments a log with `segment_bytes` of data per segment and
/// chunks of at most `chunk_bytes_max` creates: the data, and room for the end chunk.
pub(crate) fn segment_capacity_bytes(segment_bytes: u64, chunk_bytes_max: u64) -> u64 {
    segment_bytes.max(chunk_bytes_max) + SEGMENT_END_CHUNK_BYTES
}

/// The name of segment `index`.
pub(crate) fn segment_name(prefix: &str, index: u64) -> String {
    format!("{prefix}-{index:016x}.seg")
}

/// The index of a segment file name, if it is one of `prefix`.
pub(crate) fn parse_segment_name(prefix: &str, name: &str) -> Option<u64> {
    let hex = name.strip_prefix(prefix)?.strip_prefix('-')?.strip_suffix(".seg")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// Creates a log file atomically: header written and synced under a temporary name, then
/// renamed into place and the directory synced, so a log-named file always has a header.
/// The handle returned is opened under the final name, so that its errors (a full disk)
/// name the file that exists.
pub(crate) fn create_log_file(
    storage: &dyn Storage,
    name: &str,
    header: &FileHeader,
    total_len: u64,
) -> Result<Arc<dyn StorageFile>> {
    let tmp = format!("{name}.tmp");
    if storage.exists(&tmp)? {
        storage.remove(&tmp)?;
    }
    let file = storage.open(&tmp, OpenMode::CreateNew)?;
    file.write_all_at(0, &header.to_block())?;
    if total_len > FILE_HEADER_BYTES {
        file.set_len(total_len)?;
    }
    file.sync_data()?;
    drop(file);
    storage.rename(&tmp, name)?;
    storage.sync_dir()?;
    storage.open(name, OpenMode::Existing)
}

impl Segments {
    /// Segments recovered (or one fresh segment), with the write position `head`; new
    /// segments get `capacity_bytes` (see [`segment_capacity_bytes`]).
    pub(crate) fn new(
        storage: Arc<dyn Storage>,
        prefix: String,
        log_id: u64,
        capacity_bytes: u64,
        files: VecDeque<Segment>,
        head: u64,
    ) -> Segments {
        assert!(!files.is_empty(), "a segmented log has at least one segment");
        assert!(capacity_bytes > SEGMENT_END_CHUNK_BYTES, "a segment holds a data chunk");
        Segments { storage, prefix, log_id, capacity_bytes, files, head, scratch: Vec::new() }
    }

    /// Creates segment `index` of `capacity_bytes` starting at log position `base_pos`.
    pub(crate) fn create_segment(
        storage: &dyn Storage,
        prefix: &str,
        log_id: u64,
        capacity_bytes: u64,
        index: u64,
        base_pos: u64,
        seq_floor: SeqNo,
    ) -> Result<Segment> {
        let header = FileHeader {
            kind: FileKind::Segment,
            version: super::chunk::FORMAT_VERSION,
            log_id,
            file_index: index,
            base_pos,
            capacity_bytes,
            seq_floor,
        };
        let name = segment_name(prefix, index);
        let file = create_log_file(storage, &name, &header, FILE_HEADER_BYTES)?;
        Ok(Segment {
            index,
            name,
            file,
            base_pos,
            data_len: 0,
            capacity_bytes,
            seq_hi: seq_floor,
            synced_marks: 0,
        })
    }

    /// Writes `payload` as one chunk with `flags` and syncs it, starting a new segment if it
    /// does not fit. On failure nothing changes in memory (a later flush writes at the same
    /// place).
    pub(crate) fn flush(
        &mut self,
        payload: &[u8],
        records: u32,
        seq_hi: SeqNo,
        flags: u8,
    ) -> Result<u64> {
        let len = chunk_len(payload.len());
        assert!(
            len + SEGMENT_END_CHUNK_BYTES <= self.capacity_bytes,
            "chunk larger than a segment"
        );
        let active = self.files.back().expect("at least one segment");
        if active.data_len + len + SEGMENT_END_CHUNK_BYTES > active.capacity_bytes {
            // A flush rejected for lack of space may have left part or all of its chunk past
            // the segment's last chunk. Recovery requires a segment other than the last to
            // end with its last chunk (the next one starts there), and a rejected chunk that
            // reached the device whole would bring back writes whose callers were told they
            // failed: cut the segment to its chunks before moving on.
            let end = FILE_HEADER_BYTES + active.data_len;
            if active.file.len()? > end {
                active.file.set_len(end)?;
                active.file.sync_data()?;
            }
            // Room for the end chunk: always, but in a segment a build before end chunks
            // filled (its roll goes unmarked, as all its rolls were).
            let end_chunk = active.data_len + SEGMENT_END_CHUNK_BYTES <= active.capacity_bytes;
            let base_pos = self.head + if end_chunk { SEGMENT_END_CHUNK_BYTES } else { 0 };
            let segment = Self::create_segment(
                self.storage.as_ref(),
                &self.prefix,
                self.log_id,
                self.capacity_bytes,
                active.index + 1,
                base_pos,
                active.seq_hi,
            )?;
            if end_chunk {
                // Written only now that the next segment exists: an end chunk always names a
                // segment that was there. If this fails, nothing changed in memory; the next
                // flush cuts what it left and creates the new segment again.
                let old_seq_hi = active.seq_hi;
                let end_len = self.write_chunk(&[], 0, old_seq_hi, CHUNK_FLAG_SEGMENT_END)?;
                debug_assert_eq!(end_len, SEGMENT_END_CHUNK_BYTES);
            }
            assert_eq!(segment.base_pos, self.head, "the new segment starts at the log's head");
            self.files.push_back(segment);
        }
        self.write_chunk(payload, records, seq_hi, flags)
    }

    /// Writes `payload` as one chunk at the end of the newest segment and syncs it; advances
    /// the segment and the head only once it is synced.
    fn write_chunk(
        &mut self,
        payload: &[u8],
        records: u32,
        seq_hi: SeqNo,
        flags: u8,
    ) -> Result<u64> {
        let tail = self.files.front().expect("at least one segment").base_pos;
        let active = self.files.back_mut().expect("at least one segment");
        assert_eq!(active.base_pos + active.data_len, self.head, "segment out of step");
        let len = chunk_len(payload.len());
        assert!(active.data_len + len <= active.capacity_bytes, "chunk past its segment");
        let header = ChunkHeader {
            log_id: self.log_id,
            pos: self.head,
            prev_end: self.head,
            tail,
            seq_hi,
            payload_len: payload.len() as u32,
            record_count: records,
            payload_crc: 0,
            ring_segments: 0,
            flags,
        };
        encode_chunk(&header, payload, &mut self.scratch);
        active.file.write_all_at(FILE_HEADER_BYTES + active.data_len, &self.scratch)?;
        active.file.sync_data()?;
        // The synced mark (`synced_mark.rs`), before anyone is told the chunk is durable, so
        // that damage to it reads as damage and not as a crash's torn write. Not synced: the
        // next chunk's sync carries it. A failed write only leaves an older mark, which
        // recovery reads as before; the chunk is synced either way, so the flush stands.
        let mark = SyncedMark { log_id: self.log_id, end_pos: self.head + len };
        if synced_mark::write(active.file.as_ref(), active.synced_marks, mark).is_ok() {
            active.synced_marks += 1;
        }
        active.data_len += len;
        active.seq_hi = active.seq_hi.max(seq_hi);
        self.head += len;
        Ok(len)
    }

    /// Removes every segment but the newest whose records all have sequence numbers at or
    /// below `upto`; returns how many were removed.
    pub(crate) fn truncate(&mut self, upto: SeqNo) -> Result<usize> {
        let mut removed = 0;
        while self.files.len() > 1 && self.files.front().is_some_and(|s| s.seq_hi <= upto) {
            let segment = self.files.front().expect("checked");
            self.storage.remove(&segment.name)?;
            self.files.pop_front();
            removed += 1;
        }
        if removed > 0 {
            self.storage.sync_dir()?;
        }
        Ok(removed)
    }

    /// Number of segment files.
    pub(crate) fn count(&self) -> usize {
        self.files.len()
    }

    /// Data bytes in all segments.
    pub(crate) fn data_bytes(&self) -> u64 {
        self.files.iter().map(|s| s.data_len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_roundtrip() {
        let name = segment_name("wal", 0x2a);
        assert_eq!(name, "wal-000000000000002a.seg");
        assert_eq!(parse_segment_name("wal", &name), Some(0x2a));
        assert_eq!(parse_segment_name("wal", "wal-2a.seg"), None);
        assert_eq!(parse_segment_name("wal", "other-000000000000002a.seg"), None);
        assert_eq!(parse_segment_name("wal", "wal-000000000000002a.seg.tmp"), None);
    }
}
