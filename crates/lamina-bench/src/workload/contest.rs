//! `contest`: the SIGMOD Programming Contest 2011 driver's mix, as described in section 4
//! and Table 1 of the prefix-tree / cyclic-log paper.
//!
//! The driver populates the index with sequential 8-byte integer keys (`--preload N`:
//! keys `0..N`, big-endian), then each client thread draws operations with probabilities
//! 45% read, 40% write, 5% delete, 5% compare-and-swap and 5% scan of at most 10 rows, on
//! keys chosen uniformly from the populated range. Writes overwrite or re-insert; a CAS
//! expects the key's preloaded value (so it swaps while the key is untouched and reports
//! a mismatch afterwards) and installs a new random value. Values are `--value-bytes`
//! long (the paper measures 8, 1024 and 4096; default 8).

use lamina_core::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Workload, WorkloadConfig};
use crate::{Op, Value, fnv64, int_key};

/// Most rows one contest scan returns (Table 1).
pub const SCAN_ROWS_MAX: u32 = 10;

/// The contest-mix generator.
#[derive(Debug)]
pub struct Contest {
    rng: ChaCha8Rng,
    key_bytes: usize,
    value_bytes: u32,
    records: u64,
    preloaded: u64,
}

impl Contest {
    /// A generator for `config` (kind `contest`).
    pub fn new(config: &WorkloadConfig) -> Self {
        assert!(config.preload > 0, "validated: contest draws from the preloaded keys");
        Contest {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            key_bytes: config.key_bytes,
            value_bytes: config.value_bytes as u32,
            records: config.preload,
            preloaded: 0,
        }
    }

    /// The value the preload writes under key `n`.
    fn preload_value(&self, n: u64) -> Value {
        Value { len: self.value_bytes, fill: fnv64(n) }
    }

    fn random_value(&mut self) -> Value {
        Value { len: self.value_bytes, fill: self.rng.random() }
    }
}

impl Workload for Contest {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        if self.preloaded == self.records {
            return Ok(None);
        }
        let n = self.preloaded;
        self.preloaded += 1;
        Ok(Some(Op::Put { key: int_key(n, self.key_bytes), value: self.preload_value(n) }))
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        let n = self.rng.random_range(0..self.records);
        let key = int_key(n, self.key_bytes);
        let draw = self.rng.random_range(0..100u32);
        Ok(Some(match draw {
            0..45 => Op::Get { key },
            45..85 => Op::Put { key, value: self.random_value() },
            85..90 => Op::Delete { key },
            90..95 => {
                let expected = Some(self.preload_value(n));
                Op::Cas { key, expected, new: Some(self.random_value()) }
            }
            _ => Op::Scan { start: key, limit: SCAN_ROWS_MAX },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpKind, WorkloadKind, int_of_key};

    #[test]
    fn table_1_proportions_and_key_range() {
        let config =
            WorkloadConfig { preload: 5000, ..WorkloadConfig::new(WorkloadKind::Contest, 11) };
        let mut g = Contest::new(&config);
        let mut expected_key = 0u64;
        while let Some(op) = g.next_preload().unwrap() {
            assert_eq!(op.key(), expected_key.to_be_bytes(), "sequential 8-byte big-endian keys");
            expected_key += 1;
        }
        assert_eq!(expected_key, 5000);
        let mut counts = [0u64; OpKind::COUNT];
        let n = 100_000u32;
        for _ in 0..n {
            let op = g.next_op().unwrap().unwrap();
            assert!(int_of_key(op.key()).unwrap() < 5000);
            if let Op::Scan { limit, .. } = op {
                assert!(limit <= SCAN_ROWS_MAX);
            }
            counts[op.kind().index()] += 1;
        }
        let want = [
            (OpKind::Get, 0.45),
            (OpKind::Put, 0.40),
            (OpKind::Delete, 0.05),
            (OpKind::Cas, 0.05),
            (OpKind::Scan, 0.05),
        ];
        for (kind, share) in want {
            let got = counts[kind.index()] as f64 / f64::from(n);
            assert!((got - share).abs() < 0.01, "{kind:?}: {got}");
        }
    }
}
