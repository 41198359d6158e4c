//! The manifest: the persistent description of the tree (options it was made with, disk
//! levels, `L_0`'s runs and fences file, the last log record the runs hold, and the progress
//! record of an FD+FC merge in progress), committed through `lamina_storage::Superblock`.
//! Byte layout: `docs/format/fdtree-manifest.md`.
//!
//! Each level and run also has an index file (`fd-<id>.idx`, `format/index.rs`) holding its
//! exact counts; the manifest records its block count, which the index and the level file
//! must agree with.

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_varint};

use crate::format::sealed;

const MAGIC: u32 = u32::from_le_bytes(*b"FDTM");
const VERSION: u32 = 4;
/// Most levels a manifest may describe.
pub const LEVELS_MAX: u64 = 256;
/// Most runs of `L_0` a manifest may describe (old and new together).
pub const RUNS_MAX: u64 = 1024;

/// One disk level (or run, `label` 0) as recorded in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelRecord {
    /// Level number (0 for a run).
    pub label: u64,
    /// Level file id.
    pub file_id: u32,
    /// Blocks.
    pub blocks: u32,
}

/// The decoded manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Block size the tree was written with.
    pub block_bytes: u32,
    /// Segment target it was written with.
    pub segment_bytes: u32,
    /// `gamma`.
    pub size_ratio: u32,
    /// `kappa_0` in blocks.
    pub kappa0_blocks: u64,
    /// Key limit.
    pub key_bytes_max: u32,
    /// Value limit.
    pub value_bytes_max: u32,
    /// Next file id.
    pub next_file_id: u32,
    /// Disk levels, top to bottom (during a merge: as the merge began).
    pub levels: Vec<LevelRecord>,
    /// `L_0`'s runs, newest first (during a merge: `L_0^old`'s).
    pub runs: Vec<LevelRecord>,
    /// During a merge: the runs written since it began (`L_0^new`'s), newest first.
    pub new_runs: Vec<LevelRecord>,
    /// File id of `L_0`'s fences (during a merge: `L_0^old`'s; 0: none).
    pub fences_file: u32,
    /// Every log record up to this sequence number is in the runs or levels.
    pub applied_seq: u64,
    /// File id of the progress record of an FD+FC merge in progress (0: none; Remark A.6).
    pub merge_file: u32,
}

fn put_records(out: &mut Vec<u8>, records: &[LevelRecord]) {
    put_varint(out, records.len() as u64);
    for r in records {
        put_varint(out, r.label);
        out.extend_from_slice(&r.file_id.to_le_bytes());
        out.extend_from_slice(&r.blocks.to_le_bytes());
    }
}

fn get_records(r: &mut Reader<'_>, max: u64) -> Result<Vec<LevelRecord>, DecodeError> {
    let n = r.varint()?;
    if n > max {
        return Err(r.error(format!("{n} records, at most {max}")));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        out.push(LevelRecord { label: r.varint()?, file_id: r.u32()?, blocks: r.u32()? });
    }
    Ok(out)
}

impl Manifest {
    fn encode_body(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.block_bytes.to_le_bytes());
        out.extend_from_slice(&self.segment_bytes.to_le_bytes());
        out.extend_from_slice(&self.size_ratio.to_le_bytes());
        out.extend_from_slice(&self.kappa0_blocks.to_le_bytes());
        out.extend_from_slice(&self.key_bytes_max.to_le_bytes());
        out.extend_from_slice(&self.value_bytes_max.to_le_bytes());
        out.extend_from_slice(&self.next_file_id.to_le_bytes());
        put_records(out, &self.levels);
        put_records(out, &self.runs);
        put_records(out, &self.new_runs);
        out.extend_from_slice(&self.fences_file.to_le_bytes());
        out.extend_from_slice(&self.applied_seq.to_le_bytes());
        out.extend_from_slice(&self.merge_file.to_le_bytes());
    }
}

impl Encode for Manifest {
    fn encoded_len(&self) -> usize {
        sealed::sealed_len(|out| self.encode_body(out))
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        sealed::seal(out, |out| self.encode_body(out));
    }
}

impl Decode for Manifest {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let body = sealed::unseal(input, "manifest")?;
        let mut r = Reader::new(body);
        if r.u32()? != MAGIC {
            return Err(DecodeError::new(0, "not an fdtree manifest"));
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(DecodeError::new(4, format!("manifest version {version} unsupported")));
        }
        let m = Manifest {
            block_bytes: r.u32()?,
            segment_bytes: r.u32()?,
            size_ratio: r.u32()?,
            kappa0_blocks: r.u64()?,
            key_bytes_max: r.u32()?,
            value_bytes_max: r.u32()?,
            next_file_id: r.u32()?,
            levels: get_records(&mut r, LEVELS_MAX)?,
            runs: get_records(&mut r, RUNS_MAX)?,
            new_runs: get_records(&mut r, RUNS_MAX)?,
            fences_file: r.u32()?,
            applied_seq: r.u64()?,
            merge_file: r.u32()?,
        };
        r.finish()?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            block_bytes: 4096,
            segment_bytes: 1024,
            size_ratio: 8,
            kappa0_blocks: 16,
            key_bytes_max: 1024,
            value_bytes_max: 4096,
            next_file_id: 12,
            levels: vec![LevelRecord { label: 2, file_id: 5, blocks: 3 }],
            runs: vec![LevelRecord { label: 0, file_id: 9, blocks: 1 }],
            new_runs: vec![LevelRecord { label: 0, file_id: 11, blocks: 2 }],
            fences_file: 6,
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
