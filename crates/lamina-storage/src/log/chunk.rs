//! The on-disk framing of the log: a file header in block 0 of every log file, then chunks.
//!
//! A chunk is one flush of the coalesced log (SIGMOD 2011 contest paper, section 3): the
//! records gathered in the write buffer, behind a header, padded to a multiple of 4 KiB and
//! protected by CRC32C (one over the header, one over the payload). Byte layout in
//! `docs/format/log.md`.

use std::path::Path;

use lamina_core::checksum::{mask, masked_crc32c, unmask};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};
use lamina_core::{Error, Result};

/// Alignment and padding unit of chunks and the file header.
pub const BLOCK_BYTES: usize = 4096;
/// Bytes reserved for the file header (block 0).
pub const FILE_HEADER_BYTES: u64 = BLOCK_BYTES as u64;
/// Bytes of a chunk header.
pub const CHUNK_HEADER_BYTES: usize = 64;
/// The file magic: "LAMINLOG".
pub const FILE_MAGIC: [u8; 8] = *b"LAMINLOG";
/// The format version of segment files (truncate retention); the only one they have.
pub const FORMAT_VERSION: u32 = 1;
/// The format version of ring files this build writes: a ring of segments that grows and
/// shrinks (`capacity_bytes` is the size of one ring segment). Version 1 rings (one
/// fixed-size ring, from builds before growable rings) are read as rings of one segment and
/// rewritten as version 2 before they first grow.
pub const RING_FORMAT_VERSION: u32 = 2;
/// Most segments a ring may have (the chunk header records the count in 24 bits).
pub const RING_SEGMENTS_MAX: u32 = (1 << 24) - 1;
/// Chunk flag: the chunk was written by a clean close (it holds no records). A log whose
/// newest chunk carries it cannot have a torn tail, so any damaged chunk is corruption.
pub const CHUNK_FLAG_CLEAN_CLOSE: u8 = 1;
/// Chunk flag (segment files): the segment ends here and the log continues in the next
/// segment file (`file_index + 1`), which existed before this chunk was written. It holds no
/// records. A log whose newest chunk carries it lost its newest segment:
/// `Error::Corruption` naming that segment (a deleted newest segment read as a crash before
/// it and lost its writes silently).
pub const CHUNK_FLAG_SEGMENT_END: u8 = 2;
/// Every chunk flag this build knows.
pub const CHUNK_FLAGS_KNOWN: u8 = CHUNK_FLAG_CLEAN_CLOSE | CHUNK_FLAG_SEGMENT_END;
/// Bytes of a [`CHUNK_FLAG_SEGMENT_END`] chunk (a header and no payload, padded to a block):
/// every segment keeps room for one after its data chunks.
pub const SEGMENT_END_CHUNK_BYTES: u64 = BLOCK_BYTES as u64;
/// The chunk magic: "LCHK" little-endian.
pub const CHUNK_MAGIC: u32 = u32::from_le_bytes(*b"LCHK");

/// What a log file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// One segment of a truncate-mode log.
    Segment = 1,
    /// The single ring file of a cyclic log.
    Ring = 2,
}

/// Block 0 of every log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Segment or ring.
    pub kind: FileKind,
    /// [`FORMAT_VERSION`] for segments; [`RING_FORMAT_VERSION`] (or 1, an older fixed ring)
    /// for rings.
    pub version: u32,
    /// Identifies the log; every chunk carries it, so chunks of another log never match.
    pub log_id: u64,
    /// Segment number (0 for the ring).
    pub file_index: u64,
    /// Log position of the first data byte (at file offset [`FILE_HEADER_BYTES`]).
    pub base_pos: u64,
    /// A segment file's maximum data bytes after the header; a ring's segment size (the
    /// ring is `(file length - 4096) / capacity_bytes` segments; a version 1 ring is one).
    pub capacity_bytes: u64,
    /// Every sequence number in this file, and every one assigned later, is above this.
    pub seq_floor: u64,
}

