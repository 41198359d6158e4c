//! `tpcc`: the workload generator G_T of FD+FC, Remark A.8 (section 5.2, Figure 8).
//!
//! Index requests on the primary key of TPC-C's NewOrder table. The key is a 4-byte
//! unsigned integer (big-endian, so byte order is numeric order): warehouse id in the top
//! 8 bits, district id in the next 8, order number in the low 16. There are `--warehouses`
//! warehouses of 10 districts with 3000 customers each; the preload inserts 3 orders per
//! customer (orders 1..=9000 of every district).
//!
//! Transactions are drawn with the TPC-C frequencies 45% NewOrder, 43% Payment,
//! 4% OrderStatus, 4% Delivery, 4% StockLevel and mapped to index requests:
//! - NewOrder: insert the district's next order (random warehouse and district);
//! - Delivery: for each of the 10 districts of a random warehouse, delete its oldest
//!   undelivered order (10 orders delivered together, as the remark says);
//! - OrderStatus and StockLevel: one lookup each, of an undelivered order (OrderStatus: a
//!   random one; StockLevel: one of the district's 20 most recent);
//! - Payment does not touch NewOrder and issues no request.
//!
//! That gives 45 inserts, 40 deletes and 8 lookups per 100 transactions: 91.4% of the
//! requests modify the index and 8.6% look it up, matching the 91.3% / 8.7% the paper
//! reports in section 5.2. Order numbers are unbounded counters stored modulo 2^16; a
//! district with 65535 undelivered orders takes no NewOrder until a Delivery (the key
//! would collide), a choice the remark leaves open.

use std::collections::VecDeque;

use lamina_core::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Workload, WorkloadConfig};
use crate::{Op, Value};

/// Districts per warehouse (TPC-C).
pub const DISTRICTS: u32 = 10;
/// Customers per district (TPC-C).
pub const CUSTOMERS_PER_DISTRICT: u32 = 3000;
/// Orders preloaded per customer (Remark A.8 / section 5).
pub const PRELOAD_ORDERS_PER_CUSTOMER: u32 = 3;
/// Most undelivered orders a district can hold (16-bit order numbers).
pub const BACKLOG_MAX: u64 = 0xFFFF;

/// The NewOrder key of (warehouse, district, order): 8 + 8 + 16 bits, big-endian.
pub fn tpcc_key(warehouse: u32, district: u32, order: u64) -> [u8; 4] {
    assert!(
        warehouse <= 0xFF && district <= 0xFF,
        "warehouse {warehouse} / district {district} over 8 bits"
    );
    ((warehouse << 24) | (district << 16) | (order & 0xFFFF) as u32).to_be_bytes()
}

/// (warehouse, district, order number mod 2^16) of a NewOrder key.
pub fn tpcc_key_parts(key: &[u8]) -> Option<(u32, u32, u32)> {
    let n = u32::from_be_bytes(key.try_into().ok()?);
    Some((n >> 24, (n >> 16) & 0xFF, n & 0xFFFF))
}

#[derive(Debug, Clone, Copy)]
struct District {
    /// Oldest undelivered order number.
    oldest: u64,
    /// Next order number to assign.
    next: u64,
}

/// The G_T generator.
#[derive(Debug)]
pub struct Tpcc {
    rng: ChaCha8Rng,
    warehouses: u32,
    value_bytes: u32,
    districts: Vec<District>,
    /// Preload cursor: index into `districts` and order number.
    preload_at: (usize, u64),
    /// Deletes of a Delivery not yet handed out.
    pending: VecDeque<Op>,
}

impl Tpcc {
    /// A generator for `config` (kind `tpcc`).
    pub fn new(config: &WorkloadConfig) -> Self {
        let count = (config.warehouses * DISTRICTS) as usize;
        Tpcc {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            warehouses: config.warehouses,
            value_bytes: config.value_bytes as u32,
            districts: vec![District { oldest: 1, next: 1 }; count],
            preload_at: (0, 1),
            pending: VecDeque::new(),
        }
    }

    /// Number of preload requests: 3 orders per customer.
    pub fn preload_len(&self) -> u64 {
        self.districts.len() as u64
            * u64::from(CUSTOMERS_PER_DISTRICT * PRELOAD_ORDERS_PER_CUSTOMER)
    }

    fn ids(index: usize) -> (u32, u32) {
        (index as u32 / DISTRICTS + 1, index as u32 % DISTRICTS + 1)
    }

    fn key(index: usize, order: u64) -> Vec<u8> {
        let (w, d) = Self::ids(index);
        tpcc_key(w, d, order).to_vec()
    }

    fn value(&mut self) -> Value {
        Value { len: self.value_bytes, fill: self.rng.random() }
    }

    fn random_district(&mut self) -> usize {
        self.rng.random_range(0..self.districts.len())
    }

