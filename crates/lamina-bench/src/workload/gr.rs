//! `gr`: the workload generator G_R of FD+FC, Remark A.7 (used throughout section 5).
//!
//! Each request is a lookup, insertion or deletion, chosen at random with the proportion
//! `W_l : W_i : W_d` (`--mix`). The index starts with the preloaded keys `1..=s`
//! (`--preload s`); insertions use the smallest key in `[k_l, k_u] \ K` with `k_l = s + 1`
//! (so keys ascend from the preloaded maximum, and a key deleted during the run is the first
//! to be re-inserted), lookups pick uniformly from `K`, the keys currently in the index, and
//! deletions pick uniformly from the keys of `K` inserted at least
//! [`DELETE_DISTANCE_MIN`] requests earlier. Values are random.
//!
//! Choices where the remark is silent: `k_u` is not fixed in advance (the run may be ended
//! by `--duration`); a deletion when no key is old enough becomes an insertion (or a
//! lookup, if `W_i = 0`), and a lookup on an empty index looks up key `k_l`.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, VecDeque},
};

use lamina_core::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{LiveKeys, Workload, WorkloadConfig};
use crate::{Op, Value, int_key};

/// A key may be deleted only this many requests after its insertion (Remark A.7).
pub const DELETE_DISTANCE_MIN: u64 = 100;

/// The G_R generator.
#[derive(Debug)]
pub struct Gr {
    rng: ChaCha8Rng,
    cumulative: [f64; 2],
    key_bytes: usize,
    value_bytes: u32,
    preload: u64,
    preloaded: u64,
    /// `k_l`: the smallest key inserted by the workload.
    first_new_key: u64,
    /// Keys of `K` old enough to be deleted.
    deletable: LiveKeys,
    /// Keys of `K` inserted less than `DELETE_DISTANCE_MIN` requests ago: (key, request).
    recent: VecDeque<(u64, u64)>,
    /// Keys in `[k_l, next_key)` not in `K`.
    holes: BinaryHeap<Reverse<u64>>,
    /// Smallest key never inserted.
    next_key: u64,
    /// Requests generated so far.
    requests: u64,
}

impl Gr {
    /// A generator for `config` (kind `gr`).
    pub fn new(config: &WorkloadConfig) -> Self {
        let [l, i, _] = config.mix.normalized();
        Gr {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            cumulative: [l, l + i],
            key_bytes: config.key_bytes,
            value_bytes: config.value_bytes as u32,
            preload: config.preload,
            preloaded: 0,
            first_new_key: config.preload + 1,
            deletable: LiveKeys::new(),
            recent: VecDeque::new(),
            holes: BinaryHeap::new(),
            next_key: config.preload + 1,
            requests: 0,
        }
    }

    fn value(&mut self) -> Value {
        Value { len: self.value_bytes, fill: self.rng.random() }
    }

    fn live_len(&self) -> usize {
        self.deletable.len() + self.recent.len()
    }

    fn lookup(&mut self) -> Op {
        let live = self.live_len();
        let key = if live == 0 {
            self.first_new_key
        } else {
            let at = self.rng.random_range(0..live);
            if at < self.deletable.len() {
                self.deletable.get(at)
            } else {
                self.recent[at - self.deletable.len()].0
            }
        };
        Op::Get { key: int_key(key, self.key_bytes) }
    }

    fn insert(&mut self) -> Op {
        let key = match self.holes.peek() {
            Some(&Reverse(hole)) => {
                self.holes.pop();
                hole
            }
            None => {
                self.next_key += 1;
                self.next_key - 1
            }
        };
        self.recent.push_back((key, self.requests));
        let value = self.value();
        Op::Put { key: int_key(key, self.key_bytes), value }
    }

    fn delete(&mut self) -> Option<Op> {
        while let Some(&(key, at)) = self.recent.front() {
            if self.requests - at < DELETE_DISTANCE_MIN {
                break;
            }
            self.recent.pop_front();
            self.deletable.insert(key);
        }
        let key = self.deletable.take(&mut self.rng)?;
        if key >= self.first_new_key {
            self.holes.push(Reverse(key));
        }
        Some(Op::Delete { key: int_key(key, self.key_bytes) })
    }
}

impl Workload for Gr {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        if self.preloaded == self.preload {
            return Ok(None);
        }
        self.preloaded += 1;
        let key = self.preloaded;
        self.deletable.insert(key);
        let value = self.value();
        Ok(Some(Op::Put { key: int_key(key, self.key_bytes), value }))
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        let draw: f64 = self.rng.random();
        let op = if draw < self.cumulative[0] {
            self.lookup()
        } else if draw < self.cumulative[1] {
            self.insert()
        } else {
            match self.delete() {
                Some(op) => op,
                None if self.cumulative[1] > self.cumulative[0] => self.insert(),
                None => self.lookup(),
            }
        };
        self.requests += 1;
        Ok(Some(op))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use super::*;
    use crate::{OpKind, WorkloadKind, int_of_key};

    fn config(mix: &str, preload: u64) -> WorkloadConfig {
        WorkloadConfig {
            mix: mix.parse().unwrap(),
            preload,
            ..WorkloadConfig::new(WorkloadKind::Gr, 7)
        }
    }

    #[test]
    fn follows_remark_a7() {
        let mut gr = Gr::new(&config("50:25:25", 1000));
        let mut live = BTreeSet::new();
        while let Some(op) = gr.next_preload().unwrap() {
            live.insert(int_of_key(op.key()).unwrap());
        }
        assert_eq!(live.len(), 1000);
        assert_eq!(*live.last().unwrap(), 1000);
        let mut inserted_at = HashMap::new();
        let mut counts = [0u64; 3];
        let n = 100_000u64;
        for request in 0..n {
            let op = gr.next_op().unwrap().unwrap();
            let key = int_of_key(op.key()).unwrap();
            match op.kind() {
                OpKind::Get => {
                    counts[0] += 1;
                    assert!(live.contains(&key), "lookup of a key not in K");
                }
                OpKind::Put => {
                    counts[1] += 1;
                    let smallest_free = (1001..u64::MAX).find(|k| !live.contains(k)).unwrap();
                    assert_eq!(key, smallest_free, "insert must take min([k_l, k_u] \\ K)");
                    live.insert(key);
                    inserted_at.insert(key, request);
                }
                OpKind::Delete => {
                    counts[2] += 1;
                    assert!(live.remove(&key), "delete of a key not in K");
                    if let Some(at) = inserted_at.remove(&key) {
                        assert!(
                            request - at >= DELETE_DISTANCE_MIN,
                            "deleted {} requests after insert",
                            request - at
                        );
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let share = counts.map(|c| c as f64 / n as f64);
        for (got, want) in share.iter().zip([0.5, 0.25, 0.25]) {
            assert!((got - want).abs() < 0.01, "proportions {share:?}");
        }
    }

    #[test]
    fn insert_only_ascends_from_the_preloaded_maximum() {
        let mut gr = Gr::new(&config("0:1:0", 10));
        while gr.next_preload().unwrap().is_some() {}
        for expected in 11..1000 {
            let op = gr.next_op().unwrap().unwrap();
            assert_eq!(int_of_key(op.key()), Some(expected));
        }
    }

    #[test]
    fn same_seed_same_requests() {
        let mut a = Gr::new(&config("2:1:1", 50));
        let mut b = Gr::new(&config("2:1:1", 50));
        for _ in 0..1000 {
            assert_eq!(a.next_op().unwrap(), b.next_op().unwrap());
        }
    }
}