/// Largest `capacity_bytes` of a log file (1 PiB): a ring's size or a segment's maximum.
/// Positions and offsets computed from it then never overflow.
pub const FILE_CAPACITY_BYTES_MAX: u64 = 1 << 50;
/// Largest log position a file may start at (2^62 bytes of log: centuries at 1 GB/s), so
/// `base_pos + capacity` and every later position fit in a `u64`.
pub const BASE_POS_MAX: u64 = 1 << 62;

const FILE_HEADER_ENCODED: usize = 8 + 4 + 1 + 3 + 8 * 5 + 4;

impl Encode for FileHeader {
    fn encoded_len(&self) -> usize {
        FILE_HEADER_ENCODED
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&FILE_MAGIC);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.push(self.kind as u8);
        out.extend_from_slice(&[0; 3]);
        for field in
            [self.log_id, self.file_index, self.base_pos, self.capacity_bytes, self.seq_floor]
        {
            out.extend_from_slice(&field.to_le_bytes());
        }
        let crc = masked_crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

impl Decode for FileHeader {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(input);
        if reader.array::<8>()? != FILE_MAGIC {
            return Err(DecodeError::new(0, "not a lamina log file (bad magic)"));
        }
        let version = reader.u32()?;
        let kind = match reader.u8()? {
            1 => FileKind::Segment,
            2 => FileKind::Ring,
            other => return Err(DecodeError::new(12, format!("unknown file kind {other}"))),
        };
        if !FileHeader::version_known(kind, version) {
            return Err(DecodeError::new(8, format!("format version {version}")));
        }
        reader.array::<3>()?;
        let header = FileHeader {
            kind,
            version,
            log_id: reader.u64()?,
            file_index: reader.u64()?,
            base_pos: reader.u64()?,
            capacity_bytes: reader.u64()?,
            seq_floor: reader.u64()?,
        };
        let crc_at = reader.position();
        let stored = reader.u32()?;
        if stored != masked_crc32c(&input[..crc_at]) {
            return Err(DecodeError::new(crc_at, "file header checksum mismatch"));
        }
        if !header.capacity_bytes.is_multiple_of(BLOCK_BYTES as u64) || header.capacity_bytes == 0 {
            return Err(DecodeError::new(40, "capacity is not a positive multiple of 4 KiB"));
        }
        if header.capacity_bytes > FILE_CAPACITY_BYTES_MAX {
            return Err(DecodeError::new(40, "capacity over the 1 PiB limit"));
        }
        if header.base_pos > BASE_POS_MAX {
            return Err(DecodeError::new(32, "base position over the 2^62 limit"));
        }
        // Recovery continues numbering after the floor; u64::MAX would overflow it.
        if header.seq_floor == u64::MAX {
            return Err(DecodeError::new(48, "sequence floor at the largest sequence number"));
        }
        Ok(header)
    }
}

impl FileHeader {
    /// The version this build writes for files of `kind`.
    pub fn current_version(kind: FileKind) -> u32 {
        match kind {
            FileKind::Segment => FORMAT_VERSION,
            FileKind::Ring => RING_FORMAT_VERSION,
        }
    }

    /// Whether this build reads files of `kind` in `version`.
    pub fn version_known(kind: FileKind, version: u32) -> bool {
        match kind {
            FileKind::Segment => version == FORMAT_VERSION,
            FileKind::Ring => version == 1 || version == RING_FORMAT_VERSION,
        }
    }

    /// The header as a full block.
    pub fn to_block(&self) -> Vec<u8> {
        let mut block = self.encode();
        block.resize(BLOCK_BYTES, 0);
        block
    }

