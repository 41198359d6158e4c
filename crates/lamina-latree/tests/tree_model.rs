//! The tree against a `BTreeMap` oracle: random puts, deletes, gets and range scans on small
//! nodes with a small `U`, so emptyings, splits, merges and buffer splits happen constantly;
//! `verify()` after every step. Memory backend, `nand-toshiba` and `ssd-msp7525` profiles.
//! The unbuffered tree (`buffered = false`, engine `latree-btree`, a plain B+tree) runs the
//! same model; its `verify()` also checks that no buffer exists. So does the tree with root
//! draining (`drain_root`, the engine's setting: a root emptying handed down one child per
//! update, `tree/drain.rs`), lookups and scans meeting the batch half handed down.

use std::collections::BTreeMap;

use lamina_latree::adapt::SavingsRule;
use lamina_latree::node::NodeLayout;
use lamina_latree::tree::{LaTree, LaTreeOptions};
use lamina_storage::{DeviceProfile, MemoryStorage};
use proptest::prelude::*;

const KEY_BYTES_MAX: usize = 4;
const VALUE_BYTES_MAX: usize = 12;

fn options(device: DeviceProfile, k: u8, u: u64, rule: SavingsRule) -> LaTreeOptions {
    let mut options = LaTreeOptions::for_device(device);
    options.node_bytes = NodeLayout::node_bytes_min_for(KEY_BYTES_MAX, VALUE_BYTES_MAX).max(96);
    options.key_bytes_max = KEY_BYTES_MAX;
    options.value_bytes_max = VALUE_BYTES_MAX;
    options.levels_per_buffer = k;
    options.buffer_entries_max = u;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 2048;
    options.savings_rule = rule;
    options
}

/// The B+tree baseline: same nodes, no buffers.
fn unbuffered(device: DeviceProfile) -> LaTreeOptions {
    let mut options = options(device, 2, 6, SavingsRule::Paper);
    options.buffered = false;
    options
}

/// The engine's setting: root emptyings drained one child per update.
fn draining(mut options: LaTreeOptions) -> LaTreeOptions {
    options.drain_root = true;
    options
}

#[derive(Debug, Clone)]
enum Op {
    Put(u16, Vec<u8>),
    Delete(u16),
    Get(u16),
    Range(u16, u16, usize),
}

fn key(k: u16) -> Vec<u8> {
    format!("{k:04}").into_bytes()
}

fn op(keys: u16) -> impl Strategy<Value = Op> {
    ops_weighted(keys, 5, 2)
}

/// Mostly deletes: the tree shrinks, so buffered nodes holding entries borrow and merge.
fn op_shrinking(keys: u16) -> impl Strategy<Value = Op> {
    ops_weighted(keys, 1, 6)
}

fn ops_weighted(keys: u16, puts: u32, deletes: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        puts => (0..keys, prop::collection::vec(any::<u8>(), 0..=VALUE_BYTES_MAX))
            .prop_map(|(k, v)| Op::Put(k, v)),
        deletes => (0..keys).prop_map(Op::Delete),
        3 => (0..keys).prop_map(Op::Get),
        1 => (0..keys, 0..keys, 0usize..40).prop_map(|(a, b, n)| Op::Range(a.min(b), a.max(b), n)),
    ]
}

/// Growing, then shrinking.
fn grow_then_shrink(keys: u16, ops: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    (prop::collection::vec(op(keys), ops.clone()), prop::collection::vec(op_shrinking(keys), ops))
        .prop_map(|(mut grow, shrink)| {
            grow.extend(shrink);
            grow
        })
}

fn run(options: LaTreeOptions, ops: &[Op]) -> LaTree {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, options).unwrap();
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Put(k, v) => {
                tree.put(&key(*k), v).unwrap();
                oracle.insert(key(*k), v.clone());
            }
            Op::Delete(k) => {
                tree.delete(&key(*k)).unwrap();
                oracle.remove(&key(*k));
            }
            Op::Get(k) => {
                assert_eq!(
                    tree.get(&key(*k)).unwrap(),
                    oracle.get(&key(*k)).cloned(),
                    "step {step}: {op:?}"
                );
            }
            Op::Range(a, b, n) => {
                let got = tree.range(&key(*a), Some(&key(*b)), *n).unwrap();
                let want: Vec<_> = oracle
                    .range(key(*a)..key(*b))
                    .take(*n)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_eq!(got, want, "step {step}: {op:?}");
            }
        }
        let stats = tree.verify().unwrap_or_else(|e| panic!("step {step} ({op:?}): {e}"));
        // Counts: every live key is in a leaf or a buffer; every leaf entry is live or has a
        // pending update in a buffer.
        let live = oracle.len() as u64;
        assert!(live <= stats.leaf_entries + stats.buffer_entries, "step {step}: {stats:?}");
        assert!(stats.leaf_entries <= live + stats.buffer_entries, "step {step}: {stats:?}");
    }
    let all = tree.range(&key(0), None, usize::MAX).unwrap();
    let want: Vec<_> = oracle.into_iter().collect();
    assert_eq!(all, want);
    tree
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn nand_k2_matches_the_oracle(ops in prop::collection::vec(op(300), 1..400)) {
        let _ = run(options(DeviceProfile::nand_toshiba(), 2, 6, SavingsRule::Paper), &ops);
    }

    #[test]
    fn ssd_k2_matches_the_oracle(ops in prop::collection::vec(op(300), 1..400)) {
        let _ = run(options(DeviceProfile::ssd_msp7525(), 2, 6, SavingsRule::Paper), &ops);
    }


    #[test]
    fn unbuffered_nand_matches_the_oracle(ops in prop::collection::vec(op(300), 1..400)) {
        let _ = run(unbuffered(DeviceProfile::nand_toshiba()), &ops);
    }

    #[test]
    fn unbuffered_ssd_shrinking_matches_the_oracle(ops in grow_then_shrink(300, 1..300)) {
        let _ = run(unbuffered(DeviceProfile::ssd_msp7525()), &ops);
    }

    #[test]
    fn draining_nand_k2_matches_the_oracle(ops in prop::collection::vec(op(300), 1..400)) {
        let options = draining(options(DeviceProfile::nand_toshiba(), 2, 6, SavingsRule::Paper));
        let _ = run(options, &ops);
    }

    #[test]
    fn draining_ssd_k2_shrinking_matches_the_oracle(ops in grow_then_shrink(300, 1..300)) {
        let options = draining(options(DeviceProfile::ssd_msp7525(), 2, 24, SavingsRule::Paper));
        let _ = run(options, &ops);
    }

    #[test]
    fn draining_host_k2_matches_the_oracle(ops in prop::collection::vec(op(300), 1..400)) {
        // Free scans: ADAPT never empties at a lookup, so batches drain step by step.
        let options = draining(options(DeviceProfile::host(), 2, 24, SavingsRule::Paper));
        let _ = run(options, &ops);
    }

    #[test]
    fn ssd_k3_few_keys_matches_the_oracle(ops in prop::collection::vec(op(40), 1..400)) {
        let _ = run(options(DeviceProfile::ssd_msp7525(), 3, 4, SavingsRule::Paper), &ops);
    }
}

