//! The persistent allocator (FPTree section 2, "Memory leaks"): `allocate` writes the address
//! of the new block into a persistent pointer owned by the caller's data structure, and
//! `deallocate` resets that pointer to null, each persistently, so a crash never leaves a
//! block the allocator considers used that no pointer of the data structure names.
//!
//! Metadata: two bitmaps over fixed-size chunks (allocated, and block start), and a one-line
//! redo micro-log holding the operation in progress. Each operation:
//!
//! 1. writes the log record's body and persists it, then sets its op word (p-atomic) and
//!    persists it: from here the operation will complete, now or at recovery;
//! 2. allocate: sets the block's bits, then writes the caller's pointer (each persisted);
//!    deallocate: nulls the caller's pointer, then clears the block's bits (each persisted);
//! 3. clears the op word and persists it.
//!
//! [`PmemAllocator::open`] redoes a logged operation (steps 2 and 3 are idempotent), so each
//! operation is all-or-nothing across a crash: after recovery at any persist point, a block
//! is referenced by the caller's pointer exactly when its bits are set. No block is both free
//! and referenced, and the allocator leaks nothing. The order inside step 2 (bits before the
//! pointer on allocate, pointer before the bits on free) additionally keeps every durable
//! intermediate state free of a referenced-but-free block even before recovery runs. What
//! the paper leaves to the data structure stays there: after recovery it must inspect the
//! pointers it passed to the allocator (a non-null one means it received the block) and
//! deallocate blocks it no longer wants.
//!
//! To keep that guarantee the allocator refuses a destination pointer that is not null
//! (overwriting it would leak the block it names), and accepts pointer locations only in the
//! root area or inside an allocated block.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use lamina_core::codec::{Decode, Encode};
use lamina_core::{Error, Result};
use parking_lot::Mutex;

use super::layout::{
    AllocLogRecord, HEADER_BYTES, HEADER_OFFSET, LOG_BYTES, LOG_OFFSET, LogOp, MAGIC, ROOT_BYTES,
    ROOT_OFFSET, RegionHeader, RegionLayout,
};
use super::pptr::PPtr;
use super::region::{PmemRegion, WORD_BYTES};

/// Counters and sizes of an allocator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Allocation unit.
    pub chunk_bytes: u64,
    /// Chunks in the heap.
    pub chunk_count: u64,
    /// Chunks allocated now.
    pub used_chunks: u64,
    /// Successful `allocate` calls since open.
    pub allocations: u64,
    /// Successful `deallocate` calls since open.
    pub deallocations: u64,
    /// Whether `open` redid an operation interrupted by a crash.
    pub recovered_op: Option<LogOp>,
}

/// Bytes `format` checks (and zeroes if needed) at a time.
const FORMAT_PIECE_BYTES: u64 = 1 << 20;

/// A crash-consistent allocator over a [`PmemRegion`] (see the module doc).
pub struct PmemAllocator<R: PmemRegion + ?Sized> {
    region: Arc<R>,
    header: RegionHeader,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Next-fit hint: the chunk after the last allocation.
    next_fit: u64,
    stats: AllocatorStats,
}

