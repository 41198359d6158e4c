//! The snapshot file of the `mem` engine.
//!
//! Layout (all integers little-endian; see `docs/format/mem-snapshot.md`):
//!
//! ```text
//! offset  size  field
//! 0       8     magic "LAMMEMS\x01"
//! 8       4     format version (1)
//! 12      8     entry count n
//! 20      ...   n entries: varint key_len, key, varint value_len, value (ascending keys)
//! end-4   4     masked CRC32C of every preceding byte
//! ```

use std::collections::BTreeMap;

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, varint_len};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

/// File name of the snapshot inside the engine's directory.
pub const SNAPSHOT_FILE_NAME: &str = "mem.snapshot";
const MAGIC: [u8; 8] = *b"LAMMEMS\x01";
const FORMAT_VERSION: u32 = 1;
const HEADER_BYTES: usize = 8 + 4 + 8;
const CRC_BYTES: usize = 4;

/// The whole content of a `mem` engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Every key and its value.
    pub entries: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Encode for Snapshot {
    fn encoded_len(&self) -> usize {
        let body: usize = self
            .entries
            .iter()
            .map(|(k, v)| {
                varint_len(k.len() as u64) + k.len() + varint_len(v.len() as u64) + v.len()
            })
            .sum();
        HEADER_BYTES + body + CRC_BYTES
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        for (k, v) in &self.entries {
            put_bytes(out, k);
            put_bytes(out, v);
        }
        let crc = masked_crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

impl Decode for Snapshot {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        if input.len() < HEADER_BYTES + CRC_BYTES {
            return Err(DecodeError::new(0, format!("{} bytes is too short", input.len())));
        }
        let (body, crc) = input.split_at(input.len() - CRC_BYTES);
        let mut reader = Reader::new(body);
        if reader.array::<8>()? != MAGIC {
            return Err(DecodeError::new(0, "not a lamina mem snapshot (bad magic)"));
        }
        let version = reader.u32()?;
        if version != FORMAT_VERSION {
            return Err(DecodeError::new(8, format!("unsupported format version {version}")));
        }
        let stored_crc = u32::from_le_bytes(crc.try_into().expect("4 bytes"));
        if masked_crc32c(body) != stored_crc {
            return Err(DecodeError::new(body.len(), "checksum mismatch"));
        }
        let count = reader.u64()?;
        let mut entries = BTreeMap::new();
        let mut previous: Option<&[u8]> = None;
        for _ in 0..count {
            let at = reader.position();
            let key = reader.bytes_with_len(KEY_BYTES_MAX)?;
            let value = reader.bytes_with_len(VALUE_BYTES_MAX)?;
            if key.is_empty() || previous.is_some_and(|p| p >= key) {
                return Err(DecodeError::new(at, "keys not strictly ascending"));
            }
            previous = Some(key);
            entries.insert(key.to_vec(), value.to_vec());
        }
        reader.finish()?;
        Ok(Snapshot { entries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Snapshot {
        let mut entries = BTreeMap::new();
        entries.insert(b"a".to_vec(), Vec::new());
        entries.insert(vec![0xff; 1024], vec![7; 4096]);
        entries.insert(b"b\x00".to_vec(), b"value".to_vec());
        Snapshot { entries }
    }

    #[test]
    fn roundtrip() {
        let snapshot = sample();
        let bytes = snapshot.encode();
        assert_eq!(bytes.len(), snapshot.encoded_len());
        assert_eq!(Snapshot::decode(&bytes).unwrap(), snapshot);
        let empty = Snapshot::default();
        assert_eq!(Snapshot::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn every_flipped_bit_and_truncation_is_detected() {
        let bytes = sample().encode();
        for i in (0..bytes.len()).step_by(7) {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(Snapshot::decode(&bad).is_err(), "flip at byte {i} went unnoticed");
        }
        for len in [0, 5, HEADER_BYTES, bytes.len() - 1] {
            assert!(Snapshot::decode(&bytes[..len]).is_err(), "truncation to {len}");
        }
    }

    #[test]
    fn future_version_is_refused() {
        let mut bytes = Snapshot::default().encode();
        bytes[8] = 2;
        let err = Snapshot::decode(&bytes).unwrap_err();
        assert!(err.reason.contains("version"), "{err}");
    }
}
