//! Reads a level (or run) in key order, block by block, without copying entries out of the
//! blocks read (merges and scans; issue 22: "merges over borrowed block payloads").
//!
//! The cursor holds a read-ahead buffer of whole blocks and the position of its current
//! entry; [`LevelCursor::peek`] borrows the entry from the buffer. Blocks are loaded only
//! when asked ([`LevelCursor::load_block`]), which is what FD+FC's m-stage needs: each old
//! block is read once, and a stage ends when some level has no buffered entry left
//! (section 4.4.2). Every segment is checked (checksum, place, order) before its entries
//! are returned.

use std::sync::Arc;

use lamina_core::codec::Reader;
use lamina_core::{Error, Result};
use lamina_storage::StorageFile;

use super::disk::DiskLevel;
use crate::format::entry::{BlockPtr, EntryRef, KIND_DELETE, KIND_FENCE, KIND_INSERT};
use crate::format::segment::{SEGMENT_HEADER_BYTES, SegmentAddr, parse_segment};
use crate::store::BlockStore;

/// Blocks a cursor reads with one call.
pub const READAHEAD_BLOCKS_DEFAULT: u32 = 8;

/// The current entry, decoded once: its kind and where its parts are in the buffer (so
/// that [`LevelCursor::peek`], called several times per entry by a merge, parses nothing).
#[derive(Debug, Clone, Copy)]
struct Cur {
    /// Offset of the entry in the buffer.
    start: usize,
    /// Offset just past it.
    end: usize,
    kind: u8,
    key: (usize, usize),
    /// Fence: the pointer; delete: `cancelled_len` in `a`; insert: the value's range.
    a: usize,
    b: usize,
}

/// A reader of one level in key order.
#[derive(Debug)]
pub struct LevelCursor {
    file: Arc<dyn StorageFile>,
    file_id: u32,
    store: BlockStore,
    /// Blocks of the level.
    blocks: u32,
    /// Next block to load.
    next_block: u32,
    readahead: u32,
    /// Read-ahead buffer: blocks `buf_first..buf_first + buf_blocks`.
    buf: Vec<u8>,
    buf_first: u32,
    buf_blocks: u32,
    /// The block being iterated, and its offset in the buffer.
    block: Option<u32>,
    block_base: usize,
    /// Next segment's offset within the block; whether the current segment is the last.
    next_seg: usize,
    last_seg: bool,
    /// Entries left in the current segment after the current one, and its end.
    seg_left: u16,
    seg_end: usize,
    cur: Option<Cur>,
    prev_key: Vec<u8>,
    prev_data: bool,
    has_prev: bool,
}

impl LevelCursor {
    /// A cursor over `level` starting at block `start` (nothing is read yet). A level an
    /// FD+FC merge is writing is read up to its written blocks (scans behind the wavefront).
    pub fn new(level: &DiskLevel, store: &BlockStore, start: u32, readahead: u32) -> Self {
        LevelCursor {
            file: level.file.clone(),
            file_id: level.file_id,
            store: store.clone(),
            blocks: level.blocks.max(level.index.read().blocks()),
            next_block: start,
            readahead: readahead.max(1),
            buf: Vec::new(),
            buf_first: 0,
            buf_blocks: 0,
            block: None,
            block_base: 0,
            next_seg: 0,
            last_seg: true,
            seg_left: 0,
            seg_end: 0,
            cur: None,
            prev_key: Vec::new(),
            prev_data: false,
            has_prev: false,
        }
    }

    /// The level file's id.
    pub fn file_id(&self) -> u32 {
        self.file_id
    }

    /// Whether the current block has an entry left.
    pub fn has_buffered(&self) -> bool {
        self.cur.is_some()
    }

    /// The next block to load.
    pub fn next_block(&self) -> u32 {
        self.next_block
    }

    /// Whether every block has been loaded.
    pub fn read_all_blocks(&self) -> bool {
        self.next_block >= self.blocks
    }

    /// The block the current entry is in (`None` before the first load).
    pub fn block_index(&self) -> Option<u32> {
        self.block
    }