impl<R: PmemRegion + ?Sized> PmemAllocator<R> {
    /// Formats `region` as an empty heap of `chunk_bytes` units belonging to `file_id` (not 0)
    /// and opens it. The header is written last, so a crash while formatting leaves a region
    /// that [`PmemAllocator::open`] refuses (and that can be formatted again).
    pub fn format(region: Arc<R>, file_id: u64, chunk_bytes: u64) -> Result<Self> {
        if file_id == 0 {
            return Err(Error::option("file_id", "0 is reserved"));
        }
        let layout = RegionLayout::compute(region.len_bytes(), chunk_bytes).ok_or_else(|| {
            Error::option(
                "chunk_bytes",
                format!(
                    "{chunk_bytes} is not a power of two from 64 to 1 MiB, or a region of {} \
                     bytes has no room for one chunk",
                    region.len_bytes()
                ),
            )
        })?;
        let header = RegionHeader { file_id, layout };
        region.write(HEADER_OFFSET, &[0u8; HEADER_BYTES as usize])?;
        region.persist(HEADER_OFFSET, HEADER_BYTES)?;
        region.fence();
        let meta_bytes = layout.heap_offset - LOG_OFFSET;
        // Zero the log and the bitmaps, writing only pieces that are not zero already: a new
        // sparse file stays sparse (the bitmaps are 1/256 of the region), while a region being
        // reformatted is wiped. The persist covers the whole range either way (dirty zeros of
        // an earlier attempt reach the media; clean zero pages are zero there).
        let mut piece = vec![0u8; FORMAT_PIECE_BYTES.min(meta_bytes) as usize];
        let mut at = LOG_OFFSET;
        while at < LOG_OFFSET + meta_bytes {
            let len = (LOG_OFFSET + meta_bytes - at).min(piece.len() as u64) as usize;
            region.read(at, &mut piece[..len])?;
            if piece[..len].iter().any(|&b| b != 0) {
                piece[..len].fill(0);
                region.write(at, &piece[..len])?;
            }
            at += len as u64;
        }
        region.persist(LOG_OFFSET, meta_bytes)?;
        region.fence();
        // The magic last, in its own 8-byte (p-atomic) store: a crash tearing the header's
        // write leaves the magic zero, which marks a region as never formatted (formatting
        // starts over), never a half-written header with the magic (unopenable).
        let encoded = header.encode();
        let magic_bytes = MAGIC.len();
        region.write_persist(HEADER_OFFSET + magic_bytes as u64, &encoded[magic_bytes..])?;
        region.fence();
        region.write_persist(HEADER_OFFSET, &encoded[..magic_bytes])?;
        Self::open(region)
    }

    /// Opens a formatted region, redoing an operation a crash interrupted.
    pub fn open(region: Arc<R>) -> Result<Self> {
        let path = region.path();
        let mut bytes = [0u8; HEADER_BYTES as usize];
        region.read(HEADER_OFFSET, &mut bytes)?;
        if bytes[..8] != MAGIC {
            return Err(Error::Incompatible {
                reason: format!("{} is not a formatted persistent region", path.display()),
            });
        }
        let header = RegionHeader::decode(&bytes).map_err(|e| e.at(&path, HEADER_OFFSET))?;
        if header.layout.region_bytes != region.len_bytes() {
            return Err(Error::corruption(
                &path,
                HEADER_OFFSET,
                format!(
                    "header says {} bytes, the region has {}",
                    header.layout.region_bytes,
                    region.len_bytes()
                ),
            ));
        }
        let allocator = PmemAllocator { region, header, state: Mutex::new(State::default()) };
        let recovered_op = allocator.recover()?;
        allocator.check()?;
        let used_chunks = allocator.count_used();
        {
            let mut state = allocator.state.lock();
            state.stats = AllocatorStats {
                chunk_bytes: header.layout.chunk_bytes,
                chunk_count: header.layout.chunk_count,
                used_chunks,
                recovered_op,
                ..AllocatorStats::default()
            };
        }
        Ok(allocator)
    }

    /// The region.
    pub fn region(&self) -> &Arc<R> {
        &self.region
    }

    /// The decoded header.
    pub fn header(&self) -> &RegionHeader {
        &self.header
    }

    /// The region's file id.
    pub fn file_id(&self) -> u64 {
        self.header.file_id
    }

    /// Start of the root area, where the data structure keeps its entry pointers.
    pub fn root_offset(&self) -> u64 {
        ROOT_OFFSET
    }

    /// Size of the root area.
    pub fn root_bytes(&self) -> u64 {
        ROOT_BYTES
    }

    /// Counters now.
    pub fn stats(&self) -> AllocatorStats {
        self.state.lock().stats
    }

    /// Allocates a block of at least `size_bytes` (rounded up to whole chunks, aligned to the
    /// chunk size) and persistently stores its address in the null persistent pointer at
    /// `dest_pptr_offset`. Returns the pointer stored. The block's content is unspecified.
    pub fn allocate(&self, dest_pptr_offset: u64, size_bytes: u64) -> Result<PPtr> {
        let layout = self.header.layout;
        let heap_bytes = layout.chunk_count * layout.chunk_bytes;
        if size_bytes == 0 || size_bytes > heap_bytes {
            return Err(Error::option(
                "size_bytes",
                format!("{size_bytes} is not in 1..={heap_bytes} (the heap's size)"),
            ));
        }
        let chunks = size_bytes.div_ceil(layout.chunk_bytes);
        let mut state = self.state.lock();
        self.check_pptr_location(dest_pptr_offset)?;
        let current = PPtr::read_from(&*self.region, dest_pptr_offset)?;
        if !current.is_null() {
            return Err(Error::option(
                "dest_pptr_offset",
                format!(
                    "the pointer at {dest_pptr_offset} is not null ({current:?}); overwriting \
                     it would leak its block"
                ),
            ));
        }
        let first = self.find_free(chunks, state.next_fit).ok_or_else(|| Error::NoSpace {
            context: format!(
                "persistent heap: no {chunks} free contiguous chunks of {} bytes ({} of {} used)",
                layout.chunk_bytes, state.stats.used_chunks, layout.chunk_count
            ),
        })?;
        let record = AllocLogRecord {
            op: LogOp::Alloc,
            pptr_offset: dest_pptr_offset,
            block_offset: layout.chunk_offset(first),
            chunks,
        };
        self.log_begin(&record)?;
        self.apply(&record)?;
        self.log_end()?;
        state.next_fit = (first + chunks) % layout.chunk_count;
        state.stats.used_chunks += chunks;
        state.stats.allocations += 1;
        Ok(PPtr::new(self.header.file_id, record.block_offset))
    }

