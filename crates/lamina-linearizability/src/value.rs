//! Values that name the write that produced them: the first 8 bytes hold its [`ValueId`]
//! and the rest (0 to [`PADDING_BYTES_MAX`] bytes, fixed by the id) follows a pattern of the
//! id, so a read maps back to exactly one write and damaged or mixed bytes are detected.

use crate::model::ValueId;

/// Most padding bytes after the id: values up to 2 KiB, so a small memory budget fills
/// (flushes and merges run) within a history of a few hundred writes.
pub const PADDING_BYTES_MAX: usize = 2040;

fn mix(id: ValueId) -> u64 {
    let mut h = id.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

/// The bytes of value `id`.
pub fn encode(id: ValueId) -> Vec<u8> {
    let h = mix(id);
    let padding = (h % (PADDING_BYTES_MAX as u64 + 1)) as usize;
    let mut out = Vec::with_capacity(8 + padding);
    out.extend_from_slice(&id.to_le_bytes());
    let mut state = h;
    for _ in 0..padding {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        out.push((state >> 56) as u8);
    }
    out
}

/// The id of the write that produced `bytes`, or what is wrong with them.
pub fn decode(bytes: &[u8]) -> Result<ValueId, String> {
    let head: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("a {}-byte value: no write produced it", bytes.len()))?;
    let id = ValueId::from_le_bytes(head);
    if encode(id) != bytes {
        return Err(format!("a {}-byte value naming write {id:#x} with other bytes", bytes.len()));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_roundtrip_and_damage_is_detected() {
        for id in [0, 1, 7, 1 << 40, u64::MAX] {
            let bytes = encode(id);
            assert!(bytes.len() >= 8 && bytes.len() <= 8 + PADDING_BYTES_MAX);
            assert_eq!(decode(&bytes), Ok(id));
            let mut damaged = bytes.clone();
            let last = damaged.len() - 1;
            damaged[last] ^= 1;
            assert!(decode(&damaged).is_err());
            assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        }
        assert!(decode(b"short").is_err());
        let lengths: std::collections::HashSet<usize> = (0..64).map(|i| encode(i).len()).collect();
        assert!(lengths.len() > 32, "padding lengths vary");
    }
}
