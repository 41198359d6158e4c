//! Free-space management within a block file (issue 3, item 7): allocate and free block
//! numbers so that space freed by a merge is reused (FD+FC section 4 reclaims the blocks of the
//! merged levels while the merge runs).
//!
//! Crash safety: a block freed by a state change must not be overwritten before that change is
//! durable, or a crash would bring back a root that still points at the overwritten block.
//! So [`FreeList::free`] puts blocks in a *pending* set, and they become allocatable only when
//! the engine calls [`FreeList::commit_durable`] after durably committing a state that no
//! longer references them (typically a [`crate::Superblock`] commit whose payload includes
//! [`FreeList::encode`] of this list). The encoding lists pending blocks as free, because in
//! the state it is committed with they are.
//!
//! Allocation takes the lowest free block (keeps files compact, and lets [`FreeList::trim_tail`]
//! give space back); with no free block the file grows by one. Byte layout of the encoding:
//! `docs/format/freelist.md`.

use std::collections::BTreeSet;

use lamina_core::checksum::{masked_crc32c, unmask};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_varint, varint_len};
use lamina_core::{Error, Result};

/// Format version of the encoding.
pub const FREELIST_FORMAT_VERSION: u8 = 1;

/// Free and used block numbers of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FreeList {
    first_block: u64,
    end_block: u64,
    blocks_max: u64,
    free: BTreeSet<u64>,
    pending: BTreeSet<u64>,
    reused_total: u64,
}

impl FreeList {
    /// An empty list handing out blocks `first_block..blocks_max` (blocks below `first_block`
    /// are reserved, e.g. for superblock slots).
    pub fn new(first_block: u64, blocks_max: u64) -> Result<Self> {
        if first_block > blocks_max {
            return Err(Error::option(
                "blocks_max",
                format!("{blocks_max} is below the first block {first_block}"),
            ));
        }
        Ok(FreeList {
            first_block,
            end_block: first_block,
            blocks_max,
            free: BTreeSet::new(),
            pending: BTreeSet::new(),
            reused_total: 0,
        })
    }

    /// A block to write: the lowest free one, else a new one at the end of the file.
    pub fn allocate(&mut self) -> Result<u64> {
        if let Some(block) = self.free.pop_first() {
            self.reused_total += 1;
            return Ok(block);
        }
        if self.end_block >= self.blocks_max {
            return Err(Error::NoSpace {
                context: format!("all {} blocks of the file are in use", self.blocks_max),
            });
        }
        self.end_block += 1;
        Ok(self.end_block - 1)
    }

    /// Returns `block` to the list; it becomes allocatable after the next
    /// [`FreeList::commit_durable`]. Freeing a block not in use is refused and changes nothing.
    pub fn free(&mut self, block: u64) -> Result<()> {
        if block < self.first_block || block >= self.end_block {
            return Err(Error::option(
                "block",
                format!(
                    "block {block} was never allocated (allocated range {}..{})",
                    self.first_block, self.end_block
                ),
            ));
        }
        if self.free.contains(&block) || self.pending.contains(&block) {
            return Err(Error::option("block", format!("block {block} is already free")));
        }
        self.pending.insert(block);
        Ok(())
    }

    /// The state that freed the pending blocks is durable: they may be reused now.
    pub fn commit_durable(&mut self) {
        self.free.append(&mut self.pending);
    }

    /// Drops free blocks at the end of the file; returns the new end block, so the caller can
    /// truncate the file to `end * block_bytes`.
    pub fn trim_tail(&mut self) -> u64 {
        while self.end_block > self.first_block && self.free.remove(&(self.end_block - 1)) {
            self.end_block -= 1;
        }
        self.end_block
    }

    /// Blocks in use.
    pub fn used_blocks(&self) -> u64 {
        self.end_block - self.first_block - self.free_blocks()
    }

