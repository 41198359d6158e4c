//! The paper's Uniform workload (section 6, "Traces"; 6.1): a tree pre-constructed with
//! `keys` distinct keys, then `updates` updates (66% inserts of new keys, 34% deletes of
//! live keys) randomly mixed with lookups of live keys, each operation a lookup with
//! probability `LTU / (1 + LTU)` (the lookups-to-updates ratio). Keys are uniform 4-byte
//! integers (big-endian, so byte order is numeric order), values 4-byte record ids derived
//! from the key, so every lookup's answer is checked. Deterministic for a seed.

use std::collections::HashMap;

/// A deterministic generator (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the bias of the modulo is below 2^-32 here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// One operation of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Insert(u32),
    Delete(u32),
    Lookup(u32),
}

/// The live keys: uniform sampling and removal in O(1).
#[derive(Debug, Default)]
pub struct LiveKeys {
    keys: Vec<u32>,
    index: HashMap<u32, usize>,
}

impl LiveKeys {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn contains(&self, key: u32) -> bool {
        self.index.contains_key(&key)
    }

    pub fn insert(&mut self, key: u32) {
        assert!(!self.contains(key), "inserts are of new keys");
        self.index.insert(key, self.keys.len());
        self.keys.push(key);
    }

    pub fn remove_at(&mut self, at: usize) -> u32 {
        let key = self.keys.swap_remove(at);
        self.index.remove(&key);
        if let Some(&moved) = self.keys.get(at) {
            self.index.insert(moved, at);
        }
        key
    }

    pub fn get(&self, at: usize) -> u32 {
        self.keys[at]
    }
}

/// Percent of updates that insert (the rest delete), section 6.1.
pub const INSERT_PERCENT: u64 = 66;

/// The generator of one trace.
#[derive(Debug)]
pub struct Workload {
    rng: Rng,
    pub live: LiveKeys,
    ltu_percent: u64,
}

impl Workload {
    pub fn new(seed: u64, ltu_percent: u64) -> Self {
        Workload { rng: Rng::new(seed), live: LiveKeys::default(), ltu_percent }
    }

    /// A new key, uniform among the keys not live.
    pub fn fresh_key(&mut self) -> u32 {
        loop {
            let key = self.rng.next_u64() as u32;
            if !self.live.contains(key) {
                return key;
            }
        }
    }

    /// The next operation of the mixed phase (updates and lookups). Lookups: with
    /// probability `LTU / (100 + LTU)` for `LTU` in percent.
    pub fn next_op(&mut self) -> Op {
        let lookup = self.rng.below(100 + self.ltu_percent) < self.ltu_percent;
        let live = self.live.len();
        if lookup && live > 0 {
            return Op::Lookup(self.live.get(self.rng.below(live as u64) as usize));
        }
        if live == 0 || self.rng.below(100) < INSERT_PERCENT {
            let key = self.fresh_key();
            self.live.insert(key);
            Op::Insert(key)
        } else {
            let at = self.rng.below(live as u64) as usize;
            Op::Delete(self.live.remove_at(at))
        }
    }
}

/// The record id stored under `key`.
pub fn value_of(key: u32) -> [u8; 4] {
    key.wrapping_mul(2_654_435_761).to_le_bytes()
}

pub fn key_bytes(key: u32) -> [u8; 4] {
    key.to_be_bytes()
}