    /// Frees the block named by the persistent pointer at `pptr_offset` and persistently
    /// resets that pointer to null.
    pub fn deallocate(&self, pptr_offset: u64) -> Result<()> {
        let mut state = self.state.lock();
        self.check_pptr_location(pptr_offset)?;
        let pptr = PPtr::read_from(&*self.region, pptr_offset)?;
        let bad = |why: &str| {
            Error::option("pptr_offset", format!("pointer {pptr:?} at {pptr_offset}: {why}"))
        };
        if pptr.is_null() {
            return Err(bad("null"));
        }
        if pptr.file_id != self.header.file_id {
            return Err(bad("names another region"));
        }
        let layout = self.header.layout;
        let first = layout.chunk_at(pptr.offset).ok_or_else(|| bad("not a chunk of the heap"))?;
        if !self.bit(layout.start_bitmap_offset, first) {
            return Err(bad("not the start of an allocated block (double free?)"));
        }
        let chunks = self.block_chunks(first);
        let record =
            AllocLogRecord { op: LogOp::Free, pptr_offset, block_offset: pptr.offset, chunks };
        self.log_begin(&record)?;
        self.apply(&record)?;
        self.log_end()?;
        state.stats.used_chunks -= chunks;
        state.stats.deallocations += 1;
        Ok(())
    }

    /// The region offset `pptr` points to; an error unless it names the start of an
    /// allocated block of this region.
    pub fn resolve(&self, pptr: PPtr) -> Result<u64> {
        self.block_of(pptr).map(|(offset, _)| offset)
    }

    /// Offset and size in bytes of the allocated block `pptr` names.
    pub fn block_of(&self, pptr: PPtr) -> Result<(u64, u64)> {
        let layout = self.header.layout;
        let first = layout
            .chunk_at(pptr.offset)
            .filter(|_| pptr.file_id == self.header.file_id)
            .filter(|&c| self.bit(layout.start_bitmap_offset, c))
            .ok_or_else(|| {
                Error::corruption(
                    self.region.path(),
                    pptr.offset,
                    format!(
                        "persistent pointer {pptr:?} names no allocated block of region {}",
                        self.header.file_id
                    ),
                )
            })?;
        Ok((pptr.offset, self.block_chunks(first) * layout.chunk_bytes))
    }

    /// Every allocated block as (offset, bytes), in address order (for recovery and checks).
    pub fn allocated_blocks(&self) -> Vec<(u64, u64)> {
        let layout = self.header.layout;
        (0..layout.chunk_count)
            .filter(|&c| self.bit(layout.start_bitmap_offset, c))
            .map(|c| (layout.chunk_offset(c), self.block_chunks(c) * layout.chunk_bytes))
            .collect()
    }

    /// Checks the bitmaps: every block start is allocated, and every run of allocated chunks
    /// begins with a block start.
    pub fn check(&self) -> Result<()> {
        let layout = self.header.layout;
        let words = layout.chunk_count.div_ceil(64);
        let mut previous_top = 0u64;
        for i in 0..words {
            let alloc = self.word(layout.alloc_bitmap_offset + i * WORD_BYTES);
            let start = self.word(layout.start_bitmap_offset + i * WORD_BYTES);
            let at = i * 64;
            if start & !alloc != 0 {
                let chunk = at + u64::from((start & !alloc).trailing_zeros());
                return Err(self.corrupt_bitmap(chunk, "a block starts at a free chunk"));
            }
            let run_starts = alloc & !((alloc << 1) | previous_top);
            if run_starts & !start != 0 {
                let chunk = at + u64::from((run_starts & !start).trailing_zeros());
                return Err(self.corrupt_bitmap(chunk, "allocated chunk without a block start"));
            }
            previous_top = alloc >> 63;
        }
        Ok(())
    }

