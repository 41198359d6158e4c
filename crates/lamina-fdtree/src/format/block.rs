//! Blocks: building one from entries in level order, and reading all of one back
//! (layout in `docs/format/fdtree-block.md`; segments in `segment.rs`).
//!
//! A block occupies `block_bytes` at `index * block_bytes` of its level file: its segments
//! from offset 0, back to back, the last one flagged, then zeros. A merge fills blocks
//! greedily (section 2.3) with [`BlockBuilder`]: an entry goes into the open segment if the
//! segment stays within `segment_bytes` (or is empty), else it opens the next segment; a key
//! group that does not fit what remains of the block starts the next block (the caller
//! checks with [`BlockBuilder::fits`]).

use lamina_core::codec::DecodeError;

use super::entry::EntryRef;
use super::segment::{
    EntryIter, FLAG_LAST, SEGMENT_HEADER_BYTES, SegmentAddr, SegmentHeader, parse_segment,
};

/// A closed segment of a block: where it is and its first entry's key (the lookup
/// directory, `index.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Byte offset in the block.
    pub offset: u32,
    /// Length in bytes.
    pub len: u16,
    /// Key of its first entry (empty for a segment without entries or starting with the
    /// `-infinity` fence).
    pub first_key: Vec<u8>,
}

/// Builds one block.
#[derive(Debug)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    block_bytes: usize,
    segment_bytes: usize,
    file: u32,
    block: u32,
    /// Offset of the open segment.
    open_at: usize,
    open_count: u16,
    closed: Vec<SegmentInfo>,
    entries: usize,
}

impl BlockBuilder {
    /// An empty block `block` of level file `file`, with one open (empty) segment.
    pub fn new(block_bytes: usize, segment_bytes: usize, file: u32, block: u32) -> Self {
        assert!(segment_bytes > SEGMENT_HEADER_BYTES && segment_bytes <= block_bytes);
        let mut buf = Vec::with_capacity(block_bytes);
        buf.resize(SEGMENT_HEADER_BYTES, 0);
        BlockBuilder {
            buf,
            block_bytes,
            segment_bytes,
            file,
            block,
            open_at: 0,
            open_count: 0,
            closed: Vec::new(),
            entries: 0,
        }
    }

    /// The block's index in its file.
    pub fn index(&self) -> u32 {
        self.block
    }

    /// Entries appended so far.
    pub fn entry_count(&self) -> usize {
        self.entries
    }

    /// Bytes used so far (headers included).
    pub fn used_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Whether entries of these encoded sizes, appended in order, fit in this block.
    pub fn fits(&self, sizes: impl IntoIterator<Item = usize>) -> bool {
        let mut used = self.buf.len();
        let mut open_len = used - self.open_at;
        let mut open_count = self.open_count;
        for n in sizes {
            if open_count > 0 && open_len + n > self.segment_bytes {
                open_len = SEGMENT_HEADER_BYTES;
                open_count = 0;
                used += SEGMENT_HEADER_BYTES;
            }
            if open_len + n > super::segment::SEGMENT_BYTES_MAX {
                return false;
            }
            open_len += n;
            open_count += 1;
            used += n;
        }
        used <= self.block_bytes
    }

    /// Appends one entry (the caller checked that it fits and that entries come in level
    /// order).
    pub fn push(&mut self, entry: EntryRef<'_>) {
        let n = entry.encoded_len();
        if self.open_count > 0 && self.buf.len() - self.open_at + n > self.segment_bytes {
            self.close_open(0);
            self.open_at = self.buf.len();
            self.buf.resize(self.open_at + SEGMENT_HEADER_BYTES, 0);
        }
        entry.encode_to(&mut self.buf);
        self.open_count = self.open_count.checked_add(1).expect("a segment holds < 2^16 entries");
        self.entries += 1;
        assert!(self.buf.len() <= self.block_bytes, "block overflow: the caller checks fits()");
        assert!(
            self.buf.len() - self.open_at <= super::segment::SEGMENT_BYTES_MAX,
            "segment longer than its length field"
        );
    }

    fn close_open(&mut self, flags: u8) {
        let len = self.buf.len() - self.open_at;
        let header = SegmentHeader {
            addr: SegmentAddr { file: self.file, block: self.block, offset: self.open_at as u32 },
            flags,
            count: self.open_count,
            len: u16::try_from(len).expect("segment length checked on push"),
        };
        let first_key = first_key_of(&self.buf[self.open_at + SEGMENT_HEADER_BYTES..]);
        header.seal(&mut self.buf[self.open_at..]);
        self.closed.push(SegmentInfo { offset: self.open_at as u32, len: header.len, first_key });
        self.open_count = 0;
    }

    /// The entries of the block so far (closed segments and the open one), for lookups of
    /// a block a merge is still filling (FD+FC's tail, section 4.4.2): the closed segments'
    /// headers are sealed, the open one's is not yet.
    pub fn in_progress(&self) -> InProgress<'_> {
        InProgress { builder: self }
    }

    /// Seals the last segment and returns the block image (`block_bytes` long, zero
    /// padded) and its segments.
    pub fn finish(mut self) -> (Vec<u8>, Vec<SegmentInfo>) {
        self.close_open(FLAG_LAST);
        self.buf.resize(self.block_bytes, 0);
        (self.buf, self.closed)
    }
}

