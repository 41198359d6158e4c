//! The Bloom filter of an fdtree level, run or memtable (issue 22: "a Bloom filter per
//! level") and of an nbtree d-tree (NB-tree section 5.2), checked before the structure's data
//! is read, so a lookup of a key it does not hold costs it no I/O with high probability.
//! (Moved here from `lamina-fdtree::format::bloom`, which re-exports it, so both engines share
//! one filter and one encoding.)
//!
//! Cache-line blocked (Putze, Sanders, Singler: "Cache-, hash- and space-efficient Bloom
//! filters"): a key's bits all lie in one 512-bit bucket chosen by its hash, so a check
//! touches one cache line. Bits are atomic words: a merge adds the keys of a level while
//! FD+FC lookups already read it (section 4.3); a key is added before the wavefront passes it,
//! and the wavefront moves under the `L_0` lock that lookups take, so a lookup never misses a
//! key it may need. Bits are only ever set.
//!
//! Sized when created from an upper bound on the keys it will hold (fewer keys only lower
//! its false-positive rate); `bits_per_key = 0` makes a filter that answers "maybe" always.
//!
//! Encoding (the container seals it: fdtree's index file with a trailing masked CRC32C,
//! `docs/format/fdtree-index.md`; nbtree's d-tree with its page checksums,
//! `docs/format/nbtree-dtree.md`): magic "FDBL" (u32 LE), version (u8), probes `k` (u8),
//! buckets (u32 LE), then the words (u64 LE).

use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::codec::{DecodeError, Reader};

const MAGIC: u32 = u32::from_le_bytes(*b"FDBL");
const VERSION: u8 = 1;
const WORDS_PER_BUCKET: usize = 8;
const BUCKET_BITS: u64 = 512;
/// Most bits per key accepted.
pub const BITS_PER_KEY_MAX: u32 = 64;
/// Most buckets of one filter (4 GiB of bits): a level of 2^32 / 10 * 512 keys.
pub const BUCKETS_MAX: u64 = 1 << 26;

/// The hash every filter uses (XXH3, 64 bits).
pub fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// One 512-bit bucket, aligned to a cache line so that a check touches exactly one line
/// (unaligned, 7 buckets in 8 straddle two).
#[derive(Debug)]
#[repr(C, align(64))]
struct Bucket([AtomicU64; WORDS_PER_BUCKET]);

