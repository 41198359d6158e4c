//! The content of a level block (byte layout in `docs/format/fdtree-block.md`).
//!
//! Blocks use `lamina-storage`'s block format (`lamina_storage::block`: 32-byte header with
//! magic, version, type, owner, block number and a CRC32C over the whole block). The owner is
//! the level file id, so a block of another level or a misdirected write is detected. The
//! payload is an entry count (u32 LE) followed by the encoded entries in level order.

use std::path::Path;

use lamina_core::Result;
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_storage::StorageFile;
use lamina_storage::block::{self as sblock, BlockType};

use crate::entry::Entry;

/// Bytes of a block not available to entries: the storage block header and the count.
pub const BLOCK_HEADER_BYTES: usize = sblock::BLOCK_HEADER_BYTES + 4;
/// Block type of an FD+tree level block.
pub const LEVEL_BLOCK_TYPE: BlockType = BlockType(BlockType::ENGINE_FIRST.0);

/// The decoded content of one block: its entries in level order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Block {
    /// Entries, sorted by (key, kind).
    pub entries: Vec<Entry>,
}

impl Block {
    /// Payload bytes the entries take (without the count).
    pub fn payload_len(&self) -> usize {
        self.entries.iter().map(Entry::encoded_len).sum()
    }

    /// The storage payload: count, then entries.
    pub fn encode_payload(&self) -> Vec<u8> {
        encode_entries(&self.entries)
    }

    /// Decodes a payload; checks entry encodings and their order.
    pub fn decode_payload(
        payload: &[u8],
        key_bytes_max: usize,
        value_bytes_max: usize,
    ) -> Result<Block, DecodeError> {
        let mut r = Reader::new(payload);
        let count = r.u32()? as usize;
        let mut entries: Vec<Entry> = Vec::with_capacity(count.min(payload.len()));
        for _ in 0..count {
            let at = r.position();
            let e = Entry::decode_from(&mut r, key_bytes_max, value_bytes_max)?;
            if let Some(prev) = entries.last()
                && prev.order(&e).is_ge()
            {
                return Err(DecodeError::new(at, "entries out of order"));
            }
            entries.push(e);
        }
        r.finish()?;
        Ok(Block { entries })
    }

    /// Writes the block as block `index` of level file `file_id`.
    pub fn write(
        &self,
        file: &dyn StorageFile,
        block_bytes: usize,
        file_id: u32,
        index: u32,
    ) -> Result<()> {
        write_entries(file, block_bytes, file_id, index, &self.entries)
    }

    /// Reads block `index` of level file `file_id`; corruption names `path` and the offset.
    pub fn read(
        file: &dyn StorageFile,
        path: &Path,
        block_bytes: usize,
        file_id: u32,
        index: u32,
        limits: (usize, usize),
    ) -> Result<Block> {
        let raw = sblock::read_block(
            file,
            path,
            block_bytes,
            LEVEL_BLOCK_TYPE,
            u64::from(file_id),
            u64::from(index),
        )?;
        let offset = u64::from(index) * block_bytes as u64 + sblock::BLOCK_HEADER_BYTES as u64;
        Block::decode_payload(&raw.payload, limits.0, limits.1).map_err(|e| e.at(path, offset))
    }

    /// Reads the raw payload of block `index` of level file `file_id` (checked by the
    /// storage block format, not decoded).
    pub fn read_payload(
        file: &dyn StorageFile,
        path: &Path,
        block_bytes: usize,
        file_id: u32,
        index: u32,
    ) -> Result<Vec<u8>> {
        let raw = sblock::read_block(
            file,
            path,
            block_bytes,
            LEVEL_BLOCK_TYPE,
            u64::from(file_id),
            u64::from(index),
        )?;
        Ok(raw.payload)
    }

    /// The fence with the largest key `<= key` (Algorithm 2, line 10).
    pub fn fence_at_or_before(&self, key: &[u8]) -> Option<&Entry> {
        let end = self.entries.partition_point(|e| e.key() <= key);
        self.entries[..end].iter().rev().find(|e| !e.is_data())
    }

    /// The data entries with exactly `key` (at most a delete then an insert).
    pub fn data_for(&self, key: &[u8]) -> &[Entry] {
        let start = self.entries.partition_point(|e| e.key() < key);
        let end = self.entries.partition_point(|e| e.key() <= key);
        let group = &self.entries[start..end];
        let first_data = group.iter().position(Entry::is_data).unwrap_or(group.len());
        &group[first_data..]
    }
}

