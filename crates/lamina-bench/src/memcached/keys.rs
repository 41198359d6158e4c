//! The keys and values of the load: record `i` of `0..count` has a fixed-width key and a
//! value (and client flags) that depend only on `i` and the seed, so any reply can be
//! checked without remembering what was sent, whichever connection wrote the record.

use lamina_core::{Error, Result};

use crate::op::splitmix64;

/// Longest key memcached accepts.
pub const KEY_BYTES_MAX: usize = 250;
/// Largest value the load sends (memcached's default item size limit is 1 MiB; the data
/// block of a reply is bounded by the same number).
pub const VALUE_BYTES_MAX: usize = super::protocol::REPLY_VALUE_BYTES_MAX;
/// Most records a load may address.
pub const KEY_COUNT_MAX: u64 = 1_000_000_000_000;

/// What a value byte is drawn from: printable, so a captured stream stays readable.
const VALUE_ALPHABET: &[u8; 64] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

/// Decimal digits of `n` (1 for 0).
fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The records of a load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpace {
    count: u64,
    key_bytes: usize,
    value_bytes: usize,
    seed: u64,
    /// `i -> (i * multiplier + offset) mod count` scatters record numbers over the keys, so
    /// the keys a connection loads in order are not in key order (a bijection: the
    /// multiplier is coprime with `count`).
    multiplier: u64,
    offset: u64,
}

impl KeySpace {
    /// `count` records with keys of `key_bytes` bytes: `k`, zeros, then the decimal number
    /// of the scattered record (at least 1 + the digits of `count - 1` bytes).
    pub fn new(count: u64, key_bytes: usize, value_bytes: usize, seed: u64) -> Result<Self> {
        if !(1..=KEY_COUNT_MAX).contains(&count) {
            return Err(Error::option("keys", format!("must be 1..={KEY_COUNT_MAX}, got {count}")));
        }
        let key_bytes_min = 1 + digits(count - 1);
        if !(key_bytes_min..=KEY_BYTES_MAX).contains(&key_bytes) {
            return Err(Error::option(
                "key-bytes",
                format!(
                    "{count} keys need {key_bytes_min}..={KEY_BYTES_MAX} bytes (memcached's limit is {KEY_BYTES_MAX}), got {key_bytes}"
                ),
            ));
        }
        if value_bytes > VALUE_BYTES_MAX {
            return Err(Error::option(
                "value-bytes",
                format!("must be at most {VALUE_BYTES_MAX}, got {value_bytes}"),
            ));
        }
        let mut state = seed;
        let mut multiplier = splitmix64(&mut state) % count;
        while gcd(multiplier, count) != 1 {
            multiplier = (multiplier + 1) % count;
        }
        let offset = splitmix64(&mut state) % count;
        Ok(KeySpace { count, key_bytes, value_bytes, seed, multiplier, offset })
    }

    /// Number of records.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Key size.
    pub fn key_bytes(&self) -> usize {
        self.key_bytes
    }

    /// Value size.
    pub fn value_bytes(&self) -> usize {
        self.value_bytes
    }

    fn scattered(&self, index: u64) -> u64 {
        debug_assert!(index < self.count);
        ((u128::from(index) * u128::from(self.multiplier) + u128::from(self.offset))
            % u128::from(self.count)) as u64
    }

    /// Replaces `out` with record `index`'s key.
    pub fn key_into(&self, index: u64, out: &mut Vec<u8>) {
        let number = self.scattered(index).to_string();
        out.clear();
        out.push(b'k');
        out.resize(self.key_bytes - number.len(), b'0');
        out.extend_from_slice(number.as_bytes());
        debug_assert_eq!(out.len(), self.key_bytes);
    }

    /// Replaces `out` with record `index`'s value.
    pub fn value_into(&self, index: u64, out: &mut Vec<u8>) {
        out.clear();
        let mut state = self.seed ^ self.scattered(index).wrapping_mul(0x2545_f491_4f6c_dd1d);
        while out.len() < self.value_bytes {
            let word = splitmix64(&mut state);
            let take = (self.value_bytes - out.len()).min(8);
            out.extend(
                word.to_le_bytes()[..take].iter().map(|b| VALUE_ALPHABET[usize::from(b & 63)]),
            );
        }
    }

    /// Record `index`'s client flags (memcached stores and returns them unchanged).
    pub fn flags(&self, index: u64) -> u32 {
        let mut state = self.seed.rotate_left(17) ^ self.scattered(index);
        splitmix64(&mut state) as u32
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn keys_are_distinct_fixed_width_and_scattered() {
        for count in [1u64, 2, 10, 97, 1000] {
            let space = KeySpace::new(count, 6, 3, 9).unwrap();
            let mut seen = HashSet::new();
            let mut key = Vec::new();
            for i in 0..count {
                space.key_into(i, &mut key);
                assert_eq!(key.len(), 6);
                assert!(key.starts_with(b"k"));
                assert!(seen.insert(key.clone()), "count {count}: duplicate {key:?}");
            }
        }
        let space = KeySpace::new(1000, 16, 100, 9).unwrap();
        let keys: Vec<Vec<u8>> = (0..10)
            .map(|i| {
                let mut k = Vec::new();
                space.key_into(i, &mut k);
                k
            })
            .collect();
        assert!(!keys.is_sorted(), "loading in record order is not loading in key order");
    }

    #[test]
    fn values_and_flags_depend_on_the_record_and_seed_only() {
        let a = KeySpace::new(100, 16, 100, 1).unwrap();
        let b = KeySpace::new(100, 16, 100, 2).unwrap();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        a.value_into(5, &mut x);
        a.value_into(5, &mut y);
        assert_eq!((x.len(), &x), (100, &y));
        assert!(x.iter().all(u8::is_ascii_graphic));
        a.value_into(6, &mut y);
        assert_ne!(x, y);
        b.value_into(5, &mut y);
        assert_ne!(x, y);
        assert_eq!(a.flags(5), a.flags(5));
        assert_ne!(a.flags(5), a.flags(6));
        KeySpace::new(1, 2, 0, 0).unwrap().value_into(0, &mut y);
        assert!(y.is_empty());
    }

    #[test]
    fn limits_are_refused_with_the_option_name() {
        let err = |c, k, v| KeySpace::new(c, k, v, 0).unwrap_err().to_string();
        assert!(err(0, 16, 1).contains("keys"));
        assert!(err(1000, 3, 1).contains("need 4..=250"), "{}", err(1000, 3, 1));
        assert!(err(10, 251, 1).contains("key-bytes"));
        assert!(err(10, 16, VALUE_BYTES_MAX + 1).contains("value-bytes"));
        assert!(KeySpace::new(1000, 4, VALUE_BYTES_MAX, 0).is_ok());
    }
}
