//! The in-memory index of one level or `L_0` run: what a lookup needs to read at most one
//! segment of it, and none when its Bloom filter rules the key out (issue 22).
//!
//! - The segment directory: the first key and place of every segment, grouped by block.
//! - The level's fences (those pointing into the next materialized level), grouped by the
//!   block holding them. A lookup that reached block `b` of `L_i` through a fence finds the
//!   fence to follow into `L_succ(i)` among block `b`'s fences (footnote 4: it is in the
//!   same block): fractional cascading (section 2), done in memory, so a level whose filter
//!   rules the key out is passed without reading it.
//! - The Bloom filter of the level's data keys (`bloom.rs`).
//!
//! A level is indexed block by block as a merge finishes each block ([`LevelIndex::add_block`]);
//! the block a merge is still filling is not in the index (FD+FC lookups read it from memory).
//! The index of a finished level is stored beside it (`fd-<id>.idx`, sealed by a masked
//! CRC32C; layout in `docs/format/fdtree-index.md`) and loaded when the tree is opened.

use lamina_core::codec::{DecodeError, Reader, put_bytes, put_varint};

use super::block::SegmentInfo;
use super::bloom::Bloom;
use super::entry::BlockPtr;
use super::stats::LevelStats;

const MAGIC: u32 = u32::from_le_bytes(*b"FDIX");
const VERSION: u32 = 1;
/// Most blocks of one level (block indexes are u32).
pub const BLOCKS_MAX: u64 = u32::MAX as u64;

/// Keys packed back to back, with each key's first 8 bytes beside them as a big-endian
/// integer (zero-padded): a binary search compares those and reads a key only when they are
/// equal, so a probe touches one array, not the end offsets and the key bytes (two cache
/// lines less per probe for the lookups of issue 22; eight prefixes share a line, the
/// segments of one 32 KiB block at the default sizes).
///
/// `prefix(a) < prefix(b)` implies `a < b` in the bytewise order (shorter first on a common
/// prefix): at the first differing byte either both keys have it, or the one that ended
/// has the padding 0 there and is a prefix of the other. Equal prefixes decide nothing.
#[derive(Debug, Default, Clone)]
struct KeyArena {
    bytes: Vec<u8>,
    ends: Vec<u32>,
    prefixes: Vec<u64>,
}

/// `key`'s first 8 bytes as a big-endian integer, zero-padded.
#[inline]
fn key_prefix(key: &[u8]) -> u64 {
    if let Some(head) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*head);
    }
    let mut head = [0u8; 8];
    head[..key.len()].copy_from_slice(key);
    u64::from_be_bytes(head)
}

impl KeyArena {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    fn push(&mut self, key: &[u8]) {
        self.bytes.extend_from_slice(key);
        self.ends.push(u32::try_from(self.bytes.len()).expect("< 4 GiB of index keys per level"));
        self.prefixes.push(key_prefix(key));
    }

    /// The last index in `range` whose key is `<= key`.
    fn last_at_or_before(&self, range: std::ops::Range<usize>, key: &[u8]) -> Option<usize> {
        debug_assert_eq!(self.prefixes.len(), self.ends.len());
        let prefix = key_prefix(key);
        let (mut lo, mut hi) = (range.start, range.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = self.prefixes[mid];
            let le =
                at < prefix || (at == prefix && lamina_core::key_order::le(self.get(mid), key));
            if le {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo > range.start).then(|| lo - 1)
    }

    fn memory_bytes(&self) -> u64 {
        (self.bytes.capacity() + 4 * self.ends.capacity() + 8 * self.prefixes.capacity()) as u64
    }
}

/// Where a segment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentPos {
    /// Block index.
    pub block: u32,
    /// Byte offset in the block.
    pub offset: u32,
    /// Length in bytes.
    pub len: u16,
}

