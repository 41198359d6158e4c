//! The random workload: seeded operations over a small key space, so keys are overwritten,
//! deleted and rewritten many times per store life.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::model::{Effects, Model};
use crate::value::{VALUE_HEADER_BYTES, key, value};

/// Keys in the key space.
pub const KEYS: u64 = 160;
/// Most keys in one batch.
pub const BATCH_KEYS_MAX: u64 = 6;

/// One operation of the workload.
#[derive(Debug, Clone)]
pub enum Op {
    /// Insert or overwrite.
    Put(Vec<u8>, Vec<u8>),
    /// Remove.
    Delete(Vec<u8>),
    /// Compare-and-swap on a key whose state the model knows; `swaps` says whether the
    /// expected value is the current one.
    Cas {
        /// The key.
        key: Vec<u8>,
        /// The value expected (`None`: absent).
        expected: Option<Vec<u8>>,
        /// The value to store (`None`: delete).
        new: Option<Vec<u8>>,
        /// Whether `expected` is the model's current value (the swap must happen).
        swaps: bool,
    },
    /// An atomic batch over distinct keys.
    Batch(Effects),
    /// A point read, checked against the model.
    Get(Vec<u8>),
    /// A full scan, checked against the model.
    Scan,
    /// A checkpoint, flush or sync.
    Maintain,
}

impl Op {
    /// The operation's kind, for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Put(..) => "put",
            Op::Delete(_) => "delete",
            Op::Cas { .. } => "compare-and-swap",
            Op::Batch(_) => "batch",
            Op::Get(_) => "get",
            Op::Scan => "scan",
            Op::Maintain => "maintain",
        }
    }

    /// What the operation changes if it takes effect.
    pub fn effects(&self) -> Effects {
        match self {
            Op::Put(k, v) => vec![(k.clone(), Some(v.clone()))],
            Op::Delete(k) => vec![(k.clone(), None)],
            Op::Cas { key, new, swaps: true, .. } => vec![(key.clone(), new.clone())],
            Op::Batch(effects) => effects.clone(),
            Op::Cas { swaps: false, .. } | Op::Get(_) | Op::Scan | Op::Maintain => Vec::new(),
        }
    }
}

/// Makes seeded operations; every write gets a new write number.
#[derive(Debug)]
pub struct Workload {
    /// Largest value written.
    value_bytes_max: usize,
    next_write_no: u64,
}

impl Workload {
    /// A workload whose values are at most `value_bytes_max` bytes.
    pub fn new(value_bytes_max: usize) -> Self {
        assert!(value_bytes_max > VALUE_HEADER_BYTES);
        Workload { value_bytes_max, next_write_no: 1 }
    }

    fn value(&mut self, rng: &mut ChaCha8Rng, key: &[u8]) -> Vec<u8> {
        self.next_write_no += 1;
        // Mostly small values, now and then one near the limit.
        let len = if rng.random_ratio(1, 8) {
            rng.random_range(VALUE_HEADER_BYTES..=self.value_bytes_max)
        } else {
            rng.random_range(VALUE_HEADER_BYTES..=VALUE_HEADER_BYTES + 40)
        };
        value(key, self.next_write_no, len)
    }

    /// The next operation.
    pub fn next(&mut self, rng: &mut ChaCha8Rng, model: &Model) -> Op {
        let k = key(rng.random_range(0..KEYS));
        match rng.random_range(0..100) {
            0..40 => {
                let v = self.value(rng, &k);
                Op::Put(k, v)
            }
            40..52 => Op::Delete(k),
            52..64 => match model.certain(&k) {
                Some(current) => {
                    let swaps = rng.random_ratio(4, 5);
                    let expected = if swaps {
                        current.map(<[u8]>::to_vec)
                    } else {
                        Some(self.value(rng, &k)) // never stored: a mismatch
                    };
                    let new = if rng.random_ratio(1, 5) { None } else { Some(self.value(rng, &k)) };
                    Op::Cas { key: k, expected, new, swaps }
                }
                None => Op::Get(k),
            },
            64..78 => {
                let n = rng.random_range(2..=BATCH_KEYS_MAX);
                let mut keys: Vec<u64> = (0..n).map(|_| rng.random_range(0..KEYS)).collect();
                keys.sort_unstable();
                keys.dedup();
                let effects = keys
                    .into_iter()
                    .map(|i| {
                        let k = key(i);
                        let v =
                            if rng.random_ratio(1, 4) { None } else { Some(self.value(rng, &k)) };
                        (k, v)
                    })
                    .collect();
                Op::Batch(effects)
            }
            78..95 => Op::Get(k),
            95..98 => Op::Scan,
            _ => Op::Maintain,
        }
    }
}
