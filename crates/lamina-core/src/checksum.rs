//! CRC32C (Castagnoli), hardware-accelerated by the `crc32c` crate on x86-64 (SSE 4.2) and
//! aarch64. Stored checksums are *masked* as in LevelDB (rotate and add a constant) so that
//! computing the CRC of a buffer that itself embeds CRCs does not produce degenerate values.

/// CRC32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC32C of `data` continuing from `crc`.
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

const MASK_DELTA: u32 = 0xa282_ead8;

/// The masked form of a CRC, as stored on disk.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

/// The masked CRC32C of `data`, ready to store.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    mask(crc32c(data))
}

/// Appends the body `write` produces, then its masked CRC32C (u32 LE): a record sealed as a
/// whole (a manifest, a progress record, an index file).
pub fn seal(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    write(out);
    let crc = masked_crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Encoded length of a sealed body.
pub fn sealed_len(write: impl FnOnce(&mut Vec<u8>)) -> usize {
    let mut v = Vec::new();
    write(&mut v);
    v.len() + 4
}

/// The body of a sealed record, if its CRC matches; `what` names the record in errors.
pub fn unseal<'a>(input: &'a [u8], what: &str) -> Result<&'a [u8], crate::codec::DecodeError> {
    use crate::codec::DecodeError;
    if input.len() < 4 {
        return Err(DecodeError::new(0, format!("{what} shorter than its checksum")));
    }
    let (body, crc) = input.split_at(input.len() - 4);
    if masked_crc32c(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err(DecodeError::new(body.len(), format!("{what} checksum mismatch")));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        // RFC 3720 B.4: 32 bytes of zeros.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn mask_roundtrips_and_differs() {
        for crc in [0, 1, 0xdead_beef, u32::MAX] {
            assert_eq!(unmask(mask(crc)), crc);
            assert_ne!(mask(crc), crc);
        }
    }

    #[test]
    fn append_matches_whole() {
        let whole = crc32c(b"hello world");
        assert_eq!(crc32c_append(crc32c(b"hello "), b"world"), whole);
    }
}
