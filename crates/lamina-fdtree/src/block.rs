//! The on-disk block of a level (byte layout in `docs/format/fdtree-block.md`).
//!
//! A block is `block_bytes` long: a 16-byte header (magic, masked CRC32C, entry count,
//! payload length) followed by the encoded entries, zero-padded. The CRC covers everything
//! from the entry count to the end of the payload, so a torn or flipped block is reported as
//! corruption with its file and offset.
//!
//! This module is the crate's own block format; it stays behind this small boundary so it
//! can be replaced by `lamina-storage`'s block module once that lands.

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{DecodeError, Reader};

use crate::entry::Entry;

/// Bytes of the block header.
pub const BLOCK_HEADER_BYTES: usize = 16;
/// Magic number at the start of every block ("FDB1").
pub const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"FDB1");

/// The decoded content of one block: its entries in level order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Block {
    /// Entries, sorted by (key, kind).
    pub entries: Vec<Entry>,
}

impl Block {
    /// Payload bytes the entries take.
    pub fn payload_len(&self) -> usize {
        self.entries.iter().map(Entry::encoded_len).sum()
    }

    /// Encodes into exactly `block_bytes` bytes. The caller guarantees the entries fit.
    pub fn encode(&self, block_bytes: usize) -> Vec<u8> {
        let payload_len = self.payload_len();
        assert!(BLOCK_HEADER_BYTES + payload_len <= block_bytes, "block overflow");
        let mut out = Vec::with_capacity(block_bytes);
        out.extend_from_slice(&BLOCK_MAGIC.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        out.extend_from_slice(&(payload_len as u32).to_le_bytes());
        for e in &self.entries {
            e.encode_to(&mut out);
        }
        let crc = masked_crc32c(&out[8..]);
        out[4..8].copy_from_slice(&crc.to_le_bytes());
        out.resize(block_bytes, 0);
        out
    }

    /// Decodes a block; checks magic, checksum, entry encodings and their order.
    pub fn decode(
        bytes: &[u8],
        key_bytes_max: usize,
        value_bytes_max: usize,
    ) -> Result<Block, DecodeError> {
        let mut r = Reader::new(bytes);
        if r.u32()? != BLOCK_MAGIC {
            return Err(DecodeError::new(0, "bad block magic"));
        }
        let crc = r.u32()?;
        let count = r.u32()? as usize;
        let payload_len = r.u32()? as usize;
        if BLOCK_HEADER_BYTES + payload_len > bytes.len() {
            return Err(DecodeError::new(12, format!("payload length {payload_len} too large")));
        }
        if masked_crc32c(&bytes[8..BLOCK_HEADER_BYTES + payload_len]) != crc {
            return Err(DecodeError::new(4, "block checksum mismatch"));
        }
        let mut payload = Reader::new(&bytes[BLOCK_HEADER_BYTES..BLOCK_HEADER_BYTES + payload_len]);
        let mut entries: Vec<Entry> = Vec::with_capacity(count.min(payload_len));
        for _ in 0..count {
            let at = BLOCK_HEADER_BYTES + payload.position();
            let e = Entry::decode_from(&mut payload, key_bytes_max, value_bytes_max)
                .map_err(|err| DecodeError::new(BLOCK_HEADER_BYTES + err.offset, err.reason))?;
            if let Some(prev) = entries.last()
                && prev.order(&e).is_ge()
            {
                return Err(DecodeError::new(at, "entries out of order"));
            }
            entries.push(e);
        }
        payload
            .finish()
            .map_err(|err| DecodeError::new(BLOCK_HEADER_BYTES + err.offset, err.reason))?;
        Ok(Block { entries })
    }

    /// Index of the fence with the largest key `<= key` (Algorithm 2, line 10).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::BlockPtr;

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
    fn roundtrip() {
        let b = sample();
        let bytes = b.encode(256);
        assert_eq!(bytes.len(), 256);
        assert_eq!(Block::decode(&bytes, 16, 16).unwrap(), b);
        assert_eq!(b.data_for(b"b").len(), 2);
        assert!(b.data_for(b"c").is_empty());
        assert_eq!(b.fence_at_or_before(b"cc").unwrap().key(), b"c");
        assert_eq!(b.fence_at_or_before(b"a").unwrap().key(), b"");
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        let bytes = sample().encode(128);
        let used = BLOCK_HEADER_BYTES + sample().payload_len();
        for i in 0..used * 8 {
            let mut bad = bytes.clone();
            bad[i / 8] ^= 1 << (i % 8);
            assert!(Block::decode(&bad, 16, 16).is_err(), "flip of bit {i} undetected");
        }
        assert!(Block::decode(&bytes[..10], 16, 16).is_err());
    }

    #[test]
    fn out_of_order_entries_are_refused() {
        let mut b = sample();
        b.entries.swap(1, 2);
        assert!(Block::decode(&b.encode(256), 16, 16).is_err());
    }
}
