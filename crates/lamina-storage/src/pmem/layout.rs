//! Byte layout of an allocator-managed region: header, allocation micro-log, root area,
//! bitmaps, heap (documented in `docs/format/pmem.md`).

use lamina_core::checksum::{masked_crc32c, unmask};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};

use super::region::CACHE_LINE_BYTES;

/// The region header's offset and size (one cache line).
pub const HEADER_OFFSET: u64 = 0;
/// Bytes of the header.
pub const HEADER_BYTES: u64 = 64;
/// The allocation micro-log's offset (one cache line).
pub const LOG_OFFSET: u64 = 64;
/// Bytes of the micro-log.
pub const LOG_BYTES: u64 = 64;
/// The root area: owned by the data structure (e.g. its head pointers), never allocated.
pub const ROOT_OFFSET: u64 = 128;
/// Bytes of the root area.
pub const ROOT_BYTES: u64 = 896;
/// Where the allocation bitmap starts.
pub const BITMAPS_OFFSET: u64 = 1024;
/// Magic bytes at offset 0.
pub const MAGIC: [u8; 8] = *b"LAMPMEM\0";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Smallest allocation unit.
pub const CHUNK_BYTES_MIN: u64 = CACHE_LINE_BYTES;
/// Largest allocation unit.
pub const CHUNK_BYTES_MAX: u64 = 1 << 20;

/// Where everything is in a region of a given size and chunk size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionLayout {
    /// Region size.
    pub region_bytes: u64,
    /// Allocation unit (a power of two, 64 B to 1 MiB).
    pub chunk_bytes: u64,
    /// Chunks in the heap.
    pub chunk_count: u64,
    /// Allocation bitmap: bit `i` set when chunk `i` is allocated.
    pub alloc_bitmap_offset: u64,
    /// Start bitmap: bit `i` set when an allocated block begins at chunk `i`.
    pub start_bitmap_offset: u64,
    /// Bytes of each bitmap (whole cache lines).
    pub bitmap_bytes: u64,
    /// First heap byte (aligned to the chunk size, at most to 4 KiB).
    pub heap_offset: u64,
}

impl RegionLayout {
    /// The layout of a region of `region_bytes` with `chunk_bytes` units; `None` when the
    /// chunk size is not a power of two in range or the region has no room for one chunk.
    pub fn compute(region_bytes: u64, chunk_bytes: u64) -> Option<Self> {
        if !chunk_bytes.is_power_of_two()
            || !(CHUNK_BYTES_MIN..=CHUNK_BYTES_MAX).contains(&chunk_bytes)
            || !region_bytes.is_multiple_of(CACHE_LINE_BYTES)
        {
            return None;
        }
        let chunks_upper = region_bytes.checked_sub(BITMAPS_OFFSET)? / chunk_bytes;
        let bitmap_bytes = (chunks_upper.div_ceil(64) * 8).next_multiple_of(CACHE_LINE_BYTES);
        let alloc_bitmap_offset = BITMAPS_OFFSET;
        let start_bitmap_offset = alloc_bitmap_offset + bitmap_bytes;
        let heap_offset =
            (start_bitmap_offset + bitmap_bytes).next_multiple_of(chunk_bytes.min(4096));
        let chunk_count = region_bytes.checked_sub(heap_offset)? / chunk_bytes;
        if chunk_count == 0 {
            return None;
        }
        assert!(chunk_count <= chunks_upper, "bitmaps cover every chunk");
        Some(RegionLayout {
            region_bytes,
            chunk_bytes,
            chunk_count,
            alloc_bitmap_offset,
            start_bitmap_offset,
            bitmap_bytes,
            heap_offset,
        })
    }

    /// Offset of chunk `chunk`.
    pub fn chunk_offset(&self, chunk: u64) -> u64 {
        debug_assert!(chunk < self.chunk_count);
        self.heap_offset + chunk * self.chunk_bytes
    }

    /// The chunk starting at `offset`, if `offset` is a chunk boundary in the heap.
    pub fn chunk_at(&self, offset: u64) -> Option<u64> {
        let rel = offset.checked_sub(self.heap_offset)?;
        let chunk = rel / self.chunk_bytes;
        (rel % self.chunk_bytes == 0 && chunk < self.chunk_count).then_some(chunk)
    }

    /// The chunk containing `offset`, if it is in the heap.
    pub fn chunk_containing(&self, offset: u64) -> Option<u64> {
        let chunk = offset.checked_sub(self.heap_offset)? / self.chunk_bytes;
        (chunk < self.chunk_count).then_some(chunk)
    }
}

