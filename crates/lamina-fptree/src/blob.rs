//! Record blobs (Appendix C): every key and its value live in one separately allocated block
//! that a leaf slot names through a persistent pointer. One layout for all key sizes: keys of
//! 1 to 1024 bytes and values of up to 4096 bytes (lamina's limits) never fit a fixed-size
//! slot. (The paper's fixed-size layout, 8-byte keys and values in the slot, is the tree's
//! other record layout: `crate::record`.) A blob carries a checksum so a damaged region gives
//! `Corruption`, never a wrong record.
//!
//! Layout (little-endian), `docs/format/fptree.md`:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 4 | masked CRC32C of bytes 4..16 + key + value |
//! | 4 | 2 | key length, 0..=1024 (0: the empty key) |
//! | 6 | 2 | magic `0xB10B` |
//! | 8 | 4 | value length, 0..=4096 |
//! | 12 | 4 | reserved, 0 |
//! | 16 | key length | key |
//! | .. | value length | value |

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::DecodeError;
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

/// Bytes before the key.
pub const BLOB_HEADER_BYTES: usize = 16;
/// The blob magic.
pub const BLOB_MAGIC: u16 = 0xB10B;
/// Largest blob.
pub const BLOB_BYTES_MAX: usize = BLOB_HEADER_BYTES + KEY_BYTES_MAX + VALUE_BYTES_MAX;

/// Bytes of the blob holding `key` and `value`.
pub fn blob_len(key: &[u8], value: &[u8]) -> usize {
    BLOB_HEADER_BYTES + key.len() + value.len()
}

/// Encodes a record blob.
pub fn encode_blob(key: &[u8], value: &[u8]) -> Vec<u8> {
    assert!(key.len() <= KEY_BYTES_MAX, "key length checked by caller (the empty key is a key)");
    assert!(value.len() <= VALUE_BYTES_MAX, "value length checked by caller");
    debug_assert!(blob_len(key, value) <= BLOB_BYTES_MAX);
    let mut out = Vec::with_capacity(blob_len(key, value));
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    out.extend_from_slice(&BLOB_MAGIC.to_le_bytes());
    out.extend_from_slice(&(value.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    let crc = masked_crc32c(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    out
}

/// The decoded fixed header of a blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobHeader {
    /// Stored checksum.
    pub crc: u32,
    /// Key length.
    pub key_len: usize,
    /// Value length.
    pub value_len: usize,
}

impl BlobHeader {
    /// Decodes and checks the header of a blob in a block of `block_bytes`.
    pub fn decode(bytes: &[u8; BLOB_HEADER_BYTES], block_bytes: u64) -> Result<Self, DecodeError> {
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let key_len = usize::from(u16::from_le_bytes([bytes[4], bytes[5]]));
        let magic = u16::from_le_bytes([bytes[6], bytes[7]]);
        let value_len = word(8) as usize;
        if magic != BLOB_MAGIC {
            return Err(DecodeError::new(6, format!("bad blob magic {magic:#x}")));
        }
        if key_len > KEY_BYTES_MAX {
            return Err(DecodeError::new(4, format!("key length {key_len} out of range")));
        }
        if value_len > VALUE_BYTES_MAX {
            return Err(DecodeError::new(8, format!("value length {value_len} out of range")));
        }
        if word(12) != 0 {
            return Err(DecodeError::new(12, "reserved bytes are not zero"));
        }
        if (BLOB_HEADER_BYTES + key_len + value_len) as u64 > block_bytes {
            return Err(DecodeError::new(
                4,
                format!("record overruns its {block_bytes}-byte block"),
            ));
        }
        Ok(BlobHeader { crc: word(0), key_len, value_len })
    }
}

/// Decodes a whole blob (`bytes` = header, key and value), checking the checksum; returns the
/// key and value.
pub fn decode_blob(bytes: &[u8], block_bytes: u64) -> Result<(&[u8], &[u8]), DecodeError> {
    let header_bytes: &[u8; BLOB_HEADER_BYTES] = bytes
        .get(..BLOB_HEADER_BYTES)
        .and_then(|h| h.try_into().ok())
        .ok_or_else(|| DecodeError::new(0, "blob shorter than its header"))?;
    let header = BlobHeader::decode(header_bytes, block_bytes)?;
    let end = BLOB_HEADER_BYTES + header.key_len + header.value_len;
    if bytes.len() != end {
        return Err(DecodeError::new(
            0,
            format!("blob of {} bytes, header says {end}", bytes.len()),
        ));
    }
    if masked_crc32c(&bytes[4..]) != header.crc {
        return Err(DecodeError::new(0, "record checksum mismatch"));
    }
    let key_end = BLOB_HEADER_BYTES + header.key_len;
    Ok((&bytes[BLOB_HEADER_BYTES..key_end], &bytes[key_end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_roundtrip_at_the_limits() {
        for (key, value) in [
            (vec![1u8], vec![]),
            (vec![7u8; KEY_BYTES_MAX], vec![9u8; VALUE_BYTES_MAX]),
            (b"key".to_vec(), b"value".to_vec()),
        ] {
            let blob = encode_blob(&key, &value);
            assert_eq!(blob.len(), blob_len(&key, &value));
            let (k, v) = decode_blob(&blob, blob.len() as u64).unwrap();
            assert_eq!((k, v), (key.as_slice(), value.as_slice()));
        }
    }

    #[test]
    fn any_damaged_byte_of_a_blob_is_detected() {
        let blob = encode_blob(b"some key", b"some value");
        for i in 0..blob.len() {
            let mut damaged = blob.clone();
            damaged[i] ^= 0x01;
            assert!(decode_blob(&damaged, 4096).is_err(), "flip at byte {i} went unnoticed");
        }
    }

    #[test]
    fn a_blob_larger_than_its_block_is_refused() {
        let blob = encode_blob(b"k", &[0u8; 100]);
        assert!(decode_blob(&blob, 64).is_err());
    }
}