    /// The current entry, borrowed from the buffer.
    pub fn peek(&self) -> Option<EntryRef<'_>> {
        let cur = self.cur?;
        if cur.end == cur.start {
            return None; // a segment opened, no entry read from it yet
        }
        let key = &self.buf[cur.key.0..cur.key.1];
        Some(match cur.kind {
            KIND_FENCE => {
                EntryRef::Fence { key, ptr: BlockPtr { file: cur.a as u32, index: cur.b as u32 } }
            }
            KIND_DELETE => EntryRef::Delete { key, cancelled_len: cur.a as u32 },
            _ => EntryRef::Insert { key, value: &self.buf[cur.a..cur.b] },
        })
    }

    fn corrupt(&self, offset: usize, reason: impl Into<String>) -> Error {
        let block = self.block.unwrap_or(self.next_block);
        let within = offset.saturating_sub(self.block_base) as u64;
        self.store.corruption(&*self.file, block, within, reason)
    }

    /// Loads the next block that has entries (empty blocks, which only the bottom level of
    /// a tree whose data all cancelled can have, are passed); returns the indexes of the
    /// blocks loaded (for m-delete's reclamation, Remark A.5), empty if none was left.
    pub fn load_block(&mut self) -> Result<Vec<u32>> {
        assert!(self.cur.is_none(), "a block is loaded only when the previous one is done");
        let mut loaded = Vec::new();
        while self.next_block < self.blocks {
            let index = self.next_block;
            if index < self.buf_first || index >= self.buf_first + self.buf_blocks {
                let count = self.readahead.min(self.blocks - index);
                self.store.read_blocks(&*self.file, index, count, &mut self.buf)?;
                self.buf_first = index;
                self.buf_blocks = count;
            }
            self.next_block += 1;
            self.block = Some(index);
            self.block_base = (index - self.buf_first) as usize * self.store.block_bytes();
            self.next_seg = 0;
            self.last_seg = false;
            self.seg_left = 0;
            loaded.push(index);
            if self.next_entry()? {
                break;
            }
        }
        Ok(loaded)
    }

    /// Opens the next segment of the current block; false if the block has no more.
    fn open_segment(&mut self) -> Result<bool> {
        if self.last_seg {
            return Ok(false);
        }
        let block = self.block.expect("a block is loaded");
        let block_bytes = self.store.block_bytes();
        let at = self.block_base + self.next_seg;
        let block_end = self.block_base + block_bytes;
        if self.next_seg + SEGMENT_HEADER_BYTES > block_bytes {
            return Err(self.corrupt(at, "block ends without its last segment"));
        }
        let addr = SegmentAddr { file: self.file_id, block, offset: self.next_seg as u32 };
        let seg = parse_segment(&self.buf[at..block_end], addr)
            .map_err(|e| self.corrupt(at + e.offset, e.reason))?;
        self.seg_left = seg.header.count;
        self.seg_end = at + usize::from(seg.header.len);
        self.last_seg = seg.header.is_last();
        self.next_seg += usize::from(seg.header.len);
        let first = at + SEGMENT_HEADER_BYTES;
        self.cur = Some(Cur { start: first, end: first, kind: 0, key: (0, 0), a: 0, b: 0 });
        Ok(true)
    }

    /// Moves to the next entry of the current block; false (and no current entry) at its end.
    fn next_entry(&mut self) -> Result<bool> {
        loop {
            let start = match self.cur {
                Some(c) => c.end,
                None => self.block_base + self.next_seg,
            };
            if self.seg_left == 0 {
                if let Some(c) = self.cur
                    && c.end != self.seg_end
                {
                    return Err(self.corrupt(c.end, "segment has bytes after its last entry"));
                }
                self.cur = None;
                if !self.open_segment()? {
                    return Ok(false);
                }
                continue;
            }
            self.seg_left -= 1;
            let (kmax, vmax) = self.store.limits();
            let mut r = Reader::new(&self.buf[start..self.seg_end]);
            let e = EntryRef::decode_from(&mut r, kmax, vmax)
                .map_err(|e| self.corrupt(start + e.offset, e.reason))?;
            let in_order = !self.has_prev
                || match self.prev_key.as_slice().cmp(e.key()) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Equal => !self.prev_data && e.is_data(),
                    std::cmp::Ordering::Greater => false,
                };
            if !in_order {
                return Err(self.corrupt(start, "entries out of order"));
            }
            self.prev_key.clear();
            self.prev_key.extend_from_slice(e.key());
            self.prev_data = e.is_data();
            self.has_prev = true;
            let base = self.buf.as_ptr() as usize;
            let at = |s: &[u8]| s.as_ptr() as usize - base;
            let key = (at(e.key()), at(e.key()) + e.key().len());
            let (kind, a, b) = match e {
                EntryRef::Fence { ptr, .. } => (KIND_FENCE, ptr.file as usize, ptr.index as usize),
                EntryRef::Delete { cancelled_len, .. } => (KIND_DELETE, cancelled_len as usize, 0),
                EntryRef::Insert { value, .. } => (KIND_INSERT, at(value), at(value) + value.len()),
            };
            self.cur = Some(Cur { start, end: start + r.position(), kind, key, a, b });
            return Ok(true);
        }
    }

    /// Consumes the current entry; afterwards the next one of the block is current, or
    /// none if the block is done (load the next with [`LevelCursor::load_block`]).
    pub fn advance(&mut self) -> Result<()> {
        assert!(self.cur.is_some(), "advance past the end of a block");
        if !self.next_entry()? {
            self.cur = None;
        }
        Ok(())
    }

    /// Consumes entries while `pred` holds for them, loading blocks as needed (scans:
    /// skipping to the start of a range).
    pub fn skip_while(&mut self, mut pred: impl FnMut(&EntryRef<'_>) -> bool) -> Result<()> {
        loop {
            if self.cur.is_none() && self.load_block()?.is_empty() {
                return Ok(());
            }
            match self.peek() {
                Some(e) if pred(&e) => self.advance()?,
                _ => return Ok(()),
            }
        }
    }
}