/// The index of one level or run (a clone shares the filter).
#[derive(Debug, Clone)]
pub struct LevelIndex {
    seg_keys: KeyArena,
    seg_pos: Vec<SegmentPos>,
    /// First segment of each indexed block.
    block_first_seg: Vec<u32>,
    fence_keys: KeyArena,
    fence_ptrs: Vec<BlockPtr>,
    /// First fence of each indexed block.
    block_first_fence: Vec<u32>,
    bloom: std::sync::Arc<Bloom>,
}

impl LevelIndex {
    /// An empty index whose filter is sized for `keys` keys at `bits_per_key`.
    pub fn new(keys: u64, bits_per_key: u32) -> Self {
        LevelIndex {
            seg_keys: KeyArena::default(),
            seg_pos: Vec::new(),
            block_first_seg: Vec::new(),
            fence_keys: KeyArena::default(),
            fence_ptrs: Vec::new(),
            block_first_fence: Vec::new(),
            bloom: std::sync::Arc::new(Bloom::new(keys, bits_per_key)),
        }
    }

    /// Blocks indexed.
    pub fn blocks(&self) -> u32 {
        self.block_first_seg.len() as u32
    }

    /// Segments indexed.
    pub fn segments(&self) -> usize {
        self.seg_pos.len()
    }

    /// Fences indexed.
    pub fn fences(&self) -> usize {
        self.fence_ptrs.len()
    }

    /// The filter (keys are added by the writer as it appends data entries).
    pub fn bloom(&self) -> &std::sync::Arc<Bloom> {
        &self.bloom
    }

    /// Adds finished block `block` (the next one): its segments and its fences, in order.
    pub fn add_block<'k>(
        &mut self,
        block: u32,
        segments: &[SegmentInfo],
        fences: impl IntoIterator<Item = (&'k [u8], BlockPtr)>,
    ) {
        assert_eq!(block, self.blocks(), "blocks are indexed in order");
        assert!(!segments.is_empty(), "a block has at least one segment");
        self.block_first_seg.push(self.seg_pos.len() as u32);
        for s in segments {
            self.seg_keys.push(&s.first_key);
            self.seg_pos.push(SegmentPos { block, offset: s.offset, len: s.len });
        }
        self.block_first_fence.push(self.fence_ptrs.len() as u32);
        for (key, ptr) in fences {
            self.fence_keys.push(key);
            self.fence_ptrs.push(ptr);
        }
    }

    fn seg_range(&self, block: u32) -> std::ops::Range<usize> {
        let b = block as usize;
        let start = self.block_first_seg[b] as usize;
        let end = self.block_first_seg.get(b + 1).map_or(self.seg_pos.len(), |&e| e as usize);
        start..end
    }

    fn fence_range(&self, block: u32) -> std::ops::Range<usize> {
        let b = block as usize;
        let start = self.block_first_fence[b] as usize;
        let end = self.block_first_fence.get(b + 1).map_or(self.fence_ptrs.len(), |&e| e as usize);
        start..end
    }

    /// The segment of indexed block `block` that holds `key`'s entries if the block has
    /// any: the last one whose first key is `<= key` (a key's fence may end one segment and
    /// its data entry start the next, which then has the key as its first key). `None` if
    /// the block is not indexed or every segment starts after `key`.
    pub fn segment_in_block(&self, block: u32, key: &[u8]) -> Option<SegmentPos> {
        self.segment_in_block_numbered(block, key).map(|(_, pos)| pos)
    }

    /// [`LevelIndex::segment_in_block`] with the segment's number in the level (0-based, in
    /// level order).
    pub fn segment_in_block_numbered(&self, block: u32, key: &[u8]) -> Option<(usize, SegmentPos)> {
        if block >= self.blocks() {
            return None;
        }
        let range = self.seg_range(block);
        self.seg_keys.last_at_or_before(range, key).map(|i| (i, self.seg_pos[i]))
    }

    /// The segment of the whole level that holds `key`'s entries, if any (runs, which have
    /// no fences leading into them).
    pub fn segment_anywhere(&self, key: &[u8]) -> Option<SegmentPos> {
        self.segment_anywhere_numbered(key).map(|(_, pos)| pos)
    }

