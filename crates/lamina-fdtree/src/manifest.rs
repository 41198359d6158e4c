//! The manifest: the persistent description of the tree (level structure, counters, where
//! the snapshot of `L_0` is, and the last log record it reflects), committed through
//! `lamina_storage::Superblock` after every merge and at close. Byte layout:
//! `docs/format/fdtree-manifest.md`. Committing and recovering is in `persist.rs`.

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_varint};

use crate::level::LevelStats;
use crate::tree::Counters;

const MAGIC: u32 = u32::from_le_bytes(*b"FDTM");
const VERSION: u32 = 3;
/// Most levels a manifest may describe.
const LEVELS_MAX: u64 = 256;

/// One disk level as recorded in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelRecord {
    /// Level number.
    pub label: u64,
    /// Level file id.
    pub file_id: u32,
    /// Blocks.
    pub blocks: u32,
    /// Sizes.
    pub stats: LevelStats,
}

/// The decoded manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Block size the tree was written with.
    pub block_bytes: u32,
    /// `gamma`.
    pub size_ratio: u32,
    /// `kappa_0` in blocks.
    pub kappa0_blocks: u64,
    /// Key limit.
    pub key_bytes_max: u32,
    /// Value limit.
    pub value_bytes_max: u32,
    /// Next level file id.
    pub next_file_id: u32,
    /// `N_delta`, `N_nabla` and byte counters.
    pub counters: Counters,
    /// Disk levels, top to bottom.
    pub levels: Vec<LevelRecord>,
    /// Level file id of the `L_0` snapshot (0: `L_0` was empty).
    pub top_file: u32,
    /// Blocks of the `L_0` snapshot.
    pub top_blocks: u32,
    /// Sequence number of the last log record reflected by this state.
    pub applied_seq: u64,
    /// File id of the progress record of an FD+FC merge in progress (0: none; Remark A.6,
    /// `fc/progress.rs`). With a merge in progress, `levels` are the levels as the merge
    /// started, `top_file` is `L_0^old` and `applied_seq` the last record before the merge.
    pub merge_file: u32,
}

impl Encode for Manifest {
    fn encoded_len(&self) -> usize {
        crate::sealed::sealed_len(|out| self.encode_body(out))
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        crate::sealed::seal(out, |out| self.encode_body(out));
    }
}

impl Manifest {
    fn encode_body(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.block_bytes.to_le_bytes());
        out.extend_from_slice(&self.size_ratio.to_le_bytes());
        out.extend_from_slice(&self.kappa0_blocks.to_le_bytes());
        out.extend_from_slice(&self.key_bytes_max.to_le_bytes());
        out.extend_from_slice(&self.value_bytes_max.to_le_bytes());
        out.extend_from_slice(&self.next_file_id.to_le_bytes());
        let c = &self.counters;
        for v in [c.inserts, c.deletes, c.insert_bytes, c.cancelled_bytes] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_varint(out, self.levels.len() as u64);
        for l in &self.levels {
            put_varint(out, l.label);
            out.extend_from_slice(&l.file_id.to_le_bytes());
            out.extend_from_slice(&l.blocks.to_le_bytes());
            l.stats.encode_to(out);
        }
        out.extend_from_slice(&self.top_file.to_le_bytes());
        out.extend_from_slice(&self.top_blocks.to_le_bytes());
        out.extend_from_slice(&self.applied_seq.to_le_bytes());
        out.extend_from_slice(&self.merge_file.to_le_bytes());
    }
}

impl Decode for Manifest {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let body = crate::sealed::unseal(input, "manifest")?;
        let mut r = Reader::new(body);
        if r.u32()? != MAGIC {
            return Err(DecodeError::new(0, "not an fdtree manifest"));
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(DecodeError::new(4, format!("manifest version {version} unsupported")));
        }
        let block_bytes = r.u32()?;
        let size_ratio = r.u32()?;
        let kappa0_blocks = r.u64()?;
        let key_bytes_max = r.u32()?;
        let value_bytes_max = r.u32()?;
        let next_file_id = r.u32()?;
        let counters = Counters {
            inserts: r.u64()?,
            deletes: r.u64()?,
            insert_bytes: r.u64()?,
            cancelled_bytes: r.u64()?,
        };
        let n = r.varint()?;
        if n > LEVELS_MAX {
            return Err(r.error(format!("{n} levels")));
        }
        let mut levels = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let label = r.varint()?;
            let file_id = r.u32()?;
            let blocks = r.u32()?;
            let stats = LevelStats::decode_from(&mut r)?;
            levels.push(LevelRecord { label, file_id, blocks, stats });
        }
        let top_file = r.u32()?;
        let top_blocks = r.u32()?;
        let applied_seq = r.u64()?;
        let merge_file = r.u32()?;
        r.finish()?;
        Ok(Manifest {
            block_bytes,
            size_ratio,
            kappa0_blocks,
            key_bytes_max,
            value_bytes_max,
            next_file_id,
            counters,
            levels,
            top_file,
            top_blocks,
            applied_seq,
            merge_file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            block_bytes: 4096,
            size_ratio: 8,
            kappa0_blocks: 16,
            key_bytes_max: 1024,
            value_bytes_max: 4096,
            next_file_id: 7,
            counters: Counters { inserts: 10, deletes: 2, insert_bytes: 300, cancelled_bytes: 60 },
            levels: vec![LevelRecord {
                label: 2,
                file_id: 5,
                blocks: 3,
                stats: LevelStats { data_bytes: 9, fence_bytes: 8, ..LevelStats::default() },
            }],
            top_file: 6,
            top_blocks: 2,
            applied_seq: 99,
            merge_file: 8,
        }
    }

    #[test]
    fn roundtrip() {
        let m = sample();
        let bytes = m.encode();
        assert_eq!(bytes.len(), m.encoded_len());
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn corruption_is_detected() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(Manifest::decode(&bad).is_err(), "flip at {i} undetected");
        }
        for len in 0..bytes.len() {
            assert!(Manifest::decode(&bytes[..len]).is_err());
        }
    }
}