    /// Parses block 0 of `path`: not a lamina log or a future version is
    /// [`Error::Incompatible`]; a damaged header is [`Error::Corruption`].
    pub fn parse(block: &[u8], path: &Path) -> Result<FileHeader> {
        // Log files are written whole under a temporary name and renamed into place, so a
        // file at a log name whose header is cut short, lacks the magic or fails its checksum
        // is damaged. Only a header whose checksum holds and whose version this build does
        // not read is a newer build's file (newer formats keep the magic, the version and
        // the checksum where version 1 puts them).
        if block.len() < FILE_HEADER_ENCODED {
            return Err(Error::corruption(path, 0, "shorter than a log file header"));
        }
        if block[..8] != FILE_MAGIC {
            return Err(Error::corruption(path, 0, "not a lamina log file (bad magic)"));
        }
        let crc_at = FILE_HEADER_ENCODED - 4;
        let stored = u32::from_le_bytes(block[crc_at..FILE_HEADER_ENCODED].try_into().unwrap());
        if stored != masked_crc32c(&block[..crc_at]) {
            return Err(Error::corruption(path, crc_at as u64, "file header checksum mismatch"));
        }
        let version = u32::from_le_bytes(block[8..12].try_into().unwrap());
        let kind = match block[12] {
            1 => Some(FileKind::Segment),
            2 => Some(FileKind::Ring),
            _ => None,
        };
        let newer = version > RING_FORMAT_VERSION
            || kind.is_some_and(|kind| !FileHeader::version_known(kind, version));
        if newer {
            return Err(Error::Incompatible {
                reason: format!(
                    "{} has log format version {version}; this build reads segments of \
                     version {FORMAT_VERSION} and rings of versions 1 and {RING_FORMAT_VERSION}",
                    path.display()
                ),
            });
        }
        FileHeader::decode(&block[..FILE_HEADER_ENCODED]).map_err(|e| e.at(path, 0))
    }
}

/// The header at the start of every chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// The log this chunk belongs to.
    pub log_id: u64,
    /// Log position of the chunk (monotonic; the ring maps it to an offset modulo its size).
    pub pos: u64,
    /// End position of the chunk written before this one (0 for the first).
    pub prev_end: u64,
    /// Oldest log position recovery must read (everything before it was garbage collected
    /// or truncated when this chunk was written).
    pub tail: u64,
    /// Highest sequence number assigned when this chunk was written.
    pub seq_hi: u64,
    /// Bytes of records after the header.
    pub payload_len: u32,
    /// Records in the payload.
    pub record_count: u32,
    /// Masked CRC32C of the payload.
    pub payload_crc: u32,
    /// Ring chunks: segments the ring file had when the chunk was written (at most
    /// [`RING_SEGMENTS_MAX`]; a file with fewer was cut short). 0 in segment files and in
    /// version 1 rings (one segment).
    pub ring_segments: u32,
    /// [`CHUNK_FLAG_CLEAN_CLOSE`], [`CHUNK_FLAG_SEGMENT_END`] or 0.
    pub flags: u8,
}

impl Encode for ChunkHeader {
    fn encoded_len(&self) -> usize {
        CHUNK_HEADER_BYTES
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&CHUNK_MAGIC.to_le_bytes());
        out.extend_from_slice(&[0; 4]); // header crc, filled below
        for field in [self.log_id, self.pos, self.prev_end, self.tail, self.seq_hi] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        assert!(self.ring_segments <= RING_SEGMENTS_MAX, "ring segments fit 24 bits");
        let ring_word = self.ring_segments | (u32::from(self.flags) << 24);
        for field in [self.payload_len, self.record_count, self.payload_crc, ring_word] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        let crc = masked_crc32c(&out[start + 8..start + CHUNK_HEADER_BYTES]);
        out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }
}

