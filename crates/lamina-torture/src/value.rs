//! Keys and values with a checkable pattern: a value names its version in its first 8 bytes
//! and the rest follows from (key, version), so any reader can tell a value that some write
//! produced from damaged or mixed bytes, without the ledger.

/// Keys each writer thread owns (its keys are written by no other thread).
pub const KEYS_PER_THREAD: u64 = 2_000;
/// Largest value written (lamina's limit).
pub const VALUE_BYTES_MAX: usize = 4096;

/// The key `index` of writer `thread`.
pub fn key(thread: u64, index: u64) -> Vec<u8> {
    assert!(index < KEYS_PER_THREAD);
    format!("t{thread:02}-k{index:05}").into_bytes()
}

/// The writer thread that owns `key`, if it is a torture key.
pub fn owner(key: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(key).ok()?;
    text.strip_prefix('t')?.get(..2)?.parse().ok()
}

fn mix(key: &[u8], version: u64) -> u64 {
    let mut h = u64::from(crc32c::crc32c(key)) ^ version.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

/// The value version `version` of `key` writes: empty for about 1 version in 64, else 8 to
/// 4096 bytes starting with the version.
pub fn value(key: &[u8], version: u64) -> Vec<u8> {
    let h = mix(key, version);
    if h.is_multiple_of(64) {
        return Vec::new();
    }
    let len = 8 + (h >> 8) as usize % (VALUE_BYTES_MAX - 8 + 1);
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&version.to_le_bytes());
    let mut state = h;
    while out.len() < len {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        out.push((state >> 56) as u8);
    }
    out
}

/// Whether `bytes` is a value some write of `key` produced (an empty value always passes:
/// it carries no version).
pub fn is_plausible(key: &[u8], bytes: &[u8]) -> bool {
    if bytes.is_empty() {
        return true;
    }
    if bytes.len() < 8 {
        return false;
    }
    let version = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    value(key, version) == bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_check_themselves_and_span_the_sizes() {
        let k = key(3, 17);
        assert_eq!(owner(&k), Some(3));
        let (mut empty, mut longest) = (0, 0);
        for version in 0..5_000 {
            let v = value(&k, version);
            assert!(v.len() <= VALUE_BYTES_MAX);
            assert!(is_plausible(&k, &v));
            empty += usize::from(v.is_empty());
            longest = longest.max(v.len());
            if v.len() > 8 {
                let mut bad = v.clone();
                bad[v.len() - 1] ^= 1;
                assert!(!is_plausible(&k, &bad));
                assert!(!is_plausible(&key(3, 18), &v));
            }
        }
        assert!(empty > 20 && longest > 4000, "{empty} {longest}");
    }
}
