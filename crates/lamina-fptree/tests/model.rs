//! Random operations against a `BTreeMap` oracle (proptest), with close/reopen (the durable
//! image of the simulated region) in the middle, in both leaf-allocation configurations, with
//! blob and with inline (fixed-size) records.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{FILE_ID, check_tree, region};
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::SimulatedRegion;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u16, u8),
    Delete(u16),
    Get(u16),
    Scan(u16, u8),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u16..400, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        3 => (0u16..400).prop_map(Op::Delete),
        2 => (0u16..400).prop_map(Op::Get),
        1 => (0u16..400, any::<u8>()).prop_map(|(k, n)| Op::Scan(k, n)),
        1 => Just(Op::Reopen),
    ]
}

fn key(k: u16, inline: bool) -> Vec<u8> {
    if inline {
        // Inline records: 8-byte keys (big-endian, so byte order is numeric order).
        return u64::from(k).to_be_bytes().to_vec();
    }
    // Lengths 1 to 6, so prefixes of other keys occur.
    let text = format!("{k}");
    text.into_bytes()
}

fn value(k: u16, v: u8, inline: bool) -> Vec<u8> {
    if inline {
        return [u8::try_from(k % 256).unwrap(), v, 0, 0, 0, 0, 0, 1].to_vec();
    }
    vec![v; usize::from(k % 50) + usize::from(v % 3) * 100]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_tree_behaves_like_a_btreemap(
        ops in prop::collection::vec(op(), 1..600),
        groups: bool,
        inline: bool,
    ) {
        let config = FpTreeConfig {
            leaf_groups: groups,
            group_leaves: 3,
            inline_records: inline,
        };
        let (key, value) = (|k| key(k, inline), |k, v| value(k, v, inline));
        let mut region = region(4 << 20);
        let mut tree = FpTree::<SimulatedRegion>::create(region.clone(), FILE_ID, config).unwrap();
        let mut model = BTreeMap::new();
        for op in ops {
            match op {
                Op::Put(k, v) => {
                    tree.put(&key(k), &value(k, v)).unwrap();
                    model.insert(key(k), value(k, v));
                }
                Op::Delete(k) => {
                    prop_assert_eq!(tree.delete(&key(k)).unwrap(), model.remove(&key(k)).is_some());
                }
                Op::Get(k) => prop_assert_eq!(tree.get(&key(k)).unwrap(), model.get(&key(k)).cloned()),
                Op::Scan(k, n) => {
                    let got = tree.scan(&key(k), None, usize::from(n)).unwrap();
                    let want: Vec<_> = model
                        .range(key(k)..)
                        .take(usize::from(n))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    prop_assert_eq!(got, want);
                }
                Op::Reopen => {
                    drop(tree);
                    region = Arc::new(region.crash());
                    tree = FpTree::open(region.clone(), config).unwrap();
                    prop_assert_eq!(tree.recovery_report().logs_replayed, 0);
                    prop_assert_eq!(&check_tree(&tree).unwrap(), &model);
                }
            }
        }
        prop_assert_eq!(&check_tree(&tree).unwrap(), &model);
    }
}