impl Decode for ChunkHeader {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        if input.len() < CHUNK_HEADER_BYTES {
            return Err(DecodeError::new(0, "short chunk header"));
        }
        let mut reader = Reader::new(&input[..CHUNK_HEADER_BYTES]);
        if reader.u32()? != CHUNK_MAGIC {
            return Err(DecodeError::new(0, "no chunk magic"));
        }
        let stored = reader.u32()?;
        if unmask(stored) != unmask(masked_crc32c(&input[8..CHUNK_HEADER_BYTES])) {
            return Err(DecodeError::new(4, "chunk header checksum mismatch"));
        }
        let header = ChunkHeader {
            log_id: reader.u64()?,
            pos: reader.u64()?,
            prev_end: reader.u64()?,
            tail: reader.u64()?,
            seq_hi: reader.u64()?,
            payload_len: reader.u32()?,
            record_count: reader.u32()?,
            payload_crc: reader.u32()?,
            ring_segments: 0,
            flags: 0,
        };
        let ring_word = reader.u32()?;
        let header = ChunkHeader {
            ring_segments: ring_word & RING_SEGMENTS_MAX,
            flags: (ring_word >> 24) as u8,
            ..header
        };
        if header.flags & !CHUNK_FLAGS_KNOWN != 0 {
            return Err(DecodeError::new(63, format!("unknown chunk flags {:#x}", header.flags)));
        }
        if !header.pos.is_multiple_of(BLOCK_BYTES as u64) {
            return Err(DecodeError::new(16, "chunk position not 4 KiB aligned"));
        }
        // Recovery computes `end()`; a position whose end overflows is no real log position.
        if header.pos.checked_add(header.chunk_len()).is_none() {
            return Err(DecodeError::new(16, "chunk ends past the largest log position"));
        }
        // Recovery continues numbering after `seq_hi`; u64::MAX would overflow it.
        if header.seq_hi == u64::MAX {
            return Err(DecodeError::new(40, "chunk sequence number at the largest value"));
        }
        Ok(header)
    }
}

impl ChunkHeader {
    /// Bytes the chunk occupies on disk (header, payload, zero padding to 4 KiB).
    pub fn chunk_len(&self) -> u64 {
        chunk_len(self.payload_len as usize)
    }

    /// End position of the chunk.
    pub fn end(&self) -> u64 {
        self.pos + self.chunk_len()
    }

    /// Whether `payload` is the one this header was written with.
    pub fn payload_matches(&self, payload: &[u8]) -> bool {
        payload.len() == self.payload_len as usize && self.payload_crc == masked_crc32c(payload)
    }
}

/// Disk bytes of a chunk with `payload_len` bytes of records.
pub fn chunk_len(payload_len: usize) -> u64 {
    (CHUNK_HEADER_BYTES + payload_len).next_multiple_of(BLOCK_BYTES) as u64
}

