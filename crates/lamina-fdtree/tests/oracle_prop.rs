//! Random workloads against a `BTreeMap` oracle, with tiny blocks, `kappa_0` and `gamma` so
//! that merges, level skips, tightenings, growing and shrinking happen constantly. Every merge
//! runs `verify()` (verify_each_merge); the content is compared throughout. Every test runs
//! for each concurrency mode (FD+XM, FD+DS and FD+FC with their background threads).

use std::collections::BTreeMap;
use std::ops::Bound;

use lamina_core::{KeyRange, OrderedIndex, WriteBatch};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u16, Vec<u8>),
    Delete(u16),
    Get(u16),
    Scan(u16, u16, usize),
    Batch(Vec<(u16, Option<Vec<u8>>)>),
    Cas(u16, bool, Option<Vec<u8>>),
}

/// Variable-length keys of 2 to 4 bytes (distinct for distinct `k`).
fn key(k: u16) -> Vec<u8> {
    let mut out = k.to_be_bytes().to_vec();
    out.resize(2 + usize::from(k % 3), k as u8);
    out
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..=4)
}

fn op(keys: u16) -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..keys, value()).prop_map(|(k, v)| Op::Put(k, v)),
        4 => (0..keys).prop_map(Op::Delete),
        2 => (0..keys).prop_map(Op::Get),
        1 => (0..keys, 0..keys, 0usize..20).prop_map(|(a, b, l)| Op::Scan(a, b, l)),
        1 => proptest::collection::vec((0..keys, proptest::option::of(value())), 0..12)
            .prop_map(Op::Batch),
        1 => (0..keys, any::<bool>(), proptest::option::of(value()))
            .prop_map(|(k, e, n)| Op::Cas(k, e, n)),
    ]
}

const MODES: [FcMode; 3] = [FcMode::Xm, FcMode::Ds, FcMode::Fc];

fn mode() -> impl Strategy<Value = FcMode> {
    prop_oneof![Just(FcMode::Xm), Just(FcMode::Ds), Just(FcMode::Fc)]
}

fn options(block_bytes: u32, kappa0: u64, gamma: u32, mode: FcMode) -> FdTreeOptions {
    FdTreeOptions {
        mode,
        memory_budget_bytes: u64::from(block_bytes) * kappa0,
        block_bytes,
        segment_bytes: 512,
        size_ratio: gamma,
        key_bytes_max: 4,
        value_bytes_max: 4,
        verify_each_merge: true,
        ..FdTreeOptions::default()
    }
}

fn run(options: &FdTreeOptions, ops: &[Op]) -> Result<(), TestCaseError> {
    let db = FdTree::volatile(options).unwrap();
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for (n, op) in ops.iter().enumerate() {
        match op {
            Op::Put(k, v) => {
                db.put(&key(*k), v).unwrap();
                oracle.insert(key(*k), v.clone());
            }
            Op::Delete(k) => {
                prop_assert_eq!(db.delete(&key(*k)).unwrap(), oracle.remove(&key(*k)).is_some());
            }
            Op::Get(k) => prop_assert_eq!(db.get(&key(*k)).unwrap(), oracle.get(&key(*k)).cloned()),
            Op::Scan(a, b, limit) => {
                let (lo, hi) = (key(*a.min(b)), key(*a.max(b)));
                let range = KeyRange {
                    start: Bound::Excluded(lo.clone()),
                    end: Bound::Included(hi.clone()),
                };
                let expected: Vec<_> = oracle
                    .range::<Vec<u8>, _>((Bound::Excluded(&lo), Bound::Included(&hi)))
                    .take(*limit)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                prop_assert_eq!(db.scan(&range, *limit).unwrap(), expected);
            }
            Op::Batch(items) => {
                let mut batch = WriteBatch::new();
                for (k, v) in items {
                    match v {
                        Some(v) => {
                            batch.put(key(*k), v.clone());
                            oracle.insert(key(*k), v.clone());
                        }
                        None => {
                            batch.delete(key(*k));
                            oracle.remove(&key(*k));
                        }
                    }
                }
                db.write_batch(&batch).unwrap();
            }
            Op::Cas(k, expect_current, new) => {
                let current = oracle.get(&key(*k)).cloned();
                let expected =
                    if *expect_current { current.clone() } else { Some(b"zzzzz".to_vec()) };
                let outcome = db.compare_and_swap(&key(*k), expected.as_deref(), new.as_deref());
                if expected.as_ref().is_some_and(|e| e.len() > 4) {
                    // A 5-byte expected value can never match a stored value; the CAS is a
                    // mismatch returning the current one.
                    prop_assert!(!outcome.unwrap().is_swapped());
                } else {
                    prop_assert!(outcome.unwrap().is_swapped());
                    match new {
                        Some(v) => oracle.insert(key(*k), v.clone()),
                        None => oracle.remove(&key(*k)),
                    };
                }
            }
        }
        if n % 50 == 49 {
            let all: BTreeMap<_, _> =
                db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
            prop_assert_eq!(&all, &oracle);
        }
    }
    db.verify().unwrap();
    let all: BTreeMap<_, _> = db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    prop_assert_eq!(&all, &oracle);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_workloads_match_the_oracle(
        shape in prop_oneof![
            Just((512u32, 1u64, 2u32)),
            Just((512, 1, 3)),
            Just((512, 2, 4)),
            Just((1024, 1, 2)),
        ],
        keys in prop_oneof![Just(16u16), Just(100), Just(1000)],
        ops in proptest::collection::vec(op(1000), 1..600),
        mode in mode(),
    ) {
        let (block, kappa0, gamma) = shape;
        let ops: Vec<Op> = ops.into_iter().map(|o| clamp(o, keys)).collect();
        run(&options(block, kappa0, gamma, mode), &ops)?;
    }
}