    fn transaction(&mut self) -> Option<Op> {
        let draw = self.rng.random_range(0..100u32);
        match draw {
            0..45 => {
                let at = self.random_district();
                let d = &mut self.districts[at];
                if d.next - d.oldest >= BACKLOG_MAX {
                    return None;
                }
                let order = d.next;
                d.next += 1;
                let value = self.value();
                Some(Op::Put { key: Self::key(at, order), value })
            }
            45..88 => None, // Payment
            88..92 => {
                let at = self.random_district();
                let d = self.districts[at];
                let order = if d.next > d.oldest {
                    self.rng.random_range(d.oldest..d.next)
                } else {
                    d.next.saturating_sub(1).max(1)
                };
                Some(Op::Get { key: Self::key(at, order) })
            }
            92..96 => {
                let w = self.rng.random_range(0..self.warehouses) as usize;
                for at in w * DISTRICTS as usize..(w + 1) * DISTRICTS as usize {
                    let d = &mut self.districts[at];
                    if d.oldest < d.next {
                        let order = d.oldest;
                        d.oldest += 1;
                        self.pending.push_back(Op::Delete { key: Self::key(at, order) });
                    }
                }
                self.pending.pop_front()
            }
            _ => {
                let at = self.random_district();
                let d = self.districts[at];
                let recent = (d.next - d.oldest).clamp(1, 20);
                let back = self.rng.random_range(1..=recent);
                Some(Op::Get { key: Self::key(at, d.next.saturating_sub(back).max(1)) })
            }
        }
    }
}

impl Workload for Tpcc {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        let (at, order) = self.preload_at;
        if at == self.districts.len() {
            return Ok(None);
        }
        let per_district = u64::from(CUSTOMERS_PER_DISTRICT * PRELOAD_ORDERS_PER_CUSTOMER);
        self.preload_at = if order == per_district { (at + 1, 1) } else { (at, order + 1) };
        self.districts[at].next = order + 1;
        let value = self.value();
        Ok(Some(Op::Put { key: Self::key(at, order), value }))
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        if let Some(op) = self.pending.pop_front() {
            return Ok(Some(op));
        }
        // Each transaction issues a request with probability >= 12%; the cap only guards
        // against a logic error turning this into an endless loop.
        for _ in 0..100_000 {
            if let Some(op) = self.transaction() {
                return Ok(Some(op));
            }
        }
        Err(Error::Unsupported {
            what: "tpcc generator found no request to issue in 100000 transactions".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OpKind, WorkloadKind};

    #[test]
    fn key_packing() {
        let key = tpcc_key(3, 7, 0x1234);
        assert_eq!(key, [3, 7, 0x12, 0x34]);
        assert_eq!(tpcc_key_parts(&key), Some((3, 7, 0x1234)));
        assert_eq!(tpcc_key(1, 1, 0x1_0005), [1, 1, 0, 5], "order numbers wrap at 16 bits");
        assert!(tpcc_key(1, 2, 0xFFFF) < tpcc_key(1, 3, 0), "district outranks order");
        assert!(tpcc_key(1, 10, 0xFFFF) < tpcc_key(2, 1, 0), "warehouse outranks district");
    }

    #[test]
    fn preload_is_three_orders_per_customer_and_mix_matches_section_5_2() {
        let config = WorkloadConfig { warehouses: 2, ..WorkloadConfig::new(WorkloadKind::Tpcc, 3) };
        let mut g = Tpcc::new(&config);
        let mut preloaded = 0u64;
        while let Some(op) = g.next_preload().unwrap() {
            let (w, d, o) = tpcc_key_parts(op.key()).unwrap();
            assert!((1..=2).contains(&w) && (1..=10).contains(&d) && (1..=9000).contains(&o));
            preloaded += 1;
        }
        assert_eq!(preloaded, 2 * 10 * 3000 * 3);
        assert_eq!(preloaded, g.preload_len());
        let mut counts = [0u64; OpKind::COUNT];
        let mut oldest = std::collections::HashMap::new();
        let n = 200_000u32;
        for _ in 0..n {
            let op = g.next_op().unwrap().unwrap();
            counts[op.kind().index()] += 1;
            if op.kind() == OpKind::Delete {
                // Deliveries take each district's orders oldest first.
                let (w, d, o) = tpcc_key_parts(op.key()).unwrap();
                let expected = oldest.entry((w, d)).or_insert(1u32);
                assert_eq!(o, *expected);
                *expected += 1;
            }
        }
        let share = |k: OpKind| counts[k.index()] as f64 / f64::from(n);
        assert!((share(OpKind::Put) - 45.0 / 93.0).abs() < 0.01, "{counts:?}");
        assert!((share(OpKind::Delete) - 40.0 / 93.0).abs() < 0.01, "{counts:?}");
        assert!((share(OpKind::Get) - 8.0 / 93.0).abs() < 0.01, "{counts:?}");
    }
}