/// The payload codec (entry count, then entries), for tools that read blocks without a
/// tree's limits; the tree itself decodes with its configured key and value limits.
impl Encode for Block {
    fn encoded_len(&self) -> usize {
        4 + self.payload_len()
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&encode_entries(&self.entries));
    }
}

impl Decode for Block {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        Block::decode_payload(input, KEY_BYTES_MAX, VALUE_BYTES_MAX)
    }
}

/// The payload of a block holding `entries`: count, then entries.
pub fn encode_entries(entries: &[Entry]) -> Vec<u8> {
    let len: usize = entries.iter().map(Entry::encoded_len).sum();
    let mut out = Vec::with_capacity(4 + len);
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for e in entries {
        e.encode_to(&mut out);
    }
    out
}

/// Writes `entries` as block `index` of level file `file_id`.
pub fn write_entries(
    file: &dyn StorageFile,
    block_bytes: usize,
    file_id: u32,
    index: u32,
    entries: &[Entry],
) -> Result<()> {
    let block = sblock::Block::new(
        block_bytes,
        LEVEL_BLOCK_TYPE,
        u64::from(file_id),
        u64::from(index),
        encode_entries(entries),
    )?;
    sblock::write_block(file, &block)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::BlockPtr;
    use lamina_storage::{MemoryStorage, OpenMode, Storage};

    fn sample() -> Block {
        Block {
            entries: vec![
                Entry::Fence { key: vec![], ptr: BlockPtr { file: 1, index: 0 } },
                Entry::Delete { key: b"b".to_vec() },
                Entry::Insert { key: b"b".to_vec(), value: b"v".to_vec() },
                Entry::Fence { key: b"c".to_vec(), ptr: BlockPtr { file: 1, index: 1 } },
                Entry::Insert { key: b"d".to_vec(), value: vec![] },
            ],
        }
    }

    #[test]
    fn roundtrip_through_storage() {
        let s = MemoryStorage::new();
        let f = s.open("x", OpenMode::Create).unwrap();
        sample().write(&*f, 512, 7, 3).unwrap();
        let back = Block::read(&*f, Path::new("x"), 512, 7, 3, (16, 16)).unwrap();
        assert_eq!(back, sample());
        assert_eq!(back.data_for(b"b").len(), 2);
        assert!(back.data_for(b"c").is_empty());
        assert_eq!(back.fence_at_or_before(b"cc").unwrap().key(), b"c");
        assert_eq!(back.fence_at_or_before(b"a").unwrap().key(), b"");
        // A block of another level, or read at the wrong place, is refused.
        assert!(Block::read(&*f, Path::new("x"), 512, 8, 3, (16, 16)).is_err());
        f.write_all_at(0, &vec![0; 512]).unwrap();
        let copy = {
            let mut b = vec![0u8; 512];
            f.read_exact_at(3 * 512, &mut b).unwrap();
            b
        };
        f.write_all_at(2 * 512, &copy).unwrap();
        assert!(Block::read(&*f, Path::new("x"), 512, 7, 2, (16, 16)).is_err());
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        let s = MemoryStorage::new();
        let f = s.open("x", OpenMode::Create).unwrap();
        sample().write(&*f, 512, 1, 0).unwrap();
        let mut bytes = vec![0u8; 512];
        f.read_exact_at(0, &mut bytes).unwrap();
        for i in 0..(BLOCK_HEADER_BYTES + sample().payload_len()) * 8 {
            let mut bad = bytes.clone();
            bad[i / 8] ^= 1 << (i % 8);
            f.write_all_at(0, &bad).unwrap();
            assert!(Block::read(&*f, Path::new("x"), 512, 1, 0, (16, 16)).is_err(), "bit {i}");
        }
    }

    #[test]
    fn payload_codec_roundtrips_and_refuses_damage() {
        let b = sample();
        let bytes = b.encode();
        assert_eq!(bytes.len(), b.encoded_len());
        assert_eq!(Block::decode(&bytes).unwrap(), b);
        for len in 0..bytes.len() {
            assert!(Block::decode(&bytes[..len]).is_err(), "truncated to {len}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(Block::decode(&extra).is_err());
    }

    #[test]
    fn out_of_order_entries_are_refused() {
        let mut b = sample();
        b.entries.swap(1, 2);
        assert!(Block::decode_payload(&b.encode_payload(), 16, 16).is_err());
        assert!(Block::decode_payload(&sample().encode_payload()[..9], 16, 16).is_err());
    }
}
