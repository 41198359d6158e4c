//! The superblock payload of a persistent LA-tree ([`CommitRecord`], layout in
//! `docs/format/latree-superblock.md`): the last log record the checkpoint holds and the
//! encoded [`crate::tree::TreeCheckpoint`], inline when it fits the superblock's block,
//! otherwise in a side file the record names with its length and CRC32C.

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, put_varint, varint_len};

/// Version of the payload's encoding.
pub const COMMIT_RECORD_FORMAT_VERSION: u8 = 1;
/// Largest side file a record may name (1 GiB: a node table of tens of millions of nodes).
pub const CHECKPOINT_FILE_BYTES_MAX: u64 = 1 << 30;

const KIND_INLINE: u8 = 0;
const KIND_FILE: u8 = 1;

/// Where the encoded tree checkpoint is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointBytes {
    /// In the payload itself.
    Inline(Vec<u8>),
    /// In side file `checkpoint_file_name(number)`, of `len` bytes with CRC32C `crc`.
    File {
        /// The file's number.
        number: u64,
        /// Its length.
        len: u64,
        /// CRC32C of its bytes.
        crc: u32,
    },
}

/// One commit of the superblock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRecord {
    /// Whether the tree is buffered (`latree`) or not (`latree-btree`).
    pub buffered: bool,
    /// Every log record up to this sequence number is in the checkpoint.
    pub applied_seq: u64,
    /// The encoded [`crate::tree::TreeCheckpoint`].
    pub checkpoint: CheckpointBytes,
}

/// The name of checkpoint side file `number`.
pub fn checkpoint_file_name(number: u64) -> String {
    format!("latree.checkpoint-{number:016x}")
}

/// The number of a checkpoint side file's name, if it is one.
pub fn parse_checkpoint_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("latree.checkpoint-")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

impl CommitRecord {
    /// Bytes of the record around an inline checkpoint of `len` bytes.
    pub fn inline_overhead_bytes(applied_seq: u64, len: usize) -> usize {
        3 + varint_len(applied_seq) + varint_len(len as u64)
    }
}

impl Encode for CommitRecord {
    fn encoded_len(&self) -> usize {
        let body = match &self.checkpoint {
            CheckpointBytes::Inline(bytes) => varint_len(bytes.len() as u64) + bytes.len(),
            CheckpointBytes::File { number, len, .. } => varint_len(*number) + varint_len(*len) + 4,
        };
        3 + varint_len(self.applied_seq) + body
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(COMMIT_RECORD_FORMAT_VERSION);
        out.push(u8::from(self.buffered));
        match &self.checkpoint {
            CheckpointBytes::Inline(bytes) => {
                out.push(KIND_INLINE);
                put_varint(out, self.applied_seq);
                put_bytes(out, bytes);
            }
            CheckpointBytes::File { number, len, crc } => {
                out.push(KIND_FILE);
                put_varint(out, self.applied_seq);
                put_varint(out, *number);
                put_varint(out, *len);
                out.extend_from_slice(&crc.to_le_bytes());
            }
        }
    }
}

impl Decode for CommitRecord {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let version = r.u8()?;
        if version != COMMIT_RECORD_FORMAT_VERSION {
            return Err(DecodeError::new(0, format!("latree commit record version {version}")));
        }
        let buffered = match r.u8()? {
            0 => false,
            1 => true,
            other => return Err(DecodeError::new(1, format!("buffered flag {other}"))),
        };
        let kind = r.u8()?;
        let applied_seq = r.varint()?;
        let checkpoint = match kind {
            KIND_INLINE => CheckpointBytes::Inline(r.bytes_with_len(input.len())?.to_vec()),
            KIND_FILE => {
                let number = r.varint()?;
                let at = r.position();
                let len = r.varint()?;
                if len > CHECKPOINT_FILE_BYTES_MAX {
                    return Err(DecodeError::new(at, format!("checkpoint file of {len} bytes")));
                }
                let crc = r.u32()?;
                CheckpointBytes::File { number, len, crc }
            }
            other => return Err(DecodeError::new(2, format!("checkpoint kind {other}"))),
        };
        r.finish()?;
        Ok(CommitRecord { buffered, applied_seq, checkpoint })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Vec<CommitRecord> {
        vec![
            CommitRecord {
                buffered: true,
                applied_seq: 0,
                checkpoint: CheckpointBytes::Inline(Vec::new()),
            },
            CommitRecord {
                buffered: false,
                applied_seq: 1 << 40,
                checkpoint: CheckpointBytes::Inline(vec![7; 300]),
            },
            CommitRecord {
                buffered: true,
                applied_seq: 12,
                checkpoint: CheckpointBytes::File { number: 3, len: 1 << 20, crc: 0xdead_beef },
            },
        ]
    }

    #[test]
    fn roundtrips() {
        for record in records() {
            let bytes = record.encode();
            assert_eq!(bytes.len(), record.encoded_len());
            assert_eq!(CommitRecord::decode(&bytes).unwrap(), record);
            if let CheckpointBytes::Inline(inline) = &record.checkpoint {
                let overhead =
                    CommitRecord::inline_overhead_bytes(record.applied_seq, inline.len());
                assert_eq!(bytes.len(), overhead + inline.len());
            }
        }
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        for record in records() {
            let bytes = record.encode();
            for cut in 0..bytes.len() {
                assert!(CommitRecord::decode(&bytes[..cut]).is_err(), "cut at {cut}");
            }
            let mut longer = bytes.clone();
            longer.push(0);
            assert!(CommitRecord::decode(&longer).is_err());
            for i in 0..bytes.len().min(8) {
                let mut flipped = bytes.clone();
                flipped[i] ^= 0x80;
                // Any flip either fails or decodes to a different record.
                if let Ok(other) = CommitRecord::decode(&flipped) {
                    assert_ne!(other, record, "flip at {i}");
                }
            }
        }
    }

    #[test]
    fn side_file_names_roundtrip() {
        for n in [0, 1, u64::MAX] {
            assert_eq!(parse_checkpoint_file_name(&checkpoint_file_name(n)), Some(n));
        }
        assert_eq!(parse_checkpoint_file_name("latree.checkpoint-12"), None);
        assert_eq!(parse_checkpoint_file_name("latree.nodes"), None);
    }
}
