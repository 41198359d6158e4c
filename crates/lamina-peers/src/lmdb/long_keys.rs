//! Keys longer than LMDB's key limit.
//!
//! LMDB 0.9 refuses keys over `mdb_env_get_maxkeysize()` bytes (511 in Debian's build), but
//! lamina keys go up to 1024 bytes. Keys of at most `maxkey - 1` bytes are stored as
//! themselves. A longer key `L` is stored in a *bucket*: the LMDB record whose key is
//! `L[..maxkey - 1] ++ [0x00]` (exactly `maxkey` bytes, a length no inline key has) and whose
//! value is a [`Bucket`] holding, sorted, the suffix `L[maxkey - 1..]` and value of every long
//! key with that prefix. LMDB's byte order on record keys then equals lamina's order on user
//! keys with each bucket expanded in place, so scans stay ordered (`docs/peers.md` has the
//! argument, `docs/format/lmdb-long-key-bucket.md` the byte layout).

use lamina_core::checksum::{crc32c, mask, unmask};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, put_varint, varint_len};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

/// Format version of a bucket.
const BUCKET_VERSION: u8 = 1;
/// Most long keys one bucket holds (all sharing their first `maxkey - 1` bytes).
pub const BUCKET_ENTRIES_MAX: usize = 4096;

