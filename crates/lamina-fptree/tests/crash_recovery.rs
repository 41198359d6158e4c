//! A simulated power failure at every persist point of every operation kind (each lost, and
//! torn two ways): recovery gives the state before or after the operation in progress (a
//! prefix of the acknowledged operations), leaks nothing (the allocator's used chunks are
//! exactly the chunks the tree reaches), and rebuilds the inner nodes over every leaf.

mod common;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

use common::{FILE_ID, check_tree, key, value};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::SimulatedRegion;
use lamina_storage::pmem::crash_test::for_each_persist_point;

const REGION_BYTES: u64 = 512 << 10;
const TEARS: [Option<u64>; 3] = [None, Some(1), Some(2)];

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

fn put(i: u64, v: u64) -> Op {
    Op::Put(key(i), value(i, v))
}

fn apply(tree: &FpTree<SimulatedRegion>, op: &Op) {
    match op {
        Op::Put(k, v) => tree.put(k, v).unwrap(),
        Op::Delete(k) => assert!(tree.delete(k).unwrap(), "the scenarios delete present keys"),
    }
}

fn apply_model(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, op: &Op) {
    match op {
        Op::Put(k, v) => {
            model.insert(k.clone(), v.clone());
        }
        Op::Delete(k) => {
            model.remove(k);
        }
    }
}

/// What a scenario's workload did when run without a crash.
#[derive(Debug)]
struct Outcome {
    crash_points: u64,
    splits: u64,
    leaf_removals: u64,
    used_chunks_before: u64,
    used_chunks_after: u64,
}

/// `op` as `config` can hold it: inline records take 8-byte keys and values, so keys and
/// values are cut or zero-padded to 8 bytes (`common::key`'s "k" and five digits keep the
/// keys distinct and in order; the values stay distinct per key and version).
fn for_config(config: FpTreeConfig, op: &Op) -> Op {
    let eight = |b: &[u8]| {
        let mut b = b.to_vec();
        b.resize(8, 0);
        b
    };
    match op {
        _ if !config.inline_records => op.clone(),
        Op::Put(k, v) => Op::Put(eight(k), eight(v)),
        Op::Delete(k) => Op::Delete(eight(k)),
    }
}

/// Runs `setup`, then crashes `workload` at every persist point and checks each recovery.
fn crash_everywhere(config: FpTreeConfig, setup: &[Op], workload: &[Op]) -> Outcome {
    let setup: Vec<Op> = setup.iter().map(|op| for_config(config, op)).collect();
    let workload: Vec<Op> = workload.iter().map(|op| for_config(config, op)).collect();
    let (setup, workload) = (setup.as_slice(), workload.as_slice());
    let mut models = vec![BTreeMap::new()];
    for op in setup {
        apply_model(&mut models[0], op);
    }
    for op in workload {
        let mut next = models.last().unwrap().clone();
        apply_model(&mut next, op);
        models.push(next);
    }
    let acked = Cell::new(usize::MAX);
    let stats = Cell::new((0, 0, 0, 0));
    let runs = for_each_persist_point(
        REGION_BYTES,
        &TEARS,
        |region| {
            let tree = FpTree::create(region.clone(), FILE_ID, config)?;
            for op in setup {
                apply(&tree, op);
            }
            Ok(())
        },
        |region| {
            let tree = FpTree::<SimulatedRegion>::open(region.clone(), config)?;
            let used_before = tree.allocator_stats().used_chunks;
            acked.set(workload.len());
            for (i, op) in workload.iter().enumerate() {
                apply(&tree, op);
                if region.crash_point_reached() && acked.get() == workload.len() {
                    acked.set(i);
                }
            }
            let s = tree.stats();
            stats.set((s.splits, s.leaf_removals, used_before, tree.allocator_stats().used_chunks));
            Ok(())
        },
        |recovered, point| {
            let tree = FpTree::<SimulatedRegion>::open(Arc::new(recovered), config)?;
            let got = check_tree(&tree)?;
            let done = acked.get();
            let ok = got == models[done] || models.get(done + 1).is_some_and(|m| got == *m);
            assert!(
                ok,
                "crash at {point:?} during op {done}: recovered {} records, expected {} or {} \
                 ({:?})",
                got.len(),
                models[done].len(),
                models.get(done + 1).map_or(0, BTreeMap::len),
                tree.recovery_report()
            );
            // The recovered tree keeps working.
            tree.put(b"after-rc", b"ok......")?;
            assert_eq!(tree.get(b"after-rc")?, Some(b"ok......".to_vec()));
            check_tree(&tree)?;
            Ok(())
        },
    )
    .unwrap_or_else(|failure| panic!("{failure:?}"));
    let (splits, leaf_removals, used_chunks_before, used_chunks_after) = stats.get();
    Outcome {
        crash_points: runs.crash_points,
        splits,
        leaf_removals,
        used_chunks_before,
        used_chunks_after,
    }
}

