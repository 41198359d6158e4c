//! `scale`'s requests: numbered keys, so a phase can name inserted keys (lookups, the
//! check after reopen) or new ones (the two-thread inserts) without the bench keeping
//! N keys in memory, which would count in every engine's resident set.
//!
//! Key `i` starts with the 8 big-endian bytes of `mix(i + salt)`, where `mix` is
//! SplitMix64's finalizer, a bijection of u64: the keys are uniformly scattered over the
//! key space (random inserts, as NB-tree section 6.1's "to focus on worst-case
//! performance") and all distinct. Longer keys are padded with further mixed bytes. Value
//! `i` is a [`Value`] whose fill is derived from the same word.

use std::ops::Range;

use lamina_core::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{Op, Value, Workload, WorkloadConfig, splitmix64};

/// The key and value of every insert number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleKeys {
    salt: u64,
    key_bytes: usize,
    value_bytes: u32,
    seed: u64,
}

/// SplitMix64's output function: a bijection of u64 (xor-shifts and odd multipliers).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl ScaleKeys {
    /// The keys of `workload`'s seed and sizes (keys of at least 8 bytes, validated by the
    /// phase definition).
    pub fn new(workload: &WorkloadConfig) -> Self {
        assert!(workload.key_bytes >= 8, "scale keys hold an 8-byte number");
        let mut state = workload.seed;
        ScaleKeys {
            salt: splitmix64(&mut state),
            key_bytes: workload.key_bytes,
            value_bytes: u32::try_from(workload.value_bytes).expect("validated value size"),
            seed: workload.seed,
        }
    }

    fn word(&self, i: u64) -> u64 {
        mix(i.wrapping_add(self.salt))
    }

    /// Key number `i`.
    pub fn key(&self, i: u64) -> Vec<u8> {
        let word = self.word(i);
        let mut key = Vec::with_capacity(self.key_bytes);
        key.extend_from_slice(&word.to_be_bytes());
        let mut state = word;
        while key.len() < self.key_bytes {
            let more = splitmix64(&mut state).to_le_bytes();
            let take = (self.key_bytes - key.len()).min(8);
            key.extend_from_slice(&more[..take]);
        }
        key
    }

    /// Value number `i`.
    pub fn value(&self, i: u64) -> Value {
        Value { len: self.value_bytes, fill: self.word(i) ^ 0x5641_4c55_4553_0000 }
    }

    /// Inserts of keys `range`, in order.
    pub fn inserts(&self, range: Range<u64>) -> Inserts {
        Inserts { keys: *self, next: range.start, end: range.end }
    }

    /// `count` lookups of keys drawn uniformly from `0..inserted`.
    pub fn lookups(&self, inserted: u64, count: u64) -> Lookups {
        assert!(inserted > 0, "lookups need inserted keys");
        Lookups {
            keys: *self,
            inserted,
            left: count,
            rng: ChaCha8Rng::seed_from_u64(self.seed ^ 0x4c4f_4f4b_5550),
        }
    }

    /// `count` key numbers spread evenly over `0..inserted` (first and last included when
    /// `count >= 2`): the sample checked before close and after reopen.
    pub fn sample(inserted: u64, count: u64) -> Vec<u64> {
        let count = count.min(inserted);
        if count <= 1 {
            return (0..count).collect();
        }
        (0..count).map(|j| j * (inserted - 1) / (count - 1)).collect()
    }
}

/// Puts of consecutive key numbers (no preload).
#[derive(Debug)]
pub struct Inserts {
    keys: ScaleKeys,
    next: u64,
    end: u64,
}

impl Workload for Inserts {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        Ok(None)
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        if self.next >= self.end {
            return Ok(None);
        }
        let i = self.next;
        self.next += 1;
        Ok(Some(Op::Put { key: self.keys.key(i), value: self.keys.value(i) }))
    }
}

/// Gets of uniformly drawn inserted keys (no preload).
#[derive(Debug)]
pub struct Lookups {
    keys: ScaleKeys,
    inserted: u64,
    left: u64,
    rng: ChaCha8Rng,
}

impl Workload for Lookups {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        Ok(None)
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let i = self.rng.random_range(0..self.inserted);
        Ok(Some(Op::Get { key: self.keys.key(i) }))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::WorkloadKind;

    fn keys(seed: u64, key_bytes: usize) -> ScaleKeys {
        let mut w = WorkloadConfig::new(WorkloadKind::Insert, seed);
        w.key_bytes = key_bytes;
        ScaleKeys::new(&w)
    }

    #[test]
    fn keys_are_distinct_sized_uniform_and_seeded() {
        let k = keys(42, 8);
        let mut seen = HashSet::new();
        let mut first_byte = [0u32; 256];
        for i in 0..25_600 {
            let key = k.key(i);
            assert_eq!(key.len(), 8);
            first_byte[key[0] as usize] += 1;
            assert!(seen.insert(key), "key {i} repeats");
        }
        assert!(first_byte.iter().all(|&c| (40..=170).contains(&c)), "{first_byte:?}");
        assert_ne!(keys(43, 8).key(0), k.key(0), "the seed changes the keys");
        assert_eq!(keys(42, 8).key(7), k.key(7));
        let long = keys(42, 20);
        assert_eq!(long.key(5).len(), 20);
        assert_eq!(long.key(5)[..8], k.key(5)[..], "the number leads");
        assert_eq!(k.value(3).len, 128);
        assert_ne!(k.value(3), k.value(4));
    }

    #[test]
    fn inserts_lookups_and_samples_cover_their_ranges() {
        let k = keys(1, 8);
        let mut inserts = k.inserts(10..13);
        assert!(inserts.next_preload().unwrap().is_none());
        let mut puts = Vec::new();
        while let Some(op) = inserts.next_op().unwrap() {
            let Op::Put { key, value } = op else { panic!("puts only") };
            puts.push((key, value));
        }
        assert_eq!(puts, (10..13).map(|i| (k.key(i), k.value(i))).collect::<Vec<_>>());
        let inserted: HashSet<Vec<u8>> = (0..50).map(|i| k.key(i)).collect();
        let mut lookups = k.lookups(50, 2000);
        let mut hit = HashSet::new();
        while let Some(op) = lookups.next_op().unwrap() {
            assert!(inserted.contains(op.key()));
            hit.insert(op.key().to_vec());
        }
        assert_eq!(hit.len(), 50, "uniform over every inserted key");
        assert_eq!(ScaleKeys::sample(1000, 5), vec![0, 249, 499, 749, 999]);
        assert_eq!(ScaleKeys::sample(3, 10), vec![0, 1, 2]);
        assert_eq!(ScaleKeys::sample(1, 10), vec![0]);
        assert!(ScaleKeys::sample(0, 10).is_empty());
    }

    #[test]
    fn mix_is_a_bijection_on_a_sample() {
        // Each step of `mix` is invertible; spot-check no collisions on a dense range.
        let outputs: HashSet<u64> = (0..100_000u64).map(mix).collect();
        assert_eq!(outputs.len(), 100_000);
    }
}
