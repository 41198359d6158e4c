//! Records sealed by a trailing masked CRC32C of everything before it (the manifest, the
//! FD+FC merge progress record): one place that writes and checks the seal.

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::DecodeError;

/// Appends the body `write` produces, then its masked CRC32C (u32 LE).
pub(crate) fn seal(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    write(out);
    let crc = masked_crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Encoded length of a sealed body.
pub(crate) fn sealed_len(write: impl FnOnce(&mut Vec<u8>)) -> usize {
    let mut v = Vec::new();
    write(&mut v);
    v.len() + 4
}

/// The body of a sealed record, if its CRC matches; `what` names the record in errors.
pub(crate) fn unseal<'a>(input: &'a [u8], what: &str) -> Result<&'a [u8], DecodeError> {
    if input.len() < 4 {
        return Err(DecodeError::new(0, format!("{what} shorter than its checksum")));
    }
    let (body, crc) = input.split_at(input.len() - 4);
    if masked_crc32c(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
        return Err(DecodeError::new(body.len(), format!("{what} checksum mismatch")));
    }
    Ok(body)
}