fn long_sequence() -> Vec<Op> {
    let mut ops = Vec::new();
    let k = |x: u32| (x % 2000) as u16;
    for i in 0..3000u32 {
        ops.push(Op::Put(k(i * 7919), vec![(i % 251) as u8; (i % 13) as usize]));
        if i % 3 == 0 {
            ops.push(Op::Get(k(i * 31)));
        }
    }
    for i in 0..2000u32 {
        ops.push(Op::Delete(k(i * 613)));
        if i % 5 == 0 {
            ops.push(Op::Range(k(i), k(i + 50).max(k(i)), 20));
        }
    }
    ops
}

proptest! {
    // Few cases: each is thousands of steps, every one verified.
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    /// Long enough, and shrinking enough, for buffered nodes holding entries to split, borrow
    /// and merge (siblings rebalanced in a cascade, or a lookup emptying below them).
    #[test]
    fn nand_k1_break_even_matches_the_oracle(ops in grow_then_shrink(2000, 1000..3000)) {
        let _ = run(options(DeviceProfile::nand_toshiba(), 1, 8, SavingsRule::BreakEven), &ops);
    }

    #[test]
    fn draining_nand_k1_break_even_matches_the_oracle(ops in grow_then_shrink(2000, 1000..3000)) {
        let options = draining(options(DeviceProfile::nand_toshiba(), 1, 8, SavingsRule::BreakEven));
        let _ = run(options, &ops);
    }
}

#[test]
fn a_long_sequence_grows_and_shrinks_the_tree() {
    let ops = long_sequence();
    let tree = run(options(DeviceProfile::nand_toshiba(), 2, 8, SavingsRule::Paper), &ops);
    let counters = tree.counters();
    assert!(counters.grows >= 2, "{counters:?}");
    assert!(counters.splits > 100 && counters.merges > 100, "{counters:?}");
    assert!(counters.emptyings > 500, "{counters:?}");
}

#[test]
fn a_long_sequence_with_every_level_buffered_splits_and_merges_full_buffers() {
    let ops = long_sequence();
    let tree = run(options(DeviceProfile::nand_toshiba(), 1, 8, SavingsRule::BreakEven), &ops);
    let counters = tree.counters();
    assert!(counters.splits > 100 && counters.merges > 100, "{counters:?}");
    assert!(counters.buffers_redistributed > 10, "{counters:?}");
}

#[test]
fn a_long_sequence_grows_and_shrinks_the_unbuffered_tree() {
    let ops = long_sequence();
    let tree = run(unbuffered(DeviceProfile::nand_toshiba()), &ops);
    let counters = tree.counters();
    assert!(counters.grows >= 2, "{counters:?}");
    assert!(counters.splits > 100 && counters.merges > 100, "{counters:?}");
    assert_eq!(counters.emptyings, 0, "{counters:?}");
    assert_eq!(tree.buffer_pool().stats().store.units_written, 0);
}

/// Root emptyings drained over the updates after them (`tree/drain.rs`): many steps, the
/// tree still grows and shrinks, and some drainings are cut short (a root that must split or
/// shrink, a lookup's emptying) into whole emptyings.
#[test]
fn a_long_sequence_drains_root_emptyings_step_by_step() {
    let ops = long_sequence();
    let options = draining(options(DeviceProfile::host(), 2, 64, SavingsRule::Paper));
    let tree = run(options, &ops);
    let counters = tree.counters();
    assert!(counters.drain_steps > 200, "{counters:?}");
    assert!(counters.grows >= 2 && counters.splits > 100 && counters.merges > 100, "{counters:?}");
}