/// The region header (64 bytes at offset 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionHeader {
    /// The region's persistent file id (what [`crate::pmem::PPtr::file_id`] names).
    pub file_id: u64,
    /// Where everything is.
    pub layout: RegionLayout,
}

impl Encode for RegionHeader {
    fn encoded_len(&self) -> usize {
        HEADER_BYTES as usize
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let l = &self.layout;
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(l.chunk_bytes as u32).to_le_bytes());
        for field in [self.file_id, l.region_bytes, l.chunk_count, l.alloc_bitmap_offset] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        out.extend_from_slice(&l.heap_offset.to_le_bytes());
        let crc = masked_crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }
}

impl Decode for RegionHeader {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        if r.array::<8>()? != MAGIC {
            return Err(DecodeError::new(0, "not a lamina persistent region (bad magic)"));
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(DecodeError::new(8, format!("unsupported format version {version}")));
        }
        let chunk_bytes = u64::from(r.u32()?);
        let file_id = r.u64()?;
        let region_bytes = r.u64()?;
        let chunk_count = r.u64()?;
        let alloc_bitmap_offset = r.u64()?;
        let heap_offset = r.u64()?;
        let crc_at = r.position();
        let stored = r.u32()?;
        if r.u32()? != 0 {
            return Err(DecodeError::new(crc_at + 4, "reserved bytes are not zero"));
        }
        r.finish()?;
        let actual = masked_crc32c(&input[..crc_at]);
        if stored != actual {
            return Err(DecodeError::new(
                crc_at,
                format!(
                    "header checksum mismatch: stored {:#x}, computed {:#x}",
                    unmask(stored),
                    unmask(actual)
                ),
            ));
        }
        let layout = RegionLayout::compute(region_bytes, chunk_bytes)
            .ok_or_else(|| DecodeError::new(12, "impossible chunk size or region size"))?;
        if (layout.chunk_count, layout.alloc_bitmap_offset, layout.heap_offset)
            != (chunk_count, alloc_bitmap_offset, heap_offset)
        {
            return Err(DecodeError::new(32, "layout fields disagree with the region size"));
        }
        Ok(RegionHeader { file_id, layout })
    }
}

/// What a logged allocator operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u64)]
pub enum LogOp {
    /// Mark the block allocated, then store its address in the caller's pointer.
    Alloc = 1,
    /// Null the caller's pointer, then mark the block free.
    Free = 2,
}

/// The allocation micro-log record (64 bytes at offset 64): the intent of the operation in
/// progress, redone on recovery. Its first word (the op) is written last and cleared when the
/// operation completes, so it is the record's p-atomic validity flag (FPTree section 2,
/// "Partial writes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocLogRecord {
    /// The operation.
    pub op: LogOp,
    /// Offset of the caller's persistent pointer.
    pub pptr_offset: u64,
    /// Offset of the block.
    pub block_offset: u64,
    /// Block length in chunks.
    pub chunks: u64,
}

/// Byte offset of the checksum within the log record.
pub const LOG_CRC_AT: usize = 56;

impl AllocLogRecord {
    /// Decodes the log slot: `None` when its op word is 0 (no operation in progress).
    pub fn decode_slot(input: &[u8]) -> Result<Option<Self>, DecodeError> {
        let op = Reader::new(input).u64()?;
        if op == 0 {
            return Ok(None);
        }
        Self::decode(input).map(Some)
    }
}

impl Encode for AllocLogRecord {
    fn encoded_len(&self) -> usize {
        LOG_BYTES as usize
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        for field in [self.op as u64, self.pptr_offset, self.block_offset, self.chunks] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        out.resize(start + LOG_CRC_AT, 0);
        let crc = masked_crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }
}

impl Decode for AllocLogRecord {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let op = match r.u64()? {
            1 => LogOp::Alloc,
            2 => LogOp::Free,
            other => return Err(DecodeError::new(0, format!("unknown log op {other}"))),
        };
        let pptr_offset = r.u64()?;
        let block_offset = r.u64()?;
        let chunks = r.u64()?;
        if r.bytes(LOG_CRC_AT - 32)?.iter().any(|&b| b != 0) {
            return Err(DecodeError::new(32, "reserved bytes are not zero"));
        }
        let stored = r.u32()?;
        if r.u32()? != 0 {
            return Err(DecodeError::new(LOG_CRC_AT + 4, "reserved bytes are not zero"));
        }
        r.finish()?;
        if stored != masked_crc32c(&input[..LOG_CRC_AT]) {
            return Err(DecodeError::new(LOG_CRC_AT, "log record checksum mismatch"));
        }
        if chunks == 0 {
            return Err(DecodeError::new(24, "log record of zero chunks"));
        }
        Ok(AllocLogRecord { op, pptr_offset, block_offset, chunks })
    }
}