/// The key of the first entry encoded at the start of `entries` (empty if there is none).
fn first_key_of(entries: &[u8]) -> Vec<u8> {
    let mut r = lamina_core::codec::Reader::new(entries);
    if entries.is_empty() {
        return Vec::new();
    }
    // The builder wrote these bytes itself: kind, then the length-prefixed key.
    let _kind = r.u8().expect("written by the builder");
    r.bytes_with_len(usize::MAX).expect("written by the builder").to_vec()
}

/// A block being filled, as lookups read it.
#[derive(Debug, Clone, Copy)]
pub struct InProgress<'a> {
    builder: &'a BlockBuilder,
}

impl<'a> InProgress<'a> {
    /// Every entry so far, in order: the closed segments' and the open one's.
    pub fn runs(&self) -> impl Iterator<Item = super::segment::EntryRun<'a>> + 'a {
        let b = self.builder;
        let closed = b.closed.iter().map(move |s| {
            let start = s.offset as usize;
            let count = u16::from_le_bytes([b.buf[start + 20], b.buf[start + 21]]);
            super::segment::EntryRun {
                bytes: &b.buf[start + SEGMENT_HEADER_BYTES..start + usize::from(s.len)],
                count,
            }
        });
        let open = super::segment::EntryRun {
            bytes: &b.buf[b.open_at + SEGMENT_HEADER_BYTES..],
            count: b.open_count,
        };
        closed.chain(std::iter::once(open))
    }
}

/// Every entry of a block image read from disk, segment by segment, each segment checked
/// (checksum, place) before its entries are returned.
#[derive(Debug)]
pub struct BlockEntries<'a> {
    bytes: &'a [u8],
    file: u32,
    block: u32,
    next_offset: usize,
    done: bool,
    current: Option<EntryIter<'a>>,
    limits: (usize, usize),
    prev_key: Option<&'a [u8]>,
    prev_data: bool,
}

impl<'a> BlockEntries<'a> {
    /// The entries of block `block` of level file `file`, whose image is `bytes`.
    pub fn new(
        bytes: &'a [u8],
        file: u32,
        block: u32,
        key_bytes_max: usize,
        value_bytes_max: usize,
    ) -> Self {
        BlockEntries {
            bytes,
            file,
            block,
            next_offset: 0,
            done: false,
            current: None,
            limits: (key_bytes_max, value_bytes_max),
            prev_key: None,
            prev_data: false,
        }
    }

    /// Byte offset where the failing segment starts (for error messages).
    pub fn offset(&self) -> usize {
        self.next_offset
    }

    fn next_segment(&mut self) -> Result<bool, DecodeError> {
        if self.done {
            return Ok(false);
        }
        let at = self.next_offset;
        if at + SEGMENT_HEADER_BYTES > self.bytes.len() {
            return Err(DecodeError::new(at, "block ends without its last segment"));
        }
        let addr = SegmentAddr { file: self.file, block: self.block, offset: at as u32 };
        let seg = parse_segment(&self.bytes[at..], addr).map_err(|e| shift(e, at))?;
        self.next_offset = at + usize::from(seg.header.len);
        self.done = seg.header.is_last();
        self.current = Some(seg.entries.iter(self.limits.0, self.limits.1));
        Ok(true)
    }
}

fn shift(e: DecodeError, by: usize) -> DecodeError {
    DecodeError::new(e.offset + by, e.reason)
}