    /// [`LevelIndex::segment_anywhere`] with the segment's number in the level.
    pub fn segment_anywhere_numbered(&self, key: &[u8]) -> Option<(usize, SegmentPos)> {
        self.seg_keys.last_at_or_before(0..self.seg_pos.len(), key).map(|i| (i, self.seg_pos[i]))
    }

    /// Where segment `number` of the level is (`None`: not indexed).
    pub fn segment_pos(&self, number: usize) -> Option<SegmentPos> {
        self.seg_pos.get(number).copied()
    }

    /// The fence with the largest key `<= key` among those of indexed block `block`.
    pub fn fence_in_block(&self, block: u32, key: &[u8]) -> Option<BlockPtr> {
        if block >= self.blocks() {
            return None;
        }
        let range = self.fence_range(block);
        self.fence_keys.last_at_or_before(range, key).map(|i| self.fence_ptrs[i])
    }

    /// The first key of indexed block `block` (its first segment's first key).
    pub fn block_first_key(&self, block: u32) -> Option<&[u8]> {
        (block < self.blocks()).then(|| self.seg_keys.get(self.seg_range(block).start))
    }

    /// The fences of indexed block `block`, in order.
    pub fn block_fences(&self, block: u32) -> impl Iterator<Item = (&[u8], BlockPtr)> {
        self.fence_range(block).map(|i| (self.fence_keys.get(i), self.fence_ptrs[i]))
    }

    /// Memory held.
    pub fn memory_bytes(&self) -> u64 {
        self.seg_keys.memory_bytes()
            + self.fence_keys.memory_bytes()
            + (self.seg_pos.capacity() * std::mem::size_of::<SegmentPos>()) as u64
            + (self.fence_ptrs.capacity() * 8) as u64
            + 4 * (self.block_first_seg.capacity() + self.block_first_fence.capacity()) as u64
            + self.bloom.memory_bytes()
    }