    /// Blocks free (allocatable now or after the next durable commit).
    pub fn free_blocks(&self) -> u64 {
        (self.free.len() + self.pending.len()) as u64
    }

    /// Blocks freed but not yet allocatable.
    pub fn pending_blocks(&self) -> u64 {
        self.pending.len() as u64
    }

    /// One past the highest block ever allocated (the file needs `end_block * block_bytes`).
    pub fn end_block(&self) -> u64 {
        self.end_block
    }

    /// Allocations served by reusing a freed block since this list was created or decoded.
    pub fn reused_total(&self) -> u64 {
        self.reused_total
    }

    /// Whether `block` is free (now or pending).
    pub fn is_free(&self, block: u64) -> bool {
        self.free.contains(&block) || self.pending.contains(&block)
    }

    fn all_free(&self) -> impl Iterator<Item = u64> + '_ {
        // Both sets are sorted and disjoint; merge them in order.
        let mut merged: Vec<u64> = self.free.iter().chain(&self.pending).copied().collect();
        merged.sort_unstable();
        merged.into_iter()
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        out.push(FREELIST_FORMAT_VERSION);
        put_varint(out, self.first_block);
        put_varint(out, self.end_block);
        put_varint(out, self.blocks_max);
        put_varint(out, self.free_blocks());
        let mut next = self.first_block;
        for block in self.all_free() {
            put_varint(out, block - next);
            next = block + 1;
        }
    }
}

