//! `insert`: the NB-tree paper's insert workload (section 6.1, "Dataset" and "Workload").
//!
//! Starting from an empty index (unless `--preload` says otherwise), every request inserts
//! a key of `--key-bytes` uniformly random bytes (8 in the paper) with a value of
//! `--value-bytes` (128 in the paper). Random keys are what the paper uses "to focus on
//! worst-case performance". The preload, if any, is drawn the same way.

use lamina_core::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Workload, WorkloadConfig};
use crate::{Op, Value};

/// The insert-only generator.
#[derive(Debug)]
pub struct Insert {
    rng: ChaCha8Rng,
    key_bytes: usize,
    value_bytes: u32,
    preload_left: u64,
}

impl Insert {
    /// A generator for `config` (kind `insert`).
    pub fn new(config: &WorkloadConfig) -> Self {
        Insert {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            key_bytes: config.key_bytes,
            value_bytes: config.value_bytes as u32,
            preload_left: config.preload,
        }
    }

    fn put(&mut self) -> Op {
        let mut key = vec![0u8; self.key_bytes];
        self.rng.fill(key.as_mut_slice());
        Op::Put { key, value: Value { len: self.value_bytes, fill: self.rng.random() } }
    }
}

impl Workload for Insert {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        if self.preload_left == 0 {
            return Ok(None);
        }
        self.preload_left -= 1;
        Ok(Some(self.put()))
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        Ok(Some(self.put()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpKind, WorkloadKind};

    #[test]
    fn uniform_random_keys_of_the_configured_sizes() {
        let mut g = Insert::new(&WorkloadConfig::new(WorkloadKind::Insert, 9));
        assert!(g.next_preload().unwrap().is_none(), "starts from an empty index");
        let mut first_byte = [0u32; 256];
        for _ in 0..25_600 {
            let op = g.next_op().unwrap().unwrap();
            assert_eq!(op.kind(), OpKind::Put);
            assert_eq!(op.key().len(), 8);
            let Op::Put { value, .. } = op else { unreachable!() };
            assert_eq!(value.len, 128);
            first_byte[op.key()[0] as usize] += 1;
        }
        // Uniform: each leading byte near 100 occurrences.
        assert!(first_byte.iter().all(|&c| (40..=170).contains(&c)), "{first_byte:?}");
    }
}
