//! The block format (issue 3, item 5): fixed-size blocks (4 KiB by default) with a 32-byte
//! header and a CRC32C over the whole block, so a reader detects a torn write (CRC), a block
//! that is not lamina's or is of a future format (magic, version), and a misdirected write or
//! a block of another file (owner and block number are stored and covered by the CRC).
//! Byte layout: `docs/format/block.md`.

use std::path::Path;

use lamina_core::checksum::{crc32c, crc32c_append, mask, unmask};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};
use lamina_core::{Error, Result};

use crate::backend::StorageFile;

/// `b"LMBK"` read as a little-endian `u32`.
pub const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"LMBK");
/// The format version this build writes and reads.
pub const BLOCK_FORMAT_VERSION: u8 = 1;
/// Bytes of the header at the start of every block.
pub const BLOCK_HEADER_BYTES: usize = 32;
/// Smallest block size (one disk sector).
pub const BLOCK_BYTES_MIN: usize = 512;
/// Largest block size.
pub const BLOCK_BYTES_MAX: usize = 1 << 20;
/// Offset of the CRC field within the header.
const CRC_OFFSET: usize = 28;

/// What a block holds. Values 0..16 are reserved for this crate; engines use 16 and up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlockType(pub u8);

impl BlockType {
    /// A superblock slot ([`crate::superblock`]).
    pub const SUPERBLOCK: BlockType = BlockType(1);
    /// A free-list page ([`crate::freelist`]).
    pub const FREELIST: BlockType = BlockType(2);
    /// First value engines may use.
    pub const ENGINE_FIRST: BlockType = BlockType(16);
}

/// One decoded block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Total size in bytes: a power of two in [`BLOCK_BYTES_MIN`]..=[`BLOCK_BYTES_MAX`].
    pub block_bytes: usize,
    /// What the block holds.
    pub block_type: BlockType,
    /// Identifies the file (or structure) the block belongs to.
    pub owner: u64,
    /// The block's position in its file (offset / block size).
    pub block_no: u64,
    /// Up to `block_bytes - BLOCK_HEADER_BYTES` bytes.
    pub payload: Vec<u8>,
}

/// Payload capacity of a block of `block_bytes`.
pub fn payload_capacity(block_bytes: usize) -> usize {
    block_bytes - BLOCK_HEADER_BYTES
}

fn check_block_bytes(block_bytes: usize) -> std::result::Result<(), String> {
    if block_bytes.is_power_of_two() && (BLOCK_BYTES_MIN..=BLOCK_BYTES_MAX).contains(&block_bytes) {
        Ok(())
    } else {
        Err(format!(
            "block size {block_bytes} is not a power of two in {BLOCK_BYTES_MIN}..={BLOCK_BYTES_MAX}"
        ))
    }
}

impl Block {
    /// A block, refusing a bad size or a payload over capacity.
    pub fn new(
        block_bytes: usize,
        block_type: BlockType,
        owner: u64,
        block_no: u64,
        payload: Vec<u8>,
    ) -> Result<Self> {
        check_block_bytes(block_bytes).map_err(|reason| Error::option("block_bytes", reason))?;
        if payload.len() > payload_capacity(block_bytes) {
            return Err(Error::option(
                "payload",
                format!(
                    "{} bytes do not fit a {block_bytes}-byte block ({} bytes of payload)",
                    payload.len(),
                    payload_capacity(block_bytes)
                ),
            ));
        }
        Ok(Block { block_bytes, block_type, owner, block_no, payload })
    }

    /// Checks that this block is the one expected at `block_no` of `owner`, with `block_type`.
    pub fn expect(&self, block_type: BlockType, owner: u64, block_no: u64) -> Result<(), String> {
        if self.owner != owner {
            return Err(format!("block belongs to owner {}, expected {owner}", self.owner));
        }
        if self.block_no != block_no {
            return Err(format!(
                "misdirected block: holds block {}, read at {block_no}",
                self.block_no
            ));
        }
        if self.block_type != block_type {
            return Err(format!("block type {}, expected {}", self.block_type.0, block_type.0));
        }
        Ok(())
    }
}

impl Encode for Block {
    fn encoded_len(&self) -> usize {
        self.block_bytes
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        assert!(check_block_bytes(self.block_bytes).is_ok(), "checked by Block::new");
        assert!(self.payload.len() <= payload_capacity(self.block_bytes), "checked by Block::new");
        let start = out.len();
        out.extend_from_slice(&BLOCK_MAGIC.to_le_bytes());
        out.push(BLOCK_FORMAT_VERSION);
        out.push(self.block_type.0);
        out.extend_from_slice(&0u16.to_le_bytes()); // flags, reserved
        out.extend_from_slice(&self.owner.to_le_bytes());
        out.extend_from_slice(&self.block_no.to_le_bytes());
        out.extend_from_slice(&(self.payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]); // CRC, filled below
        out.extend_from_slice(&self.payload);
        out.resize(start + self.block_bytes, 0);
        let block = &mut out[start..];
        let crc = block_crc(block);
        block[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&mask(crc).to_le_bytes());
    }
}

/// CRC32C of the block with the CRC field skipped.
fn block_crc(block: &[u8]) -> u32 {
    crc32c_append(crc32c(&block[..CRC_OFFSET]), &block[CRC_OFFSET + 4..])
}