/// The long keys sharing one prefix: `(suffix, value)` in ascending suffix order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Entries, strictly ascending by suffix; every suffix is non-empty.
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Bucket {
    /// The value stored under `suffix`.
    pub fn get(&self, suffix: &[u8]) -> Option<&[u8]> {
        let i = self.entries.binary_search_by(|(s, _)| s.as_slice().cmp(suffix)).ok()?;
        Some(&self.entries[i].1)
    }

    /// Inserts or overwrites; `false` if the bucket is full and `suffix` is new.
    pub fn put(&mut self, suffix: &[u8], value: &[u8]) -> bool {
        match self.entries.binary_search_by(|(s, _)| s.as_slice().cmp(suffix)) {
            Ok(i) => self.entries[i].1 = value.to_vec(),
            Err(_) if self.entries.len() >= BUCKET_ENTRIES_MAX => return false,
            Err(i) => self.entries.insert(i, (suffix.to_vec(), value.to_vec())),
        }
        true
    }

    /// Removes `suffix`; whether it was there.
    pub fn remove(&mut self, suffix: &[u8]) -> bool {
        match self.entries.binary_search_by(|(s, _)| s.as_slice().cmp(suffix)) {
            Ok(i) => {
                self.entries.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    fn body_len(&self) -> usize {
        1 + varint_len(self.entries.len() as u64)
            + self
                .entries
                .iter()
                .map(|(s, v)| {
                    varint_len(s.len() as u64) + s.len() + varint_len(v.len() as u64) + v.len()
                })
                .sum::<usize>()
    }
}

impl Encode for Bucket {
    fn encoded_len(&self) -> usize {
        self.body_len() + 4
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.push(BUCKET_VERSION);
        put_varint(out, self.entries.len() as u64);
        for (suffix, value) in &self.entries {
            put_bytes(out, suffix);
            put_bytes(out, value);
        }
        let crc = mask(crc32c(&out[start..]));
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

impl Decode for Bucket {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        if input.len() < 5 {
            return Err(DecodeError::new(
                0,
                format!("bucket of {} bytes is too short", input.len()),
            ));
        }
        let (body, crc) = input.split_at(input.len() - 4);
        let stored = unmask(u32::from_le_bytes(crc.try_into().expect("4 bytes")));
        if crc32c(body) != stored {
            return Err(DecodeError::new(body.len(), "bucket checksum mismatch"));
        }
        let mut reader = Reader::new(body);
        let version = reader.u8()?;
        if version != BUCKET_VERSION {
            return Err(reader.error(format!("unknown bucket version {version}")));
        }
        let count = reader.varint()?;
        if count == 0 || count > BUCKET_ENTRIES_MAX as u64 {
            return Err(
                reader.error(format!("bucket count {count} outside 1..={BUCKET_ENTRIES_MAX}"))
            );
        }
        let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let suffix = reader.bytes_with_len(KEY_BYTES_MAX)?;
            if suffix.is_empty() {
                return Err(reader.error("empty suffix in a bucket"));
            }
            if entries.last().is_some_and(|(prev, _)| prev.as_slice() >= suffix) {
                return Err(reader.error("bucket suffixes out of order"));
            }
            let value = reader.bytes_with_len(VALUE_BYTES_MAX)?;
            entries.push((suffix.to_vec(), value.to_vec()));
        }
        reader.finish()?;
        Ok(Bucket { entries })
    }
}

/// How user keys map to LMDB record keys for one environment.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyLayout {
    /// Longest key stored as itself (`maxkey - 1`).
    pub(crate) inline_max: usize,
}

/// Where a user key lives.
#[derive(Debug)]
pub(crate) enum Placement<'k> {
    /// Stored as itself.
    Inline(&'k [u8]),
    /// In the bucket with this record key, under this suffix.
    Bucketed { record: Vec<u8>, suffix: &'k [u8] },
}

impl KeyLayout {
    /// The layout for LMDB's key limit `maxkey` (from `mdb_env_get_maxkeysize`).
    pub(crate) fn new(maxkey: usize) -> Self {
        assert!(maxkey >= 2, "LMDB key limit {maxkey} too small");
        KeyLayout { inline_max: maxkey - 1 }
    }

    pub(crate) fn place(self, key: &[u8]) -> Placement<'_> {
        if key.len() <= self.inline_max {
            return Placement::Inline(key);
        }
        let mut record = key[..self.inline_max].to_vec();
        record.push(0);
        Placement::Bucketed { record, suffix: &key[self.inline_max..] }
    }

    /// Whether an LMDB record key is a bucket.
    pub(crate) fn is_bucket(self, record: &[u8]) -> bool {
        record.len() == self.inline_max + 1
    }

    /// The user key of `suffix` in the bucket `record`.
    pub(crate) fn user_key(self, record: &[u8], suffix: &[u8]) -> Vec<u8> {
        let mut key = record[..self.inline_max].to_vec();
        key.extend_from_slice(suffix);
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Bucket {
        let mut b = Bucket::default();
        assert!(b.put(b"zz", b"2"));
        assert!(b.put(b"a", b""));
        assert!(b.put(&[0xff; 500], &[7; 4096]));
        assert!(b.put(b"a", b"1"));
        b
    }

    #[test]
    fn roundtrip() {
        let b = sample();
        assert_eq!(b.entries.len(), 3);
        let bytes = b.encode();
        assert_eq!(bytes.len(), b.encoded_len());
        assert_eq!(Bucket::decode(&bytes).unwrap(), b);
        assert_eq!(b.get(b"a"), Some(&b"1"[..]));
        let mut b = b;
        assert!(b.remove(b"zz"));
        assert!(!b.remove(b"zz"));
        assert_eq!(Bucket::decode(&b.encode()).unwrap(), b);
    }

    #[test]
    fn corruption_is_detected() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(Bucket::decode(&bad).is_err(), "flip at {i} went unnoticed");
        }
        for len in 0..bytes.len() {
            assert!(Bucket::decode(&bytes[..len]).is_err(), "truncation to {len}");
        }
    }

    #[test]
    fn layout_orders_buckets_among_inline_keys() {
        let layout = KeyLayout::new(4); // inline keys up to 3 bytes
        let record = |k: &[u8]| match layout.place(k) {
            Placement::Inline(k) => k.to_vec(),
            Placement::Bucketed { record, .. } => record,
        };
        let keys: [&[u8]; 6] = [b"ab", b"abc", b"abca", b"abcz", b"abd", b"b"];
        for w in keys.windows(2) {
            assert!(record(w[0]) <= record(w[1]), "{:?} {:?}", w[0], w[1]);
        }
        assert!(layout.is_bucket(&record(b"abca")));
        assert_eq!(layout.user_key(&record(b"abca"), b"a"), b"abca");
    }
}
