//! Model-based property test with tiny parameters (issue 16: "a property test with tiny f,
//! sigma and B checks `verify()` and equality with the oracle after every flush"): random
//! puts, deletes, compare-and-swaps and batches; every flush step verifies the tree
//! (`verify_each_flush`); after every job the whole content is compared with the oracle; at
//! the end the tree is closed, reopened and compared again.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::testkit::dump;
use lamina_core::{Durability, OrderedIndex, WriteBatch};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};
use lamina_storage::MemoryStorage;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u16, u16),
    Delete(u16),
    Cas(u16, u16),
    Batch(Vec<(u16, Option<u16>)>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..600u16, 0..300u16).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0..600u16).prop_map(Op::Delete),
        1 => (0..600u16, 0..300u16).prop_map(|(k, v)| Op::Cas(k, v)),
        1 => prop::collection::vec((0..600u16, prop::option::of(0..300u16)), 1..6).prop_map(Op::Batch),
    ]
}

fn key(k: u16) -> Vec<u8> {
    format!("k{k:05}").into_bytes()
}

fn value(v: u16) -> Vec<u8> {
    vec![v as u8; usize::from(v)]
}

fn stat(db: &NbTree, name: &str) -> u64 {
    db.stats().extra.iter().find(|(n, _)| *n == name).unwrap().1
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn matches_the_oracle_through_flushes_splits_and_reopen(
        ops in prop::collection::vec(op(), 500..2500),
        fanout in 3u32..5,
        background in any::<bool>(),
    ) {
        let storage = Arc::new(MemoryStorage::new());
        let options = NbTreeOptions {
            fanout,
            sigma_bytes: SIGMA_BYTES_MIN,
            page_bytes: 512,
            durability: Durability::None,
            deamortization: if background { Deamortization::Background } else { Deamortization::Foreground },
            verify_each_flush: true,
            ..NbTreeOptions::default()
        };
        let db = NbTree::open(storage.clone(), &options).unwrap();
        let mut oracle = BTreeMap::new();
        let mut jobs = 0;
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    db.put(&key(k), &value(v)).unwrap();
                    oracle.insert(key(k), value(v));
                }
                Op::Delete(k) => {
                    prop_assert_eq!(db.delete(&key(k)).unwrap(), oracle.remove(&key(k)).is_some());
                }
                Op::Cas(k, v) => {
                    let current = oracle.get(&key(k)).cloned();
                    let swapped = db.compare_and_swap(&key(k), current.as_deref(), Some(&value(v))).unwrap();
                    prop_assert!(swapped.is_swapped());
                    oracle.insert(key(k), value(v));
                }
                Op::Batch(entries) => {
                    let mut batch = WriteBatch::new();
                    for (k, v) in entries {
                        match v {
                            Some(v) => { batch.put(key(k), value(v)); oracle.insert(key(k), value(v)); }
                            None => { batch.delete(key(k)); oracle.remove(&key(k)); }
                        }
                    }
                    db.write_batch(&batch).unwrap();
                }
            }
            if stat(&db, "flush_jobs") != jobs {
                jobs = stat(&db, "flush_jobs");
                db.wait_for_flushes().unwrap();
                prop_assert_eq!(&dump(&db), &oracle);
            }
        }
        prop_assert!(jobs > 0);
        db.wait_for_flushes().unwrap();
        db.verify().unwrap();
        prop_assert_eq!(&dump(&db), &oracle);
        db.close().unwrap();
        let db = NbTree::open(storage, &options).unwrap();
        prop_assert_eq!(&dump(&db), &oracle);
        for k in 0..600u16 {
            prop_assert_eq!(db.get(&key(k)).unwrap(), oracle.get(&key(k)).cloned());
        }
        db.verify().unwrap();
    }
}