fn ascending(n: u64) -> Vec<Op> {
    (0..n).map(|i| put(i, 0)).collect()
}

/// Both leaf allocations, each with blob and with inline records.
fn configs() -> [FpTreeConfig; 4] {
    let groups = FpTreeConfig { leaf_groups: true, group_leaves: 2, ..FpTreeConfig::default() };
    [
        FpTreeConfig::default(),
        groups,
        FpTreeConfig::default().with_inline_records(),
        groups.with_inline_records(),
    ]
}

#[test]
fn insert_without_split() {
    for config in configs() {
        let out = crash_everywhere(config, &ascending(10), &[put(100, 0)]);
        assert_eq!(out.splits, 0);
        if config.inline_records {
            // Algorithm 2 as printed: the slot, the fingerprint, the bitmap; no allocation.
            assert_eq!(out.crash_points, 3, "{out:?}");
            assert_eq!(out.used_chunks_after, out.used_chunks_before, "{out:?}");
        } else {
            assert!(out.crash_points >= 5, "{out:?}");
        }
    }
}

#[test]
fn insert_with_split() {
    for config in configs() {
        // 48 keys fill the first leaf; the 49th splits it.
        let out = crash_everywhere(config, &ascending(48), &[put(48, 0)]);
        assert_eq!(out.splits, 1, "{out:?}");
    }
}

#[test]
fn insert_with_split_that_allocates_a_leaf_group() {
    // Group of 2 leaves: the second split finds no free leaf and allocates a group
    // (Algorithm 10 lines 3-8).
    let config = FpTreeConfig { leaf_groups: true, group_leaves: 2, ..FpTreeConfig::default() };
    let out = crash_everywhere(config, &ascending(72), &[put(72, 0)]);
    assert_eq!(out.splits, 1, "{out:?}");
    assert!(out.used_chunks_after > out.used_chunks_before + 20, "a group was allocated: {out:?}");
}

#[test]
fn update_without_split() {
    for config in configs() {
        let out = crash_everywhere(config, &ascending(10), &[put(3, 1)]);
        assert_eq!(out.splits, 0);
    }
}

#[test]
fn update_of_a_full_leaf_splits_it() {
    for config in configs() {
        let out = crash_everywhere(config, &ascending(48), &[put(40, 1)]);
        assert_eq!(out.splits, 1, "{out:?}");
    }
}

#[test]
fn delete_without_leaf_removal() {
    for config in configs() {
        let out = crash_everywhere(config, &ascending(10), &[Op::Delete(key(4))]);
        assert_eq!(out.leaf_removals, 0);
    }
}

/// Ascending inserts of 0..=72 make three leaves: 0..=23, 24..=47, 48..=72 (the third in a
/// second leaf group of two). Deleting 48..=71 in the setup leaves one key in the last leaf.
fn last_leaf_with_one_key() -> Vec<Op> {
    let mut ops = ascending(73);
    ops.extend((48..72).map(|i| Op::Delete(key(i))));
    ops
}

#[test]
fn delete_with_leaf_removal() {
    for config in configs() {
        let out = crash_everywhere(config, &last_leaf_with_one_key(), &[Op::Delete(key(72))]);
        assert_eq!(out.leaf_removals, 1, "{out:?}");
        if config.leaf_groups {
            // The removed leaf was the only one in use in its group: the group is freed
            // (Algorithm 12 lines 5-19).
            assert!(out.used_chunks_after + 20 < out.used_chunks_before, "{out:?}");
        }
    }
}

#[test]
fn variable_size_insert_and_delete_at_the_limits() {
    let big_key = |b: u8| vec![b; KEY_BYTES_MAX];
    let setup = vec![Op::Put(big_key(1), vec![1; VALUE_BYTES_MAX]), put(1, 0)];
    let workload = vec![
        Op::Put(big_key(2), vec![2; VALUE_BYTES_MAX]),
        Op::Put(b"k".to_vec(), Vec::new()),
        Op::Put(big_key(1), vec![3; 17]),
        Op::Delete(big_key(2)),
        Op::Delete(b"k".to_vec()),
    ];
    for config in configs().into_iter().filter(|c| !c.inline_records) {
        crash_everywhere(config, &setup, &workload);
    }
}

#[test]
fn a_mixed_sequence_recovers_to_a_prefix() {
    let mut workload = vec![put(48, 0), put(49, 0), put(5, 1), Op::Delete(key(6))];
    workload.extend((24..48).map(|i| Op::Delete(key(i))));
    for config in configs() {
        let out = crash_everywhere(config, &ascending(48), &workload);
        assert_eq!((out.splits, out.leaf_removals), (1, 0), "{out:?}");
    }
}
