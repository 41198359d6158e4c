//! `ycsb-a` ... `ycsb-f`: the YCSB core workloads (Cooper et al., "Benchmarking Cloud
//! Serving Systems with YCSB", SoCC 2010, section 4.1 and the `workloads/workload[a-f]`
//! files of its distribution).
//!
//! | workload | requests | key distribution |
//! | --- | --- | --- |
//! | A | 50% read, 50% update | zipfian |
//! | B | 95% read, 5% update | zipfian |
//! | C | 100% read | zipfian |
//! | D | 95% read, 5% insert | latest |
//! | E | 95% scan, 5% insert | zipfian start, length uniform in 1..=100 |
//! | F | 50% read, 50% read-modify-write | zipfian |
//!
//! The preload inserts records `0..N` (`--preload N`, YCSB's `recordcount`); record `n`
//! has key `fnv64(n)` as a big-endian integer (YCSB's hashed insert order), so keys are
//! scattered over the key space. Inserts add records `N, N+1, ...`. "zipfian" is YCSB's
//! scrambled zipfian: a zipfian record rank, hashed to spread the popular records over the
//! key space; "latest" favours the most recently inserted records (rank 0 = newest).
//! Reads are `get`, updates and inserts `put`, scans `scan`, and read-modify-write `rmw`.

use lamina_core::Result;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Workload, WorkloadConfig, Zipfian};
use crate::{Op, Value, fnv64, int_key};

/// Longest YCSB-E scan (its `maxscanlength`).
pub const SCAN_LENGTH_MAX: u32 = 100;

/// Which core workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YcsbVariant {
    /// 50/50 read/update.
    A,
    /// 95/5 read/update.
    B,
    /// Read only.
    C,
    /// 95/5 read/insert, latest.
    D,
    /// 95/5 scan/insert.
    E,
    /// 50/50 read/read-modify-write.
    F,
}

/// A YCSB core workload generator.
#[derive(Debug)]
pub struct Ycsb {
    variant: YcsbVariant,
    rng: ChaCha8Rng,
    key_bytes: usize,
    value_bytes: u32,
    preload: u64,
    /// Records inserted so far (preload and run).
    records: u64,
    zipf: Zipfian,
}

impl Ycsb {
    /// A generator for `config`.
    pub fn new(config: &WorkloadConfig, variant: YcsbVariant) -> Self {
        Ycsb {
            variant,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            key_bytes: config.key_bytes,
            value_bytes: config.value_bytes as u32,
            preload: config.preload,
            records: 0,
            zipf: Zipfian::new(config.preload.max(1)),
        }
    }

    /// Key of record `n`.
    pub fn record_key(&self, n: u64) -> Vec<u8> {
        int_key(fnv64(n), self.key_bytes)
    }

    fn value(&mut self) -> Value {
        Value { len: self.value_bytes, fill: self.rng.random() }
    }

    /// A record chosen by the scrambled zipfian.
    fn zipfian_record(&mut self) -> u64 {
        let rank = self.zipf.sample(&mut self.rng);
        fnv64(rank) % self.records.max(1)
    }

    /// A record chosen by "latest": rank 0 is the newest.
    fn latest_record(&mut self) -> u64 {
        let rank = self.zipf.sample(&mut self.rng);
        self.records.max(1) - 1 - rank.min(self.records.max(1) - 1)
    }

    fn insert(&mut self) -> Op {
        let n = self.records;
        self.records += 1;
        self.zipf.grow_to(self.records);
        let value = self.value();
        Op::Put { key: self.record_key(n), value }
    }
}

