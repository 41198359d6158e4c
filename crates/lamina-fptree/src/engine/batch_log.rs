//! The write-batch redo log: a batch is written whole into one allocated block named by the
//! root pointer `BATCH_LOG_PPTR`, committed by one p-atomic word, applied to the tree, then
//! freed. Recovery redoes a committed batch (puts and deletes are idempotent) and frees an
//! uncommitted one (nothing of it was applied). Not in the paper: FPTree has no multi-key
//! atomicity; lamina's `write_batch` needs it.
//!
//! Layout (`docs/format/fptree.md`):
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 8 | commit word: 0 while being written, [`BATCH_COMMITTED`] once complete |
//! | 8 | 4 | masked CRC32C of bytes 12..end |
//! | 12 | 4 | operation count |
//! | 16 | 8 | bytes of operations after the header |
//! | 24 | 8 | reserved, 0 |
//! | 32 | .. | operations: kind (u8: 1 put, 2 delete), key length (u16), value length (u32, 0 for a delete), key, value |

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{DecodeError, Reader};
use lamina_core::limits::{BATCH_OPS_MAX, check_key, check_value};
use lamina_core::{BatchOp, WriteBatch};

/// The commit word of a complete batch log (`"FPBATCH1"`).
pub const BATCH_COMMITTED: u64 = u64::from_le_bytes(*b"FPBATCH1");
/// Bytes before the operations.
pub const BATCH_HEADER_BYTES: usize = 32;

const PUT: u8 = 1;
const DELETE: u8 = 2;

/// Encodes `batch` (a validated, non-empty batch) with a zero commit word.
pub fn encode_batch(batch: &WriteBatch) -> Vec<u8> {
    let mut out = vec![0u8; BATCH_HEADER_BYTES];
    for op in batch.ops() {
        let (kind, key, value): (u8, &[u8], &[u8]) = match op {
            BatchOp::Put { key, value } => (PUT, key, value),
            BatchOp::Delete { key } => (DELETE, key, &[]),
        };
        out.push(kind);
        out.extend_from_slice(&(key.len() as u16).to_le_bytes());
        out.extend_from_slice(&(value.len() as u32).to_le_bytes());
        out.extend_from_slice(key);
        out.extend_from_slice(value);
    }
    let payload = (out.len() - BATCH_HEADER_BYTES) as u64;
    out[12..16].copy_from_slice(&(batch.len() as u32).to_le_bytes());
    out[16..24].copy_from_slice(&payload.to_le_bytes());
    let crc = masked_crc32c(&out[12..]);
    out[8..12].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Bytes of the encoded batch whose header is `header`, if the header is plausible.
pub fn encoded_len(header: &[u8; BATCH_HEADER_BYTES]) -> Option<usize> {
    let payload = u64::from_le_bytes(header[16..24].try_into().expect("8 bytes"));
    usize::try_from(payload).ok()?.checked_add(BATCH_HEADER_BYTES)
}

/// Decodes a committed batch log (the commit word is not checked here).
pub fn decode_batch(input: &[u8]) -> Result<WriteBatch, DecodeError> {
    let mut r = Reader::new(input);
    r.u64()?;
    let stored = r.u32()?;
    let count = r.u32()? as usize;
    let payload = r.u64()?;
    if r.u64()? != 0 {
        return Err(DecodeError::new(24, "reserved bytes are not zero"));
    }
    if payload != (input.len() - BATCH_HEADER_BYTES) as u64 {
        return Err(DecodeError::new(16, "payload length disagrees with the log's size"));
    }
    if stored != masked_crc32c(&input[12..]) {
        return Err(DecodeError::new(8, "batch log checksum mismatch"));
    }
    if count == 0 || count > BATCH_OPS_MAX {
        return Err(DecodeError::new(12, format!("batch of {count} operations")));
    }
    let mut batch = WriteBatch::new();
    for _ in 0..count {
        let at = r.position();
        let kind = r.u8()?;
        let key_len = usize::from(r.u16()?);
        let value_len = r.u32()? as usize;
        let key = r.bytes(key_len)?;
        let value = r.bytes(value_len)?;
        let bad = |why: &str| DecodeError::new(at, why.to_string());
        check_key(key).map_err(|_| bad("bad key length"))?;
        check_value(value).map_err(|_| bad("bad value length"))?;
        match kind {
            PUT => batch.put(key, value),
            DELETE if value_len == 0 => batch.delete(key),
            _ => return Err(bad("bad operation")),
        };
    }
    r.finish()?;
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(b"a".to_vec(), b"1".to_vec()).delete(b"b".to_vec()).put(vec![9u8; 1024], vec![]);
        b
    }

    #[test]
    fn batch_logs_roundtrip() {
        let bytes = encode_batch(&batch());
        let header: &[u8; BATCH_HEADER_BYTES] = bytes[..BATCH_HEADER_BYTES].try_into().unwrap();
        assert_eq!(encoded_len(header), Some(bytes.len()));
        assert_eq!(decode_batch(&bytes).unwrap(), batch());
    }

    #[test]
    fn any_damaged_byte_after_the_commit_word_is_detected() {
        let bytes = encode_batch(&batch());
        for i in 8..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x08;
            assert!(decode_batch(&damaged).is_err(), "flip at byte {i} went unnoticed");
        }
    }
}