    fn corrupt_bitmap(&self, chunk: u64, why: &str) -> Error {
        let offset = self.header.layout.alloc_bitmap_offset + chunk / 8;
        Error::corruption(
            self.region.path(),
            offset,
            format!("allocation bitmap, chunk {chunk}: {why}"),
        )
    }

    /// Redoes the logged operation, if any.
    fn recover(&self) -> Result<Option<LogOp>> {
        let path = self.region.path();
        let mut bytes = [0u8; LOG_BYTES as usize];
        self.region.read(LOG_OFFSET, &mut bytes)?;
        let Some(record) =
            AllocLogRecord::decode_slot(&bytes).map_err(|e| e.at(&path, LOG_OFFSET))?
        else {
            return Ok(None);
        };
        let layout = self.header.layout;
        let block_fits = layout
            .chunk_at(record.block_offset)
            .is_some_and(|c| record.chunks <= layout.chunk_count - c);
        let pptr_fits = record.pptr_offset % WORD_BYTES == 0
            && record.pptr_offset.checked_add(PPtr::ENCODED_BYTES).is_some_and(|end| {
                (record.pptr_offset >= ROOT_OFFSET && end <= ROOT_OFFSET + ROOT_BYTES)
                    || (record.pptr_offset >= layout.heap_offset && end <= layout.region_bytes)
            });
        if !block_fits || !pptr_fits {
            return Err(Error::corruption(
                path,
                LOG_OFFSET,
                format!("log record out of range: {record:?}"),
            ));
        }
        self.apply(&record)?;
        self.log_end()?;
        Ok(Some(record.op))
    }

    /// Steps 2 of the protocol (idempotent, so recovery can redo it).
    fn apply(&self, record: &AllocLogRecord) -> Result<()> {
        let layout = self.header.layout;
        let first = layout.chunk_at(record.block_offset).expect("validated block offset");
        match record.op {
            LogOp::Alloc => {
                self.set_bits(first, record.chunks, true)?;
                PPtr::new(self.header.file_id, record.block_offset)
                    .write_to(&*self.region, record.pptr_offset)?;
                self.region.persist(record.pptr_offset, PPtr::ENCODED_BYTES)?;
                self.region.fence();
            }
            LogOp::Free => {
                PPtr::NULL.write_to(&*self.region, record.pptr_offset)?;
                self.region.persist(record.pptr_offset, PPtr::ENCODED_BYTES)?;
                self.region.fence();
                self.set_bits(first, record.chunks, false)?;
            }
        }
        Ok(())
    }

    /// Step 1: the record's body, then its op word, each persisted.
    fn log_begin(&self, record: &AllocLogRecord) -> Result<()> {
        assert_eq!(self.word(LOG_OFFSET), 0, "an operation is already logged");
        let bytes = record.encode();
        self.region.write(LOG_OFFSET + WORD_BYTES, &bytes[WORD_BYTES as usize..])?;
        self.region.persist(LOG_OFFSET, LOG_BYTES)?;
        self.region.fence();
        self.region.store_u64(LOG_OFFSET, record.op as u64)?;
        self.region.persist(LOG_OFFSET, WORD_BYTES)?;
        self.region.fence();
        Ok(())
    }

    /// Step 3: clears the op word.
    fn log_end(&self) -> Result<()> {
        self.region.store_u64(LOG_OFFSET, 0)?;
        self.region.persist(LOG_OFFSET, WORD_BYTES)?;
        self.region.fence();
        Ok(())
    }