impl Decode for Block {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        check_block_bytes(input.len()).map_err(|reason| DecodeError::new(0, reason))?;
        let mut r = Reader::new(input);
        if r.u32()? != BLOCK_MAGIC {
            return Err(DecodeError::new(0, "bad magic: not a lamina block"));
        }
        let version = r.u8()?;
        if version != BLOCK_FORMAT_VERSION {
            return Err(DecodeError::new(4, format!("unsupported block format version {version}")));
        }
        let block_type = BlockType(r.u8()?);
        let flags = r.u16()?;
        if flags != 0 {
            return Err(DecodeError::new(6, format!("unknown flags {flags:#x}")));
        }
        let owner = r.u64()?;
        let block_no = r.u64()?;
        let payload_len = r.u32()? as usize;
        let stored_crc = unmask(r.u32()?);
        let crc = block_crc(input);
        if stored_crc != crc {
            return Err(DecodeError::new(
                CRC_OFFSET,
                format!(
                    "block checksum mismatch (stored {stored_crc:#010x}, computed {crc:#010x}): torn or corrupt"
                ),
            ));
        }
        if payload_len > payload_capacity(input.len()) {
            return Err(DecodeError::new(
                24,
                format!("payload length {payload_len} over capacity"),
            ));
        }
        let payload = r.bytes(payload_len)?.to_vec();
        Ok(Block { block_bytes: input.len(), block_type, owner, block_no, payload })
    }
}

/// Writes `block` at its position (`block_no * block_bytes`) in `file`.
pub fn write_block(file: &dyn StorageFile, block: &Block) -> Result<()> {
    file.write_all_at(block.block_no * block.block_bytes as u64, &block.encode())
}

/// Reads block `block_no` of `file` and checks it is a `block_type` block of `owner` stored at
/// that position; any failure is an [`Error::Corruption`] naming `path` and the offset.
pub fn read_block(
    file: &dyn StorageFile,
    path: &Path,
    block_bytes: usize,
    block_type: BlockType,
    owner: u64,
    block_no: u64,
) -> Result<Block> {
    check_block_bytes(block_bytes).map_err(|reason| Error::option("block_bytes", reason))?;
    let offset = block_no
        .checked_mul(block_bytes as u64)
        .ok_or_else(|| Error::option("block_no", format!("block {block_no} is out of range")))?;
    let mut buf = vec![0u8; block_bytes];
    file.read_exact_at(offset, &mut buf)?;
    let block = Block::decode(&buf).map_err(|e| e.at(path, offset))?;
    block
        .expect(block_type, owner, block_no)
        .map_err(|reason| Error::corruption(path, offset, reason))?;
    Ok(block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStorage, OpenMode, Storage};

    fn sample() -> Block {
        Block::new(4096, BlockType(20), 7, 3, b"payload".to_vec()).unwrap()
    }

    #[test]
    fn roundtrips() {
        for block_bytes in [512, 4096, 65536] {
            let cap = payload_capacity(block_bytes);
            for payload in [vec![], vec![0xab; 1], vec![0x5a; cap]] {
                let block = Block::new(block_bytes, BlockType(17), u64::MAX, 9, payload).unwrap();
                let bytes = block.encode();
                assert_eq!(bytes.len(), block_bytes);
                assert_eq!(Block::decode(&bytes).unwrap(), block);
            }
        }
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let bytes = sample().encode();
        for bit in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(Block::decode(&bad).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn torn_foreign_and_misdirected_blocks_are_refused() {
        let bytes = sample().encode();
        let full = Block::new(4096, BlockType(20), 7, 3, vec![0xee; 4000]).unwrap();
        let mut torn = full.encode();
        torn[512..].fill(0); // only the first sector of the new contents reached the disk
        assert!(Block::decode(&torn).unwrap_err().reason.contains("checksum"));
        assert!(Block::decode(&[0u8; 4096]).unwrap_err().reason.contains("magic"));
        assert!(Block::decode(&bytes[..4000]).is_err());
        let mut future = bytes.clone();
        future[4] = 2;
        assert!(Block::decode(&future).unwrap_err().reason.contains("version"));

        let s = MemoryStorage::new();
        let f = s.open("f", OpenMode::Create).unwrap();
        let mut misdirected = sample();
        misdirected.block_no = 5;
        f.write_all_at(3 * 4096, &misdirected.encode()).unwrap();
        let err = read_block(&*f, &s.path_of("f"), 4096, BlockType(20), 7, 3).unwrap_err();
        assert!(err.to_string().contains("misdirected"), "{err}");
        assert!(matches!(err, Error::Corruption { offset: 12288, .. }));
        write_block(&*f, &sample()).unwrap();
        assert!(read_block(&*f, &s.path_of("f"), 4096, BlockType(20), 8, 3).is_err());
        assert_eq!(read_block(&*f, &s.path_of("f"), 4096, BlockType(20), 7, 3).unwrap(), sample());
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(
            Block::new(4096, BlockType(1), 0, 0, vec![0; 4065]).unwrap_err().is_invalid_argument()
        );
        assert!(Block::new(1000, BlockType(1), 0, 0, vec![]).is_err());
        assert!(Block::decode(&[0u8; 100]).is_err());
    }
}