impl Bucket {
    fn zeroed() -> Bucket {
        Bucket(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

/// A blocked Bloom filter.
#[derive(Debug)]
pub struct Bloom {
    buckets: Box<[Bucket]>,
    k: u8,
}

impl Bloom {
    /// A filter for at most about `keys` keys at `bits_per_key` (0: no filter).
    pub fn new(keys: u64, bits_per_key: u32) -> Bloom {
        if bits_per_key == 0 {
            return Bloom { buckets: Box::new([]), k: 0 };
        }
        let bits_per_key = bits_per_key.min(BITS_PER_KEY_MAX);
        let bits = keys.max(1).saturating_mul(u64::from(bits_per_key));
        let buckets = bits.div_ceil(BUCKET_BITS).clamp(1, BUCKETS_MAX);
        // k = bits_per_key * ln 2, rounded, within 1..=16 (blocking raises the best k a
        // little; 7 for the default 10 bits).
        let k = ((f64::from(bits_per_key) * 0.69).round() as u8).clamp(1, 16);
        let buckets = (0..buckets).map(|_| Bucket::zeroed()).collect();
        Bloom { buckets, k }
    }

    /// Whether this filter answers "maybe" to everything (created with 0 bits per key).
    pub fn is_disabled(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The bucket of a hash (`None`: the filter is disabled).
    fn bucket(&self, hash: u64) -> Option<&Bucket> {
        let buckets = self.buckets.len() as u64;
        // Lemire's fast range reduction on the high half.
        self.buckets.get((((hash >> 32) * buckets) >> 32) as usize)
    }

    /// Bit positions in the bucket: double hashing on the low half.
    fn bits(&self, hash: u64) -> impl Iterator<Item = (usize, u64)> {
        let h1 = hash as u32;
        let h2 = (hash.rotate_left(21) as u32) | 1;
        (0..u32::from(self.k)).map(move |i| {
            let bit = u64::from(h1.wrapping_add(i.wrapping_mul(h2))) % BUCKET_BITS;
            ((bit / 64) as usize, 1u64 << (bit % 64))
        })
    }

    /// Adds a key by its [`key_hash`]. One writer at a time (the merge writing the level,
    /// or a memtable's writer under its lock): a word is read and written back, not
    /// updated atomically, which costs a plain store instead of a locked instruction.
    pub fn insert_hash(&self, hash: u64) {
        let Some(bucket) = self.bucket(hash) else { return };
        for (word, mask) in self.bits(hash) {
            // Relaxed: readers synchronize through the lock that publishes the key (module
            // documentation); bits only go from 0 to 1, and there is one writer.
            let w = &bucket.0[word];
            w.store(w.load(Ordering::Relaxed) | mask, Ordering::Relaxed);
        }
    }

    /// Adds a key (one writer at a time, see [`Bloom::insert_hash`]).
    pub fn insert(&self, key: &[u8]) {
        self.insert_hash(key_hash(key));
    }

    /// Whether the key may have been added (false: certainly not), by its [`key_hash`].
    pub fn may_contain_hash(&self, hash: u64) -> bool {
        let Some(bucket) = self.bucket(hash) else { return true };
        self.bits(hash).all(|(word, mask)| bucket.0[word].load(Ordering::Relaxed) & mask != 0)
    }

    /// Starts loading the cache line [`Bloom::may_contain_hash`] will read for `hash`, so
    /// that a lookup probing many filters (fdtree's `L_0` runs and levels) waits for their
    /// cache misses together instead of one after the other. Only a hint: no effect on any
    /// answer.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if let Some(bucket) = self.bucket(hash) {
            crate::prefetch::prefetch_read(std::ptr::from_ref(bucket).cast());
        }
    }

    /// Whether the key may have been added.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(key))
    }

    /// Memory held.
    pub fn memory_bytes(&self) -> u64 {
        (self.buckets.len() * std::mem::size_of::<Bucket>()) as u64
    }

    /// Encoded length.
    pub fn encoded_len(&self) -> usize {
        4 + 1 + 1 + 4 + self.buckets.len() * WORDS_PER_BUCKET * 8
    }

    /// Appends the encoding (module documentation; the caller seals it).
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.push(VERSION);
        out.push(self.k);
        let buckets = self.buckets.len() as u32;
        out.extend_from_slice(&buckets.to_le_bytes());
        for w in self.buckets.iter().flat_map(|b| &b.0) {
            out.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
    }

    /// Reads what [`Bloom::encode_to`] wrote.
    pub fn decode_from(r: &mut Reader<'_>) -> Result<Bloom, DecodeError> {
        if r.u32()? != MAGIC {
            return Err(r.error("not a Bloom filter"));
        }
        let version = r.u8()?;
        if version != VERSION {
            return Err(r.error(format!("Bloom filter version {version}")));
        }
        let k = r.u8()?;
        let buckets = u64::from(r.u32()?);
        if buckets > BUCKETS_MAX || (buckets == 0) != (k == 0) || k > 16 {
            return Err(r.error(format!("Bloom filter with {buckets} buckets and {k} probes")));
        }
        let words = buckets as usize * WORDS_PER_BUCKET;
        if r.remaining() < words * 8 {
            return Err(r.error("Bloom filter truncated"));
        }
        let mut out = Vec::with_capacity(buckets as usize);
        for _ in 0..buckets {
            let bucket = Bucket::zeroed();
            for w in &bucket.0 {
                w.store(r.u64()?, Ordering::Relaxed);
            }
            out.push(bucket);
        }
        Ok(Bloom { buckets: out.into_boxed_slice(), k })
    }
}

/// Keys [`PipelinedInserts`] holds back: enough for the cache misses of their buckets to
/// overlap, few enough that holding them costs nothing.
const PIPELINED_INSERTS: usize = 16;

/// Inserts into a filter larger than the caches, pipelined. A merge adds millions of keys to a
/// level's filter of megabytes in random bucket order, and each insert waited for its
/// bucket's cache miss (a sixth of an fdtree merge thread's time at 10M keys, `perf
/// annotate`). Here each key's bucket is prefetched when the key arrives and its bits are
/// set [`PIPELINED_INSERTS`] keys later, so the misses overlap.
///
/// A held-back key is not in the filter yet: the owner calls [`PipelinedInserts::drain`]
/// before it makes any of its keys visible to readers (fdtree: before a level's blocks are
/// indexed) or encodes the filter. (nbtree's d-tree filters stay in the caches: pipelining
/// their inserts measured no difference, so nbtree inserts directly.)
#[derive(Debug, Default)]
pub struct PipelinedInserts {
    /// Held-back hashes, oldest at `head`.
    hashes: [u64; PIPELINED_INSERTS],
    head: usize,
    len: usize,
}

impl PipelinedInserts {
    /// Adds a key by its [`key_hash`] to `bloom`, perhaps later (one writer, as for
    /// [`Bloom::insert_hash`]; the same `bloom` on every call until drained).
    #[inline]
    pub fn insert_hash(&mut self, bloom: &Bloom, hash: u64) {
        bloom.prefetch(hash);
        if self.len == PIPELINED_INSERTS {
            bloom.insert_hash(self.hashes[self.head]);
            self.hashes[self.head] = hash;
            self.head = (self.head + 1) % PIPELINED_INSERTS;
        } else {
            self.hashes[(self.head + self.len) % PIPELINED_INSERTS] = hash;
            self.len += 1;
        }
    }