impl<'a> Iterator for BlockEntries<'a> {
    type Item = Result<EntryRef<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(it) = self.current.as_mut()
                && let Some(e) = it.next()
            {
                let e = match e {
                    Ok(e) => e,
                    Err(err) => {
                        self.done = true;
                        self.current = None;
                        return Some(Err(shift(err, self.next_offset)));
                    }
                };
                // Order across segments (within one, the segment's iterator checks it).
                if let Some(pk) = self.prev_key {
                    let bad = match pk.cmp(e.key()) {
                        std::cmp::Ordering::Greater => true,
                        std::cmp::Ordering::Equal => self.prev_data || !e.is_data(),
                        std::cmp::Ordering::Less => false,
                    };
                    if bad {
                        self.done = true;
                        self.current = None;
                        return Some(Err(DecodeError::new(
                            self.next_offset,
                            "entries out of order",
                        )));
                    }
                }
                self.prev_key = Some(e.key());
                self.prev_data = e.is_data();
                return Some(Ok(e));
            }
            self.current = None;
            match self.next_segment() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(err) => {
                    self.done = true;
                    return Some(Err(err));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::entry::{BlockPtr, Entry};

    fn entries(n: usize, value_len: usize) -> Vec<Entry> {
        let mut v = vec![Entry::Fence { key: vec![], ptr: BlockPtr { file: 2, index: 0 } }];
        for i in 0..n {
            let key = format!("key{i:05}").into_bytes();
            if i % 10 == 0 {
                v.push(Entry::Fence {
                    key: key.clone(),
                    ptr: BlockPtr { file: 2, index: i as u32 },
                });
            }
            if i % 7 == 3 {
                v.push(Entry::Delete { key, cancelled_len: 20 });
            } else {
                v.push(Entry::Insert { key, value: vec![i as u8; value_len] });
            }
        }
        v
    }

    fn build(all: &[Entry], block_bytes: usize, seg: usize) -> (Vec<u8>, Vec<SegmentInfo>, usize) {
        let mut b = BlockBuilder::new(block_bytes, seg, 9, 4);
        let mut n = 0;
        for e in all {
            if !b.fits([e.encoded_len()]) {
                break;
            }
            b.push(e.as_ref());
            n += 1;
        }
        let (bytes, segs) = b.finish();
        (bytes, segs, n)
    }

    #[test]
    fn a_block_reads_back_what_was_pushed() {
        let all = entries(500, 100);
        let (bytes, segs, n) = build(&all, 32 << 10, 4096);
        assert!(n > 200 && n < all.len(), "{n}");
        assert_eq!(bytes.len(), 32 << 10);
        assert!(segs.len() >= 7, "{}", segs.len());
        for s in &segs {
            assert!(usize::from(s.len) <= 4096);
        }
        let back: Vec<Entry> = BlockEntries::new(&bytes, 9, 4, 64, 4096)
            .map(|e| e.unwrap().to_owned_entry())
            .collect();
        assert_eq!(back, all[..n]);
        // The directory's first keys are the keys of each segment's first entry.
        for s in &segs[1..] {
            let seg = parse_segment(
                &bytes[s.offset as usize..],
                SegmentAddr { file: 9, block: 4, offset: s.offset },
            )
            .unwrap();
            let first = seg.entries.iter(64, 4096).next().unwrap().unwrap();
            assert_eq!(first.key(), s.first_key.as_slice());
        }
        // The in-progress view agrees before finishing.
        let mut b = BlockBuilder::new(32 << 10, 4096, 9, 4);
        for e in &all[..n] {
            b.push(e.as_ref());
        }
        let seen: Vec<Entry> = b
            .in_progress()
            .runs()
            .flat_map(|r| r.iter(64, 4096).map(|e| e.unwrap().to_owned_entry()).collect::<Vec<_>>())
            .collect();
        assert_eq!(seen, all[..n]);
    }

    #[test]
    fn an_entry_longer_than_a_segment_gets_its_own() {
        let big = Entry::Insert { key: b"big".to_vec(), value: vec![1; 6000] };
        let small = Entry::Insert { key: b"c".to_vec(), value: vec![2; 10] };
        let mut b = BlockBuilder::new(32 << 10, 4096, 1, 0);
        b.push(EntryRef::Insert { key: b"a", value: &[0; 100] });
        assert!(b.fits([big.encoded_len(), small.encoded_len()]));
        b.push(big.as_ref());
        b.push(small.as_ref());
        let (bytes, segs) = b.finish();
        assert_eq!(segs.len(), 3);
        assert!(usize::from(segs[1].len) > 6000);
        assert_eq!(BlockEntries::new(&bytes, 1, 0, 8, 8192).count(), 3);
    }

    #[test]
    fn fits_matches_what_push_uses() {
        // Random sizes: whenever fits() says yes, push never overflows, and when it says
        // no, the entry really would not fit.
        let mut seed = 12345u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as usize
        };
        for _ in 0..200 {
            let mut b = BlockBuilder::new(8192, 1024, 1, 0);
            let mut i = 0u32;
            loop {
                let value = vec![0u8; rnd() % 1500];
                let key = format!("{i:08}").into_bytes();
                let e = EntryRef::Insert { key: &key, value: &value };
                if !b.fits([e.encoded_len()]) {
                    assert!(
                        b.used_bytes() + e.encoded_len() > 8192 - SEGMENT_HEADER_BYTES
                            || b.used_bytes() + e.encoded_len() > 8192 - 2 * SEGMENT_HEADER_BYTES
                    );
                    break;
                }
                b.push(e);
                i += 1;
            }
            let (bytes, _) = b.finish();
            assert_eq!(BlockEntries::new(&bytes, 1, 0, 8, 2000).flatten().count(), i as usize);
        }
    }

    #[test]
    fn damage_is_detected() {
        let all = entries(100, 20);
        let (bytes, segs, _) = build(&all, 4096, 512);
        let used = segs.last().map(|s| s.offset as usize + usize::from(s.len)).unwrap();
        for i in (0..used * 8).step_by(7) {
            let mut bad = bytes.clone();
            bad[i / 8] ^= 1 << (i % 8);
            assert!(
                BlockEntries::new(&bad, 9, 4, 64, 4096).any(|e| e.is_err()),
                "bit {i} undetected"
            );
        }
        // The wrong block, or a block of zeros.
        assert!(BlockEntries::new(&bytes, 9, 5, 64, 4096).any(|e| e.is_err()));
        assert!(BlockEntries::new(&vec![0; 4096], 9, 4, 64, 4096).any(|e| e.is_err()));
    }
}
