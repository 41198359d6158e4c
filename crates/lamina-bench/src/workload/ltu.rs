//! `ltu`: the LA-tree paper's Uniform workload (section 6, "Traces").
//!
//! A random mix of lookups and updates over a pre-constructed tree (`--preload`, 200K keys
//! in the paper), with a lookup-to-update ratio `--ltu PERCENT` (the likelihood of a
//! lookup over an update: 100 means as many lookups as updates, so a request is a lookup
//! with probability `ltu / (100 + ltu)`). Keys are drawn uniformly (the paper uses 4-byte
//! integers; here integer keys below 2^32 in `--key-bytes`). Updates are 66% insertions of
//! a uniformly drawn key and 34% deletions, as in the paper's raw-NAND experiments.
//!
//! Choices where the paper is silent: lookups and deletions pick uniformly among the keys
//! currently present (so lookups hit and deletions delete); an insertion of a key already
//! present overwrites it; with an empty index a deletion becomes an insertion.

use lamina_core::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{LiveKeys, Workload, WorkloadConfig};
use crate::{Op, Value, int_key};

/// Share of updates that are insertions (LA-tree section 6).
pub const INSERT_SHARE: f64 = 0.66;
/// Keys are drawn from `0..KEY_SPACE` (4-byte integers in the paper).
pub const KEY_SPACE: u64 = 1 << 32;

/// The LTU generator.
#[derive(Debug)]
pub struct Ltu {
    rng: ChaCha8Rng,
    lookup_probability: f64,
    key_bytes: usize,
    value_bytes: u32,
    preload: u64,
    live: LiveKeys,
}

impl Ltu {
    /// A generator for `config` (kind `ltu`).
    pub fn new(config: &WorkloadConfig) -> Self {
        Ltu {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            lookup_probability: config.ltu_percent / (100.0 + config.ltu_percent),
            key_bytes: config.key_bytes,
            value_bytes: config.value_bytes as u32,
            preload: config.preload,
            live: LiveKeys::new(),
        }
    }

    fn insert(&mut self) -> Op {
        let key = self.rng.random_range(0..KEY_SPACE);
        self.live.insert(key);
        let value = Value { len: self.value_bytes, fill: self.rng.random() };
        Op::Put { key: int_key(key, self.key_bytes), value }
    }
}

impl Workload for Ltu {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        if self.live.len() as u64 >= self.preload {
            return Ok(None);
        }
        // Distinct keys, so the tree holds exactly `preload` of them.
        loop {
            let key = self.rng.random_range(0..KEY_SPACE);
            if !self.live.contains(key) {
                self.live.insert(key);
                let value = Value { len: self.value_bytes, fill: self.rng.random() };
                return Ok(Some(Op::Put { key: int_key(key, self.key_bytes), value }));
            }
        }
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        if self.rng.random_bool(self.lookup_probability) {
            let key = self.live.pick(&mut self.rng).unwrap_or(0);
            return Ok(Some(Op::Get { key: int_key(key, self.key_bytes) }));
        }
        if self.rng.random_bool(INSERT_SHARE) {
            return Ok(Some(self.insert()));
        }
        Ok(Some(match self.live.take(&mut self.rng) {
            Some(key) => Op::Delete { key: int_key(key, self.key_bytes) },
            None => self.insert(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpKind, WorkloadKind};

    #[test]
    fn lookup_to_update_ratio_and_update_split() {
        for ltu in [10.0, 100.0, 1000.0] {
            let config = WorkloadConfig {
                preload: 2000,
                ltu_percent: ltu,
                ..WorkloadConfig::new(WorkloadKind::Ltu, 5)
            };
            let mut g = Ltu::new(&config);
            let mut keys = std::collections::HashSet::new();
            while let Some(op) = g.next_preload().unwrap() {
                assert!(keys.insert(op.key().to_vec()), "preload keys are distinct");
            }
            assert_eq!(keys.len(), 2000);
            let mut counts = [0u64; OpKind::COUNT];
            for _ in 0..100_000 {
                counts[g.next_op().unwrap().unwrap().kind().index()] += 1;
            }
            let lookups = counts[OpKind::Get.index()] as f64;
            let (puts, deletes) =
                (counts[OpKind::Put.index()] as f64, counts[OpKind::Delete.index()] as f64);
            let ratio = 100.0 * lookups / (puts + deletes);
            assert!((ratio / ltu - 1.0).abs() < 0.05, "ltu {ltu}: measured {ratio}");
            let insert_share = puts / (puts + deletes);
            assert!((insert_share - INSERT_SHARE).abs() < 0.02, "insert share {insert_share}");
        }
    }
}