impl Encode for FreeList {
    fn encoded_len(&self) -> usize {
        let mut len = 1
            + varint_len(self.first_block)
            + varint_len(self.end_block)
            + varint_len(self.blocks_max)
            + varint_len(self.free_blocks())
            + 4;
        let mut next = self.first_block;
        for block in self.all_free() {
            len += varint_len(block - next);
            next = block + 1;
        }
        len
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        self.encode_body(out);
        let crc = masked_crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

impl Decode for FreeList {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        if input.len() < 5 {
            return Err(DecodeError::new(0, "free list shorter than its header and checksum"));
        }
        let (body, crc) = input.split_at(input.len() - 4);
        let stored = unmask(u32::from_le_bytes(crc.try_into().expect("4 bytes")));
        if stored != lamina_core::checksum::crc32c(body) {
            return Err(DecodeError::new(body.len(), "free list checksum mismatch"));
        }
        let mut r = Reader::new(body);
        let version = r.u8()?;
        if version != FREELIST_FORMAT_VERSION {
            return Err(DecodeError::new(0, format!("unsupported free list version {version}")));
        }
        let first_block = r.varint()?;
        let end_block = r.varint()?;
        let blocks_max = r.varint()?;
        if !(first_block <= end_block && end_block <= blocks_max) {
            return Err(r.error(format!(
                "inconsistent bounds: first {first_block}, end {end_block}, max {blocks_max}"
            )));
        }
        let count = r.varint()?;
        if count > end_block - first_block || count > r.remaining() as u64 {
            return Err(r.error(format!("{count} free blocks cannot fit")));
        }
        let mut free = BTreeSet::new();
        let mut next = first_block;
        for _ in 0..count {
            let at = r.position();
            let block = next
                .checked_add(r.varint()?)
                .filter(|&b| b < end_block)
                .ok_or_else(|| DecodeError::new(at, "free block past the end of the file"))?;
            free.insert(block);
            next = block + 1;
        }
        r.finish()?;
        Ok(FreeList {
            first_block,
            end_block,
            blocks_max,
            free,
            pending: BTreeSet::new(),
            reused_total: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault_plan::SplitMix;

    #[test]
    fn freed_blocks_are_reused_only_after_a_durable_commit() {
        let mut list = FreeList::new(2, 100).unwrap();
        let blocks: Vec<u64> = (0..5).map(|_| list.allocate().unwrap()).collect();
        assert_eq!(blocks, vec![2, 3, 4, 5, 6]);
        list.free(3).unwrap();
        list.free(5).unwrap();
        assert_eq!((list.used_blocks(), list.free_blocks(), list.pending_blocks()), (3, 2, 2));
        assert_eq!(list.allocate().unwrap(), 7, "pending blocks are not reused yet");
        list.commit_durable();
        assert_eq!(list.allocate().unwrap(), 3);
        assert_eq!(list.allocate().unwrap(), 5);
        assert_eq!(list.allocate().unwrap(), 8);
        assert_eq!((list.reused_total(), list.used_blocks(), list.free_blocks()), (2, 7, 0));
    }

    #[test]
    fn bad_frees_and_exhaustion_are_errors_that_change_nothing() {
        let mut list = FreeList::new(0, 2).unwrap();
        assert!(list.free(0).unwrap_err().is_invalid_argument());
        list.allocate().unwrap();
        list.allocate().unwrap();
        assert!(matches!(list.allocate().unwrap_err(), Error::NoSpace { .. }));
        list.free(1).unwrap();
        let before = list.clone();
        assert!(list.free(1).unwrap_err().to_string().contains("already free"));
        assert!(list.free(7).is_err());
        assert_eq!(list, before);
        assert!(FreeList::new(5, 4).is_err());
    }

    #[test]
    fn trim_tail_gives_back_trailing_free_blocks() {
        let mut list = FreeList::new(1, 10).unwrap();
        for _ in 0..5 {
            list.allocate().unwrap();
        }
        for b in [2, 4, 5] {
            list.free(b).unwrap();
        }
        assert_eq!(list.trim_tail(), 6, "pending blocks stay");
        list.commit_durable();
        assert_eq!(list.trim_tail(), 4);
        assert_eq!((list.used_blocks(), list.free_blocks()), (2, 1));
    }

    fn random_list(seed: u64) -> FreeList {
        let mut rng = SplitMix(seed);
        let mut list = FreeList::new(rng.below(4), 1 << 40).unwrap();
        let n = rng.below(300);
        let blocks: Vec<u64> = (0..n).map(|_| list.allocate().unwrap()).collect();
        for b in blocks {
            if rng.below(3) == 0 {
                list.free(b).unwrap();
            }
            if rng.below(50) == 0 {
                list.commit_durable();
            }
        }
        list
    }

    #[test]
    fn roundtrips() {
        for seed in 0..50 {
            let list = random_list(seed);
            let bytes = list.encode();
            assert_eq!(bytes.len(), list.encoded_len());
            let mut decoded = FreeList::decode(&bytes).unwrap();
            let mut expected = list.clone();
            expected.commit_durable();
            expected.reused_total = 0;
            assert_eq!(decoded, expected, "seed {seed}");
            decoded.commit_durable();
            assert_eq!(decoded.encode(), bytes);
        }
    }

    #[test]
    fn corruption_is_detected() {
        let bytes = random_list(7).encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(FreeList::decode(&bad).is_err(), "flip in byte {i}");
        }
        for len in 0..bytes.len() {
            assert!(FreeList::decode(&bytes[..len]).is_err(), "truncated to {len}");
        }
        // Well-formed checksums over malformed bodies are refused too.
        let seal = |body: &[u8]| {
            let mut v = body.to_vec();
            v.extend_from_slice(&masked_crc32c(body).to_le_bytes());
            v
        };
        assert!(FreeList::decode(&seal(&[1, 0, 5, 3, 9])).is_err(), "more free than blocks");
        assert!(FreeList::decode(&seal(&[1, 0, 2, 3, 1, 5])).is_err(), "free past the end");
        assert!(FreeList::decode(&seal(&[1, 4, 2, 9, 0])).is_err(), "first after end");
        assert!(FreeList::decode(&seal(&[2, 0, 0, 0, 0])).is_err(), "future version");
        assert!(FreeList::decode(&seal(&[1, 0, 2, 3, 1, 0, 7])).is_err(), "trailing bytes");
    }
}