impl Workload for Ycsb {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        if self.records == self.preload {
            return Ok(None);
        }
        Ok(Some(self.insert()))
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        let draw: f64 = self.rng.random();
        let op = match self.variant {
            YcsbVariant::A | YcsbVariant::B | YcsbVariant::C => {
                let read_share = match self.variant {
                    YcsbVariant::A => 0.5,
                    YcsbVariant::B => 0.95,
                    _ => 1.0,
                };
                let record = self.zipfian_record();
                let key = self.record_key(record);
                if draw < read_share {
                    Op::Get { key }
                } else {
                    Op::Put { key, value: self.value() }
                }
            }
            YcsbVariant::D => {
                if draw < 0.95 {
                    let record = self.latest_record();
                    Op::Get { key: self.record_key(record) }
                } else {
                    self.insert()
                }
            }
            YcsbVariant::E => {
                if draw < 0.95 {
                    let record = self.zipfian_record();
                    let start = self.record_key(record);
                    Op::Scan { start, limit: self.rng.random_range(1..=SCAN_LENGTH_MAX) }
                } else {
                    self.insert()
                }
            }
            YcsbVariant::F => {
                let record = self.zipfian_record();
                let key = self.record_key(record);
                if draw < 0.5 { Op::Get { key } } else { Op::Rmw { key, value: self.value() } }
            }
        };
        Ok(Some(op))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::{OpKind, WorkloadKind};

    fn shares(kind: WorkloadKind, variant: YcsbVariant, n: u64) -> ([f64; OpKind::COUNT], Ycsb) {
        let config = WorkloadConfig { preload: 1000, ..WorkloadConfig::new(kind, 21) };
        let mut g = Ycsb::new(&config, variant);
        while g.next_preload().unwrap().is_some() {}
        let mut counts = [0u64; OpKind::COUNT];
        for _ in 0..n {
            let op = g.next_op().unwrap().unwrap();
            if let Op::Scan { limit, .. } = op {
                assert!((1..=SCAN_LENGTH_MAX).contains(&limit));
            }
            counts[op.kind().index()] += 1;
        }
        (counts.map(|c| c as f64 / n as f64), g)
    }

    #[test]
    fn core_workload_proportions() {
        let cases = [
            (WorkloadKind::YcsbA, YcsbVariant::A, [(OpKind::Get, 0.5), (OpKind::Put, 0.5)]),
            (WorkloadKind::YcsbB, YcsbVariant::B, [(OpKind::Get, 0.95), (OpKind::Put, 0.05)]),
            (WorkloadKind::YcsbC, YcsbVariant::C, [(OpKind::Get, 1.0), (OpKind::Put, 0.0)]),
            (WorkloadKind::YcsbD, YcsbVariant::D, [(OpKind::Get, 0.95), (OpKind::Put, 0.05)]),
            (WorkloadKind::YcsbE, YcsbVariant::E, [(OpKind::Scan, 0.95), (OpKind::Put, 0.05)]),
            (WorkloadKind::YcsbF, YcsbVariant::F, [(OpKind::Get, 0.5), (OpKind::Rmw, 0.5)]),
        ];
        for (kind, variant, want) in cases {
            let (got, _) = shares(kind, variant, 40_000);
            for (op, share) in want {
                assert!((got[op.index()] - share).abs() < 0.01, "{kind}: {op:?} {got:?}");
            }
        }
    }

    #[test]
    fn zipfian_requests_are_skewed_and_latest_favours_new_records() {
        let config =
            WorkloadConfig { preload: 1000, ..WorkloadConfig::new(WorkloadKind::YcsbC, 2) };
        let mut g = Ycsb::new(&config, YcsbVariant::C);
        while g.next_preload().unwrap().is_some() {}
        let mut hits: HashMap<Vec<u8>, u64> = HashMap::new();
        for _ in 0..50_000 {
            *hits.entry(g.next_op().unwrap().unwrap().key().to_vec()).or_default() += 1;
        }
        let mut counts: Vec<u64> = hits.into_values().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        // Uniform would give ~50 per record; zipfian's hottest record gets ~1/zeta(1000) ~ 13%.
        assert!(counts[0] > 3000, "hottest record {}", counts[0]);

        let config =
            WorkloadConfig { preload: 1000, ..WorkloadConfig::new(WorkloadKind::YcsbD, 2) };
        let mut g = Ycsb::new(&config, YcsbVariant::D);
        while g.next_preload().unwrap().is_some() {}
        let reads_of_newest = (0..10_000).filter(|_| g.latest_record() == 999).count();
        assert!(reads_of_newest > 500, "latest: newest record read {reads_of_newest} times");
    }
}
