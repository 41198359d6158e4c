//! Helpers shared by the integration tests.
#![allow(dead_code, reason = "each test file uses a subset")]

pub mod shuttle_word;

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::Result;
use lamina_fptree::inner::InnerIndex;
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::{PmemRegion, SimulatedOptions, SimulatedRegion};

/// The file id the tests format regions with.
pub const FILE_ID: u64 = 7;

/// A fresh simulated region of `len_bytes`.
pub fn region(len_bytes: u64) -> Arc<SimulatedRegion> {
    Arc::new(SimulatedRegion::new(len_bytes, SimulatedOptions::default()).unwrap())
}

/// A new tree on a fresh simulated region.
pub fn new_tree(
    len_bytes: u64,
    config: FpTreeConfig,
) -> (Arc<SimulatedRegion>, FpTree<SimulatedRegion>) {
    let region = region(len_bytes);
    let tree = FpTree::create(region.clone(), FILE_ID, config).unwrap();
    (region, tree)
}

/// Everything in the tree, by a full scan.
pub fn contents<R: PmemRegion + ?Sized, I: InnerIndex>(
    tree: &FpTree<R, I>,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    Ok(tree.scan(&[], None, lamina_core::limits::SCAN_LIMIT_MAX)?.into_iter().collect())
}

/// Checks the tree's invariants after an open: no persistent leak (the allocator's used
/// chunks are exactly those the tree reaches), the inner nodes hold every leaf on the list,
/// and every key reads back through the inner nodes.
pub fn check_tree<R: PmemRegion + ?Sized, I: InnerIndex>(
    tree: &FpTree<R, I>,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    assert_eq!(
        tree.allocator_stats().used_chunks,
        tree.reachable_chunks()?,
        "persistent leak: used chunks differ from reachable chunks ({:?})",
        tree.recovery_report()
    );
    tree.allocator().check()?;
    assert_eq!(tree.inner().leaf_count(), tree.list_leaves()?, "inner nodes rebuilt");
    let all = contents(tree)?;
    for (key, value) in &all {
        assert_eq!(tree.get(key)?.as_ref(), Some(value), "get agrees with the scan");
    }
    Ok(all)
}

/// A key of the tests' key space: `k{i}` padded so keys vary in length.
pub fn key(i: u64) -> Vec<u8> {
    let mut k = format!("k{i:05}").into_bytes();
    k.extend(std::iter::repeat_n(b'.', (i % 7) as usize));
    k
}

/// A value for key `i`, version `v`.
pub fn value(i: u64, v: u64) -> Vec<u8> {
    let mut out = format!("v{i}-{v}").into_bytes();
    out.extend(std::iter::repeat_n(b'x', ((i * 13 + v) % 40) as usize));
    out
}
