//! Recovery checks the records of a large tree on several threads while it follows the leaf
//! list (`recovery_records`): the tree opens the same, and damage anywhere, or a blob named
//! from two leaves far apart (whichever threads check them: the same thread's bitmap or the
//! merge of two), is still `Corruption`. The tree here has over 2 x 1024 leaves, so a
//! machine with two or more cores starts a checking thread beside the walk.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{check_tree, contents, key, value};
use lamina_core::Error;
use lamina_fptree::fingerprint::fingerprint;
use lamina_fptree::layout::HEAD_LEAF_PPTR;
use lamina_fptree::leaf::{BITMAP_AT, FINGERPRINTS_AT, NEXT_AT, SLOTS_AT};
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::{PmemRegion, SimulatedRegion};

const RECORDS: u64 = 60_000;

/// A durable image of a tree of `RECORDS` records, its contents, and its leaves in list order.
fn image() -> (SimulatedRegion, BTreeMap<Vec<u8>, Vec<u8>>, Vec<u64>) {
    let (region, tree) = common::new_tree(64 << 20, FpTreeConfig::default());
    for i in 0..RECORDS {
        tree.put(&key(i), &value(i, 0)).unwrap();
    }
    let model = contents(&tree).unwrap();
    let mut leaves = vec![region.load_u64(HEAD_LEAF_PPTR + 8).unwrap()];
    loop {
        let next = region.load_u64(leaves[leaves.len() - 1] + NEXT_AT + 8).unwrap();
        if next == 0 {
            break;
        }
        leaves.push(next);
    }
    assert!(leaves.len() > 2 * 1024, "{} leaves", leaves.len());
    (region.crash(), model, leaves)
}

fn open(region: SimulatedRegion) -> Result<FpTree<SimulatedRegion>, Error> {
    FpTree::<SimulatedRegion>::open(Arc::new(region), FpTreeConfig::default())
}

/// The first valid slot of the leaf at `leaf`: (slot, blob offset).
fn first_valid_slot(region: &SimulatedRegion, leaf: u64) -> (u64, u64) {
    let bitmap = region.load_u64(leaf + BITMAP_AT).unwrap();
    let slot = u64::from(bitmap.trailing_zeros());
    (slot, region.load_u64(leaf + SLOTS_AT + slot * 16 + 8).unwrap())
}

#[test]
fn a_large_tree_reopens_the_same_and_damage_anywhere_is_corruption() {
    let (base, model, leaves) = image();
    let tree = open(base.crash()).unwrap();
    assert_eq!(tree.recovery_report().records, RECORDS as usize);
    assert_eq!(tree.recovery_report().leaves, leaves.len());
    assert_eq!(check_tree(&tree).unwrap(), model);
    drop(tree);

    // A blob damaged in the first, middle and last leaf: each thread's range.
    for leaf in [leaves[0], leaves[leaves.len() / 2], leaves[leaves.len() - 1]] {
        let region = base.crash();
        let (_, blob) = first_valid_slot(&region, leaf);
        let word = region.load_u64(blob + 16).unwrap();
        region.store_u64(blob + 16, word ^ 0x10).unwrap();
        let result = open(region).map(|_| ());
        assert!(
            matches!(&result, Err(Error::Corruption { reason, .. }) if reason.contains("checksum")),
            "leaf at {leaf}: {result:?}"
        );
    }
}

#[test]
fn a_blob_named_from_two_far_apart_leaves_is_corruption() {
    let (base, _, leaves) = image();
    let region = base.crash();
    let (first_leaf, last_leaf) = (leaves[0], leaves[leaves.len() - 1]);
    let (_, blob) = first_valid_slot(&region, first_leaf);
    // The last leaf's first valid slot names the first leaf's blob, with the fingerprint of
    // its key, so only the "named twice" check can see it.
    let (slot, _) = first_valid_slot(&region, last_leaf);
    region.store_u64(last_leaf + SLOTS_AT + slot * 16 + 8, blob).unwrap();
    let fingerprint_word_at = last_leaf + FINGERPRINTS_AT + slot / 8 * 8;
    let mut fingerprints = region.load_u64(fingerprint_word_at).unwrap().to_le_bytes();
    let mut first_key = vec![0u8; 16];
    region.read(blob, &mut first_key).unwrap();
    let key_len = usize::from(u16::from_le_bytes([first_key[4], first_key[5]]));
    let mut record_key = vec![0u8; key_len];
    region.read(blob + 16, &mut record_key).unwrap();
    fingerprints[(slot % 8) as usize] = fingerprint(&record_key);
    region.store_u64(fingerprint_word_at, u64::from_le_bytes(fingerprints)).unwrap();
    let result = open(region).map(|_| ());
    assert!(
        matches!(&result, Err(Error::Corruption { reason, .. }) if reason.contains("named by two")),
        "{result:?}"
    );
}