    /// The sealed encoding of the index of level file `file_id` with its stats.
    pub fn encode(&self, file_id: u32, stats: &LevelStats) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            64 + self.seg_keys.bytes.len()
                + 12 * self.seg_pos.len()
                + self.fence_keys.bytes.len()
                + 12 * self.fence_ptrs.len()
                + self.bloom.encoded_len(),
        );
        super::sealed::seal(&mut out, |out| {
            out.extend_from_slice(&MAGIC.to_le_bytes());
            out.extend_from_slice(&VERSION.to_le_bytes());
            out.extend_from_slice(&file_id.to_le_bytes());
            out.extend_from_slice(&self.blocks().to_le_bytes());
            stats.encode_to(out);
            put_varint(out, self.seg_pos.len() as u64);
            for (i, p) in self.seg_pos.iter().enumerate() {
                put_bytes(out, self.seg_keys.get(i));
                put_varint(out, u64::from(p.block));
                put_varint(out, u64::from(p.offset));
                put_varint(out, u64::from(p.len));
            }
            put_varint(out, self.fence_ptrs.len() as u64);
            for (i, p) in self.fence_ptrs.iter().enumerate() {
                put_bytes(out, self.fence_keys.get(i));
                out.extend_from_slice(&p.file.to_le_bytes());
                out.extend_from_slice(&p.index.to_le_bytes());
            }
            for &f in &self.block_first_fence {
                put_varint(out, u64::from(f));
            }
            self.bloom.encode_to(out);
        });
        out
    }

    /// Decodes what [`LevelIndex::encode`] wrote for level file `file_id`, checking the
    /// structure (order, ranges, counts) as well as the seal. Returns the index and the
    /// level's stats.
    pub fn decode(
        input: &[u8],
        file_id: u32,
        key_bytes_max: usize,
        block_bytes: u32,
    ) -> Result<(LevelIndex, LevelStats), DecodeError> {
        let body = super::sealed::unseal(input, "level index")?;
        let mut r = Reader::new(body);
        if r.u32()? != MAGIC {
            return Err(DecodeError::new(0, "not an fdtree level index"));
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(DecodeError::new(4, format!("level index version {version}")));
        }
        let owner = r.u32()?;
        if owner != file_id {
            return Err(r.error(format!("index of level file {owner}, expected {file_id}")));
        }
        let blocks = r.u32()?;
        let stats = LevelStats::decode_from(&mut r)?;
        let mut index = LevelIndex::new(0, 0);
        let segs = r.varint()?;
        if segs > r.remaining() as u64 || (blocks > 0 && segs < u64::from(blocks)) {
            return Err(r.error(format!("{segs} segments for {blocks} blocks")));
        }
        let mut prev: Option<SegmentPos> = None;
        for _ in 0..segs {
            let key = r.bytes_with_len(key_bytes_max)?;
            let block = u32::try_from(r.varint()?).map_err(|_| r.error("segment block"))?;
            let offset = u32::try_from(r.varint()?).map_err(|_| r.error("segment offset"))?;
            let len = u16::try_from(r.varint()?).map_err(|_| r.error("segment length"))?;
            let pos = SegmentPos { block, offset, len };
            let new_block = match prev {
                None => block == 0 && offset == 0,
                Some(p) if p.block == block => {
                    offset == p.offset + u32::from(p.len)
                        && index.seg_keys.get(index.seg_pos.len() - 1) <= key
                }
                Some(p) => block == p.block + 1 && offset == 0,
            };
            let starts_block = prev.is_none_or(|p| p.block != block);
            if !new_block
                || block >= blocks
                || u64::from(offset) + u64::from(len) > u64::from(block_bytes)
                || (starts_block
                    && prev.is_some()
                    && index.seg_keys.get(index.seg_pos.len() - 1) > key)
            {
                return Err(r.error(format!("segment {pos:?} out of place")));
            }
            if starts_block {
                index.block_first_seg.push(index.seg_pos.len() as u32);
            }
            index.seg_keys.push(key);
            index.seg_pos.push(pos);
            prev = Some(pos);
        }
        if index.blocks() != blocks {
            return Err(r.error(format!("segments cover {} of {blocks} blocks", index.blocks())));
        }
        let fences = r.varint()?;
        if fences > r.remaining() as u64 {
            return Err(r.error(format!("{fences} fences")));
        }
        for _ in 0..fences {
            let key = r.bytes_with_len(key_bytes_max)?;
            let ptr = BlockPtr { file: r.u32()?, index: r.u32()? };
            if index.fence_keys.len() > 0 && index.fence_keys.get(index.fence_keys.len() - 1) >= key
            {
                return Err(r.error("fences out of order"));
            }
            index.fence_keys.push(key);
            index.fence_ptrs.push(ptr);
        }
        let mut last = 0u64;
        for _ in 0..blocks {
            let f = r.varint()?;
            if f < last || f > fences {
                return Err(r.error(format!("block's first fence {f} of {fences}")));
            }
            last = f;
            index.block_first_fence.push(f as u32);
        }
        index.bloom = std::sync::Arc::new(Bloom::decode_from(&mut r)?);
        r.finish()?;
        Ok((index, stats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(offset: u32, len: u16, key: &[u8]) -> SegmentInfo {
        SegmentInfo { offset, len, first_key: key.to_vec() }
    }

    fn sample() -> LevelIndex {
        let p = |i| BlockPtr { file: 3, index: i };
        let mut ix = LevelIndex::new(100, 10);
        ix.add_block(
            0,
            &[seg(0, 100, b""), seg(100, 80, b"d"), seg(180, 50, b"g")],
            [(&b""[..], p(0)), (&b"e"[..], p(1))],
        );
        ix.add_block(1, &[seg(0, 60, b"k"), seg(60, 60, b"m")], [(&b"k"[..], p(2))]);
        ix.add_block(2, &[seg(0, 10, b"q")], []);
        for k in [&b"a"[..], b"d", b"k", b"q"] {
            ix.bloom().insert(k);
        }
        ix
    }

    /// The prefix search agrees with a bytewise search on keys that tie on their first 8
    /// bytes, end in zero bytes, or are shorter than 8 bytes (the padding's edge cases).
    #[test]
    fn prefix_search_agrees_with_the_bytewise_order() {
        let alphabet: [&[u8]; 4] = [b"", b"\0", b"\x01", b"\xff"];
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for head in [&b""[..], b"abc", b"abcdefg", b"abcdefgh", b"abcdefgh\0"] {
            for a in alphabet {
                for b in alphabet {
                    keys.push([head, a, b].concat());
                }
            }
        }
        keys.sort();
        keys.dedup();
        let mut arena = KeyArena::default();
        for k in &keys {
            arena.push(k);
        }
        let mut probes = keys.clone();
        probes.extend(keys.iter().map(|k| [k.as_slice(), b"\0"].concat()));
        probes.push(vec![0xff; 12]);
        for probe in &probes {
            for start in [0, 7, 30] {
                let range = start..keys.len();
                let want = range.clone().rev().find(|&i| keys[i].as_slice() <= probe.as_slice());
                assert_eq!(arena.last_at_or_before(range, probe), want, "{probe:?} from {start}");
            }
        }
    }

    #[test]
    fn lookups_find_the_segment_and_the_fence() {
        let ix = sample();
        assert_eq!(ix.segment_in_block(0, b"a").unwrap().offset, 0);
        assert_eq!(ix.segment_in_block(0, b"d").unwrap().offset, 100);
        assert_eq!(ix.segment_in_block(0, b"f").unwrap().offset, 100);
        assert_eq!(ix.segment_in_block(0, b"z").unwrap().offset, 180);
        assert_eq!(ix.segment_in_block(1, b"a"), None);
        assert_eq!(
            ix.segment_in_block(1, b"n").unwrap(),
            SegmentPos { block: 1, offset: 60, len: 60 }
        );
        assert_eq!(ix.segment_in_block(3, b"n"), None);
        assert_eq!(ix.segment_anywhere(b"p").unwrap().block, 1);
        assert_eq!(ix.fence_in_block(0, b"c").unwrap().index, 0);
        assert_eq!(ix.fence_in_block(0, b"e").unwrap().index, 1);
        assert_eq!(ix.fence_in_block(1, b"z").unwrap().index, 2);
        assert_eq!(ix.fence_in_block(2, b"z"), None);
        assert_eq!(ix.block_first_key(1), Some(&b"k"[..]));
        assert!(ix.bloom().may_contain(b"k"));
    }

    #[test]
    fn roundtrip() {
        let ix = sample();
        let stats = LevelStats {
            inserts: 3,
            deletes: 1,
            insert_bytes: 30,
            delete_bytes: 5,
            ..LevelStats::default()
        };
        let bytes = ix.encode(3, &stats);
        let (back, st) = LevelIndex::decode(&bytes, 3, 64, 4096).unwrap();
        assert_eq!(st, stats);
        assert_eq!((back.blocks(), back.segments(), back.fences()), (3, 6, 3));
        assert_eq!(back.encode(3, &stats), bytes);
        assert!(back.bloom().may_contain(b"d"));
        assert!(LevelIndex::decode(&bytes, 4, 64, 4096).is_err(), "another level's index");
        assert!(LevelIndex::decode(&bytes, 3, 64, 128).is_err(), "segments past the block");
    }

    #[test]
    fn damage_is_detected() {
        let bytes = sample().encode(3, &LevelStats::default());
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x04;
            assert!(LevelIndex::decode(&bad, 3, 64, 4096).is_err(), "flip at {i}");
        }
        for len in 0..bytes.len() {
            assert!(LevelIndex::decode(&bytes[..len], 3, 64, 4096).is_err());
        }
    }
}