    /// Sets (or clears) the allocated bits of chunks `[first, first + chunks)` and the start
    /// bit of `first`, and persists both bitmaps' changed words.
    fn set_bits(&self, first: u64, chunks: u64, value: bool) -> Result<()> {
        let layout = self.header.layout;
        let words = self.region.words();
        let end = first + chunks;
        let mut chunk = first;
        while chunk < end {
            let in_word = chunk % 64;
            let n = (64 - in_word).min(end - chunk);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << in_word };
            let word = &words[((layout.alloc_bitmap_offset / WORD_BYTES) + chunk / 64) as usize];
            if value {
                word.fetch_or(mask, Ordering::AcqRel);
            } else {
                word.fetch_and(!mask, Ordering::AcqRel);
            }
            chunk += n;
        }
        let first_word = layout.alloc_bitmap_offset + first / 64 * WORD_BYTES;
        let last_word = layout.alloc_bitmap_offset + (end - 1) / 64 * WORD_BYTES;
        self.region.persist(first_word, last_word + WORD_BYTES - first_word)?;
        let start_word = &words[((layout.start_bitmap_offset / WORD_BYTES) + first / 64) as usize];
        let bit = 1u64 << (first % 64);
        if value {
            start_word.fetch_or(bit, Ordering::AcqRel);
        } else {
            start_word.fetch_and(!bit, Ordering::AcqRel);
        }
        self.region.persist(layout.start_bitmap_offset + first / 64 * WORD_BYTES, WORD_BYTES)?;
        self.region.fence();
        Ok(())
    }

    fn word(&self, offset: u64) -> u64 {
        self.region.words()[(offset / WORD_BYTES) as usize].load(Ordering::Acquire)
    }

    fn bit(&self, bitmap_offset: u64, chunk: u64) -> bool {
        self.word(bitmap_offset + chunk / 64 * WORD_BYTES) & (1 << (chunk % 64)) != 0
    }

    fn count_used(&self) -> u64 {
        let layout = self.header.layout;
        (0..layout.chunk_count.div_ceil(64))
            .map(|i| u64::from(self.word(layout.alloc_bitmap_offset + i * WORD_BYTES).count_ones()))
            .sum()
    }

    /// Chunks of the block starting at `first`: up to the next start or free chunk.
    fn block_chunks(&self, first: u64) -> u64 {
        let layout = self.header.layout;
        let mut end = first + 1;
        while end < layout.chunk_count
            && self.bit(layout.alloc_bitmap_offset, end)
            && !self.bit(layout.start_bitmap_offset, end)
        {
            end += 1;
        }
        end - first
    }

    /// First run of `chunks` free chunks at or after `hint`, else from the heap's start.
    fn find_free(&self, chunks: u64, hint: u64) -> Option<u64> {
        let count = self.header.layout.chunk_count;
        let scan = |from: u64, to: u64| {
            let mut run_start = from;
            let mut chunk = from;
            while chunk < to {
                if chunk.is_multiple_of(64)
                    && self.word(self.header.layout.alloc_bitmap_offset + chunk / 64 * WORD_BYTES)
                        == u64::MAX
                {
                    chunk += 64;
                    run_start = chunk;
                    continue;
                }
                if self.bit(self.header.layout.alloc_bitmap_offset, chunk) {
                    run_start = chunk + 1;
                } else if chunk + 1 - run_start == chunks {
                    return Some(run_start);
                }
                chunk += 1;
            }
            None
        };
        scan(hint.min(count), count).or_else(|| scan(0, (hint + chunks).min(count)))
    }

    /// A persistent pointer location must be 8-byte aligned and lie in the root area or
    /// inside one allocated block (never in the allocator's metadata).
    fn check_pptr_location(&self, at: u64) -> Result<()> {
        let bad = |why: &str| Error::option("pptr_offset", format!("{at}: {why}"));
        if !at.is_multiple_of(WORD_BYTES) {
            return Err(bad("not 8-byte aligned"));
        }
        let end = at.checked_add(PPtr::ENCODED_BYTES).ok_or_else(|| bad("overflows"))?;
        if at >= ROOT_OFFSET && end <= ROOT_OFFSET + ROOT_BYTES {
            return Ok(());
        }
        let layout = self.header.layout;
        let (Some(first), Some(last)) =
            (layout.chunk_containing(at), layout.chunk_containing(end - 1))
        else {
            return Err(bad("neither in the root area nor in the heap"));
        };
        let start_of = |mut chunk: u64| loop {
            if !self.bit(layout.alloc_bitmap_offset, chunk) {
                return None;
            }
            if self.bit(layout.start_bitmap_offset, chunk) {
                return Some(chunk);
            }
            chunk = chunk.checked_sub(1)?;
        };
        match (start_of(first), start_of(last)) {
            (Some(a), Some(b)) if a == b => Ok(()),
            _ => Err(bad("not inside one allocated block")),
        }
    }
}

impl<R: PmemRegion + ?Sized> fmt::Debug for PmemAllocator<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PmemAllocator")
            .field("header", &self.header)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