/// Encodes a whole chunk (header, payload, padding) ready to write.
pub fn encode_chunk(header: &ChunkHeader, payload: &[u8], out: &mut Vec<u8>) {
    assert_eq!(header.payload_len as usize, payload.len(), "header disagrees with payload");
    out.clear();
    let header = ChunkHeader { payload_crc: masked_crc32c(payload), ..*header };
    header.encode_to(out);
    out.extend_from_slice(payload);
    out.resize(header.chunk_len() as usize, 0);
    debug_assert_eq!(mask(unmask(header.payload_crc)), header.payload_crc);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> ChunkHeader {
        ChunkHeader {
            log_id: 0xfeed,
            pos: 8192,
            prev_end: 4096,
            tail: 0,
            seq_hi: 77,
            payload_len: 5,
            record_count: 1,
            payload_crc: 0,
            ring_segments: 3,
            flags: 0,
        }
    }

    #[test]
    fn chunk_roundtrips_and_is_padded() {
        let mut out = Vec::new();
        encode_chunk(&header(), b"hello", &mut out);
        assert_eq!(out.len(), BLOCK_BYTES);
        let decoded = ChunkHeader::decode(&out).unwrap();
        assert_eq!(decoded.pos, 8192);
        assert_eq!(decoded.seq_hi, 77);
        assert!(decoded.payload_matches(&out[CHUNK_HEADER_BYTES..CHUNK_HEADER_BYTES + 5]));
        assert!(!decoded.payload_matches(b"hellp"));
        assert_eq!(chunk_len(BLOCK_BYTES - CHUNK_HEADER_BYTES + 1), 2 * BLOCK_BYTES as u64);
    }

    #[test]
    fn ring_segments_and_flags_roundtrip_and_unknown_flags_are_refused() {
        assert_eq!(chunk_len(0), SEGMENT_END_CHUNK_BYTES, "an end chunk is one block");
        for (segments, flags) in [
            (0, 0),
            (1, CHUNK_FLAG_CLEAN_CLOSE),
            (0, CHUNK_FLAG_SEGMENT_END),
            (RING_SEGMENTS_MAX, 0),
        ] {
            let mut out = Vec::new();
            let written = ChunkHeader { ring_segments: segments, flags, ..header() };
            encode_chunk(&written, b"hello", &mut out);
            let read = ChunkHeader::decode(&out).unwrap();
            assert_eq!((read.ring_segments, read.flags), (segments, flags));
        }
        let mut out = Vec::new();
        encode_chunk(&ChunkHeader { flags: 0x80, ..header() }, b"hello", &mut out);
        let err = ChunkHeader::decode(&out).unwrap_err();
        assert!(err.reason.contains("flags"), "{err}");
    }

    #[test]
    fn largest_sequence_numbers_are_refused() {
        // A checksummed header with seq_hi = u64::MAX would overflow the next sequence number.
        let mut out = Vec::new();
        encode_chunk(&ChunkHeader { seq_hi: u64::MAX, ..header() }, b"hello", &mut out);
        let err = ChunkHeader::decode(&out).unwrap_err();
        assert!(err.reason.contains("largest"), "{err}");
        let mut out = Vec::new();
        encode_chunk(&ChunkHeader { seq_hi: u64::MAX - 1, ..header() }, b"hello", &mut out);
        assert!(ChunkHeader::decode(&out).is_ok());
    }

    #[test]
    fn any_flipped_header_bit_is_detected() {
        let mut out = Vec::new();
        encode_chunk(&header(), b"hello", &mut out);
        for bit in 0..CHUNK_HEADER_BYTES * 8 {
            let mut bad = out.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(ChunkHeader::decode(&bad).is_err(), "bit {bit}");
        }
        assert!(ChunkHeader::decode(&[0u8; BLOCK_BYTES]).is_err());
        assert!(ChunkHeader::decode(&out[..10]).is_err());
    }

    #[test]
    fn file_header_roundtrips() {
        let header = FileHeader {
            kind: FileKind::Ring,
            version: RING_FORMAT_VERSION,
            log_id: 42,
            file_index: 0,
            base_pos: 0,
            capacity_bytes: 1 << 20,
            seq_floor: 9,
        };
        let block = header.to_block();
        assert_eq!(block.len(), BLOCK_BYTES);
        assert_eq!(FileHeader::parse(&block, Path::new("x")).unwrap(), header);
        // A version 1 ring (one fixed-size ring) is still read.
        let old = FileHeader { version: 1, ..header };
        assert_eq!(FileHeader::parse(&old.to_block(), Path::new("x")).unwrap(), old);
    }

    #[test]
    fn bad_file_headers_are_classified() {
        let header = FileHeader {
            kind: FileKind::Segment,
            version: FORMAT_VERSION,
            log_id: 1,
            file_index: 3,
            base_pos: 4096,
            capacity_bytes: 1 << 20,
            seq_floor: 0,
        };
        let block = header.to_block();
        let path = Path::new("seg");
        // A file at a log name that is not a log, or whose header is damaged (even in its
        // version field): corruption.
        let mut garbage = block.clone();
        garbage[..8].copy_from_slice(b"SQLite f");
        assert!(matches!(FileHeader::parse(&garbage, path), Err(Error::Corruption { .. })));
        let mut flipped_version = block.clone();
        flipped_version[8..12].copy_from_slice(&2u32.to_le_bytes());
        let err = FileHeader::parse(&flipped_version, path).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
        let mut flipped = block.clone();
        flipped[30] ^= 1;
        assert!(matches!(FileHeader::parse(&flipped, path), Err(Error::Corruption { .. })));
        assert!(matches!(FileHeader::parse(&[], path), Err(Error::Corruption { .. })));
        // A newer build's header (its checksum holds): incompatible.
        let future = FileHeader { version: 2, ..header }.to_block();
        let err = FileHeader::parse(&future, path).unwrap_err();
        assert!(matches!(err, Error::Incompatible { .. }) && err.to_string().contains("version 2"));
        let ring = FileHeader { kind: FileKind::Ring, version: 3, ..header };
        let err = FileHeader::parse(&ring.to_block(), path).unwrap_err();
        assert!(matches!(err, Error::Incompatible { .. }) && err.to_string().contains("version 3"));
    }
}