    /// Sets the bits of every held-back key: afterwards `bloom` holds every key added.
    pub fn drain(&mut self, bloom: &Bloom) {
        for i in 0..self.len {
            bloom.insert_hash(self.hashes[(self.head + i) % PIPELINED_INSERTS]);
        }
        self.head = 0;
        self.len = 0;
    }

    /// Whether no key is held back.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_a_low_false_positive_rate() {
        let n = 100_000u64;
        let f = Bloom::new(n, 10);
        for i in 0..n {
            f.insert(&i.to_be_bytes());
        }
        for i in 0..n {
            assert!(f.may_contain(&i.to_be_bytes()));
        }
        let fp = (n..2 * n).filter(|i| f.may_contain(&i.to_be_bytes())).count();
        let rate = fp as f64 / n as f64;
        assert!(rate < 0.02, "false-positive rate {rate}");
        // Fewer keys than sized for: fewer false positives.
        let sparse = Bloom::new(n, 10);
        for i in 0..n / 10 {
            sparse.insert(&i.to_be_bytes());
        }
        let fp = (n..2 * n).filter(|i| sparse.may_contain(&i.to_be_bytes())).count();
        assert!((fp as f64 / n as f64) < 0.001);
    }

    #[test]
    fn disabled_filter_says_maybe() {
        let f = Bloom::new(1000, 0);
        assert!(f.is_disabled() && f.may_contain(b"anything"));
        f.insert(b"x");
        assert_eq!(f.memory_bytes(), 0);
    }

    #[test]
    fn roundtrip_and_damage() {
        let f = Bloom::new(1000, 10);
        for i in 0..1000u32 {
            f.insert(&i.to_le_bytes());
        }
        let mut bytes = Vec::new();
        f.encode_to(&mut bytes);
        assert_eq!(bytes.len(), f.encoded_len());
        let back = Bloom::decode_from(&mut Reader::new(&bytes)).unwrap();
        for i in 0..1000u32 {
            assert!(back.may_contain(&i.to_le_bytes()));
        }
        for len in 0..bytes.len() {
            assert!(Bloom::decode_from(&mut Reader::new(&bytes[..len])).is_err(), "{len}");
        }
        let mut bad = bytes.clone();
        bad[0] ^= 1;
        assert!(Bloom::decode_from(&mut Reader::new(&bad)).is_err());
        let mut bad = bytes;
        bad[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Bloom::decode_from(&mut Reader::new(&bad)).is_err());
        // Bit flips inside the words are caught by the seal around the filter (its container).
    }

    fn encoded(f: &Bloom) -> Vec<u8> {
        let mut bytes = Vec::new();
        f.encode_to(&mut bytes);
        bytes
    }

    #[test]
    fn pipelined_inserts_build_the_same_filter_once_drained() {
        for n in [0u64, 1, 15, 16, 17, 1000] {
            let direct = Bloom::new(n, 10);
            let pipelined = Bloom::new(n, 10);
            let mut pipe = PipelinedInserts::default();
            for i in 0..n {
                direct.insert(&i.to_be_bytes());
                pipe.insert_hash(&pipelined, key_hash(&i.to_be_bytes()));
            }
            // Until drained, the newest keys (at most PIPELINED_INSERTS) are held back and
            // every older one is in.
            let held = n.min(PIPELINED_INSERTS as u64);
            assert_eq!(pipe.is_empty(), held == 0);
            for i in 0..n - held {
                assert!(pipelined.may_contain(&i.to_be_bytes()), "{n}: {i}");
            }
            pipe.drain(&pipelined);
            assert!(pipe.is_empty());
            assert_eq!(encoded(&direct), encoded(&pipelined), "{n}");
            // Draining again adds nothing; the pipeline starts over.
            pipe.drain(&pipelined);
            pipe.insert_hash(&pipelined, key_hash(b"later"));
            pipe.drain(&pipelined);
            assert!(pipelined.may_contain(b"later"));
        }
    }

    #[test]
    fn pipelined_inserts_into_a_disabled_filter_do_nothing() {
        let f = Bloom::new(100, 0);
        let mut pipe = PipelinedInserts::default();
        for i in 0..40u32 {
            pipe.insert_hash(&f, key_hash(&i.to_le_bytes()));
        }
        pipe.drain(&f);
        assert!(f.is_disabled() && f.may_contain(b"anything"));
    }
}