fn clamp(op: Op, keys: u16) -> Op {
    let c = |k: u16| k % keys;
    match op {
        Op::Put(k, v) => Op::Put(c(k), v),
        Op::Delete(k) => Op::Delete(c(k)),
        Op::Get(k) => Op::Get(c(k)),
        Op::Scan(a, b, l) => Op::Scan(c(a), c(b), l),
        Op::Batch(items) => Op::Batch(items.into_iter().map(|(k, v)| (c(k), v)).collect()),
        Op::Cas(k, e, n) => Op::Cas(c(k), e, n),
    }
}

#[test]
fn all_shapes_are_valid_options() {
    for (b, k, g) in [(512, 1, 2), (512, 1, 3), (512, 2, 4), (1024, 1, 2)] {
        for mode in MODES {
            options(b, k, g, mode).params().unwrap();
        }
    }
}

/// The random workloads above really exercise the merge machinery: one long deterministic
/// run of the same kind of ops, with the merge counters checked.
#[test]
fn workloads_exercise_every_merge_path() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let ops = proptest::collection::vec(op(400), 4000..4001).new_tree(&mut runner).unwrap();
    let ops = proptest::strategy::ValueTree::current(&ops);
    // Grow first, then shrink: a delete-heavy tail makes underflow merges and shrinking.
    let mut ops: Vec<Op> = ops;
    ops.extend((0..400).map(Op::Delete));
    for mode in MODES {
        let options = options(512, 1, 2, mode);
        run(&options, &ops).unwrap();
        let db = FdTree::volatile(&options).unwrap();
        for (i, o) in ops.iter().enumerate() {
            match o.clone() {
                Op::Put(k, v) => db.put(&key(k), &v).unwrap(),
                Op::Delete(k) => drop(db.delete(&key(k)).unwrap()),
                _ => {}
            }
            if i % 20 == 19 {
                // Background merges take every run written meanwhile; waiting now and then
                // keeps them small and frequent, like FD+XM's.
                db.wait_for_merges().unwrap();
            }
        }
        db.wait_for_merges().unwrap();
        // (I6) holds once merges are done, also when the last merge revealed an underflow
        // with no run left in L_0 (its underflow merge followed).
        let c = db.with_tree(lamina_fdtree::Tree::merge_input_counters).unwrap();
        assert!(!c.underflows(), "{mode:?}: (I6) fails after the merges: {c:?}");
        let m = db.with_tree(lamina_fdtree::Tree::merge_counts).unwrap();
        assert!(m.overflow > 30, "{mode:?} {m:?}");
        assert!(m.underflow > 0, "{mode:?} {m:?}");
        assert!(m.grew > 2 && m.shrank > 0, "{mode:?} {m:?}");
        assert!(m.levels_skipped > 0 && m.levels_tightened > 0, "{mode:?} {m:?}");
    }
}

/// A persistent tree over the faulty backend: random puts and deletes with close/reopen and
/// simulated crashes in between. Every write is acknowledged under `Sync`, so the recovered
/// tree must equal the oracle exactly, and `verify()` must pass after every recovery.
fn run_persistent(options: &FdTreeOptions, ops: &[(u16, Option<Vec<u8>>, u8)]) {
    use lamina_storage::{FaultPlan, FaultyStorage};
    let mut storage = FaultyStorage::in_memory(FaultPlan::none());
    let open = |s: &FaultyStorage| FdTree::open(std::sync::Arc::new(s.clone()), options).unwrap();
    let mut db = open(&storage);
    let mut oracle: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for (k, v, event) in ops {
        match v {
            Some(v) => {
                db.put(&key(*k), v).unwrap();
                oracle.insert(key(*k), v.clone());
            }
            None => assert_eq!(db.delete(&key(*k)).unwrap(), oracle.remove(&key(*k)).is_some()),
        }
        match event {
            0 => {
                db.close().unwrap();
                db = open(&storage);
            }
            1 => {
                storage.crash().unwrap();
                drop(db);
                storage = storage.reopen_after_crash().unwrap();
                db = open(&storage);
            }
            _ => continue,
        }
        db.verify().unwrap();
        let all: BTreeMap<_, _> = db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
        assert_eq!(all, oracle);
    }
    db.close().unwrap();
    let db = open(&storage);
    let all: BTreeMap<_, _> = db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(all, oracle);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn persistent_workloads_survive_reopen_and_crash(
        ops in proptest::collection::vec(
            (0u16..300, proptest::option::weighted(0.7, value()), 0u8..40),
            1..300,
        ),
        mode in mode(),
    ) {
        run_persistent(&options(512, 1, 2, mode), &ops);
    }
}
