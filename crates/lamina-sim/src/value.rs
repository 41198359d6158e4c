//! Keys and self-checking values: a value names its key and the write that made it, so a
//! value that was never written for that key (garbage, a torn record read as valid, another
//! key's value) is recognized even where the model allows several outcomes.

/// Bytes of a value's header: the write's number and a check of (key, number, length).
pub const VALUE_HEADER_BYTES: usize = 12;

/// The `i`-th key of the key space: `k` and four digits, padded so keys vary in length.
pub fn key(i: u64) -> Vec<u8> {
    let mut k = format!("k{i:04}").into_bytes();
    k.extend(std::iter::repeat_n(b'.', (i % 5) as usize));
    k
}

fn mix(key: &[u8], write_no: u64, len: usize) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64 ^ write_no.rotate_left(17) ^ (len as u64).rotate_left(41);
    for &b in key {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ (h >> 29)
}

/// The value of write number `write_no` to `key`, `len` bytes (at least the header).
pub fn value(key: &[u8], write_no: u64, len: usize) -> Vec<u8> {
    assert!(len >= VALUE_HEADER_BYTES, "a value holds its header");
    let h = mix(key, write_no, len);
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&write_no.to_le_bytes());
    out.extend_from_slice(&(h as u32).to_le_bytes());
    out.extend((0..len - VALUE_HEADER_BYTES).map(|i| (h >> ((i % 7) * 8)) as u8 ^ i as u8));
    out
}

/// The write number of `bytes` if it is a value some write made for `key`.
pub fn write_no_of(key: &[u8], bytes: &[u8]) -> Option<u64> {
    if bytes.len() < VALUE_HEADER_BYTES {
        return None;
    }
    let write_no = u64::from_le_bytes(bytes[..8].try_into().ok()?);
    (value(key, write_no, bytes.len()) == bytes).then_some(write_no)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_check_themselves() {
        let v = value(b"k1", 7, 40);
        assert_eq!(write_no_of(b"k1", &v), Some(7));
        assert_eq!(write_no_of(b"k2", &v), None, "another key's value");
        let mut flipped = v.clone();
        flipped[30] ^= 4;
        assert_eq!(write_no_of(b"k1", &flipped), None, "a flipped bit");
        assert_eq!(write_no_of(b"k1", &v[..39]), None, "a cut value");
    }
}
