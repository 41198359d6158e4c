//! `insert`: the NB-tree paper's insert workload (section 6.1, "Dataset" and "Workload"),
//! and `insert-query`, its query workload.
//!
//! Starting from an empty index (unless `--preload` says otherwise), every request inserts
//! a key of `--key-bytes` uniformly random bytes (8 in the paper) with a value of
//! `--value-bytes` (128 in the paper). Random keys are what the paper uses "to focus on
//! worst-case performance". The preload, if any, is drawn the same way.
//!
//! `insert-query` preloads `--preload` records exactly as `insert` does (same seed, same
//! keys) and then looks up keys chosen uniformly among them: "n_Q query operations performed
//! on an index built based on the dataset containing n keys ... we select keys uniformly from
//! existing keys as the query input".

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

/// Most bytes of preloaded keys `insert-query` remembers (1 GiB: 134 million 8-byte keys, so
/// the NB-tree experiment's query phases run at 10 million keys and beyond).
pub const INSERT_QUERY_KEYS_BYTES_MAX: u64 = 1 << 30;

/// The query generator: an [`Insert`] preload, then uniform lookups of its keys.
#[derive(Debug)]
pub struct InsertQuery {
    insert: Insert,
    /// Every preloaded key, `key_bytes` each, in preload order.
    keys: Vec<u8>,
    key_bytes: usize,
    rng: ChaCha8Rng,
}

impl InsertQuery {
    /// A generator for `config` (kind `insert-query`, validated: a preload of at least one
    /// key and at most [`INSERT_QUERY_KEYS_BYTES_MAX`] bytes of keys).
    pub fn new(config: &WorkloadConfig) -> Result<Self> {
        config.validate()?;
        let capacity = config.preload as usize * config.key_bytes;
        Ok(InsertQuery {
            insert: Insert::new(config),
            keys: Vec::with_capacity(capacity),
            key_bytes: config.key_bytes,
            // A stream independent of the preload's, so the keys are the `insert` ones.
            rng: ChaCha8Rng::seed_from_u64(config.seed ^ 0x5155_4552_5921),
        })
    }
}

impl Workload for InsertQuery {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        let op = self.insert.next_preload()?;
        if let Some(op) = &op {
            self.keys.extend_from_slice(op.key());
        }
        Ok(op)
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        let count = self.keys.len() / self.key_bytes;
        assert!(count > 0, "validated: insert-query has a preload, read before the requests");
        let i = self.rng.random_range(0..count);
        let key = self.keys[i * self.key_bytes..(i + 1) * self.key_bytes].to_vec();
        Ok(Some(Op::Get { key }))
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

    #[test]
    fn insert_query_looks_up_the_keys_insert_preloads() {
        let config =
            WorkloadConfig { preload: 50, ..WorkloadConfig::new(WorkloadKind::InsertQuery, 4) };
        let mut q = InsertQuery::new(&config).unwrap();
        let mut same =
            Insert::new(&WorkloadConfig { kind: WorkloadKind::Insert, ..config.clone() });
        let mut keys = std::collections::HashSet::new();
        while let Some(op) = q.next_preload().unwrap() {
            assert_eq!(
                Some(op.key().to_vec()),
                same.next_preload().unwrap().map(|o| o.key().to_vec())
            );
            keys.insert(op.key().to_vec());
        }
        assert_eq!(keys.len(), 50);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2000 {
            let op = q.next_op().unwrap().unwrap();
            assert_eq!(op.kind(), OpKind::Get);
            assert!(keys.contains(op.key()));
            seen.insert(op.key().to_vec());
        }
        assert_eq!(seen.len(), 50, "uniform over all existing keys");
        let empty = WorkloadConfig { preload: 0, ..config };
        assert!(InsertQuery::new(&empty).is_err());
        let keys_max = INSERT_QUERY_KEYS_BYTES_MAX / empty.key_bytes as u64;
        let huge = WorkloadConfig { preload: keys_max + 1, ..empty };
        assert!(InsertQuery::new(&huge).is_err());
    }
}
