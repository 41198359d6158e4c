//! A damaged region gives `Corruption` at open, never a silently different tree: every bit
//! position class of a leaf and of a record blob is damaged in turn, in simulated regions and
//! in a region file. A cleared valid bit of a leaf's bitmap used to look exactly like a crash
//! between a delete's bitmap write and its blob free (recovery completed the "delete" and the
//! record was gone); writes now record their pending slots in the bitmap word, so a stray
//! blob in any other slot is damage (`crate::leaf::Pending`).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::{FILE_ID, check_tree, contents, key, value};
use lamina_core::Error;
use lamina_fptree::layout::{HEAD_LEAF_PPTR, TREE_HEADER_OFFSET};
use lamina_fptree::leaf::{BITMAP_AT, LEAF_BYTES, SLOTS_AT, VERSION_AT};
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::{MmapOptions, MmapRegion, PmemRegion, SimulatedRegion};

const RECORDS: u64 = 20;

/// A durable image of a one-leaf tree of `RECORDS` records, its contents and its head leaf.
fn image() -> (SimulatedRegion, BTreeMap<Vec<u8>, Vec<u8>>, u64) {
    let (region, tree) = common::new_tree(1 << 20, FpTreeConfig::default());
    for i in 0..RECORDS {
        tree.put(&key(i), &value(i, 0)).unwrap();
    }
    let model = contents(&tree).unwrap();
    let head = region.load_u64(HEAD_LEAF_PPTR + 8).unwrap();
    (region.crash(), model, head)
}

/// Opens `region` after `damage`: `Err(Corruption)`, or the tree's contents.
fn open_damaged(
    base: &SimulatedRegion,
    damage: impl FnOnce(&SimulatedRegion),
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, Error> {
    let region = base.crash();
    damage(&region);
    let tree = FpTree::<SimulatedRegion>::open(Arc::new(region), FpTreeConfig::default())?;
    check_tree(&tree)
}

fn flip(region: &SimulatedRegion, at: u64, bit: u32) {
    let word = at / 8 * 8;
    let old = region.load_u64(word).unwrap();
    region.store_u64(word, old ^ (1 << bit)).unwrap();
}

#[test]
fn every_damaged_word_of_a_leaf_is_detected_or_harmless() {
    let (base, model, head) = image();
    let mut detected = 0;
    for word in (0..LEAF_BYTES).step_by(8) {
        for bit in [0u32, 13, 35, 62] {
            let result = open_damaged(&base, |r| flip(r, head + word, bit));
            match result {
                Err(Error::Corruption { .. }) => detected += 1,
                Err(e) => panic!("word {word} bit {bit}: {e}"),
                Ok(got) => assert_eq!(
                    got,
                    model,
                    "word {word} bit {bit}: silently different tree ({} records)",
                    got.len()
                ),
            }
        }
    }
    assert!(detected > 100, "{detected}");
    // The version word is transient: damage there is reset at recovery.
    assert_eq!(open_damaged(&base, |r| flip(r, head + VERSION_AT, 0)).unwrap(), model);
}

#[test]
fn every_damaged_byte_of_a_record_blob_is_detected() {
    let (base, _, head) = image();
    let blob = base.load_u64(head + SLOTS_AT + 8).unwrap();
    let len = 16 + key(0).len() as u64 + value(0, 0).len() as u64;
    for at in blob..blob + len {
        for bit in [0u32, 7] {
            let result = open_damaged(&base, |r| flip(r, at, (at % 8) as u32 * 8 + bit));
            assert!(
                matches!(result, Err(Error::Corruption { .. })),
                "byte {} bit {bit}: {result:?}",
                at - blob
            );
        }
    }
}

#[test]
fn a_damaged_tree_header_is_corruption() {
    let (base, _, _) = image();
    for word in (0..64).step_by(8) {
        let result = open_damaged(&base, |r| flip(r, TREE_HEADER_OFFSET + word, 9));
        assert!(matches!(result, Err(Error::Corruption { .. })), "word {word}: {result:?}");
    }
}

#[test]
fn a_damaged_region_file_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fptree.pmem");
    let head;
    {
        let region = Arc::new(MmapRegion::create(&path, 1 << 20, MmapOptions::default()).unwrap());
        let tree =
            FpTree::<MmapRegion>::create(region.clone(), FILE_ID, FpTreeConfig::default()).unwrap();
        for i in 0..RECORDS {
            tree.put(&key(i), &value(i, 0)).unwrap();
        }
        head = region.load_u64(HEAD_LEAF_PPTR + 8).unwrap();
    }
    let reopen = || {
        let region = Arc::new(MmapRegion::open(&path, MmapOptions::default()).unwrap());
        FpTree::<MmapRegion>::open(region, FpTreeConfig::default()).map(|t| contents(&t).unwrap())
    };
    assert_eq!(reopen().unwrap().len(), RECORDS as usize);
    let mut bytes = std::fs::read(&path).unwrap();
    let blob = u64::from_le_bytes(bytes[(head + SLOTS_AT + 8) as usize..][..8].try_into().unwrap());
    bytes[blob as usize + 20] ^= 0x40; // inside the first record's key
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(reopen(), Err(Error::Corruption { .. })));
}

#[test]
fn every_cleared_valid_bit_is_corruption() {
    let (base, _, head) = image();
    for slot in 0..RECORDS as u32 {
        let result = open_damaged(&base, |r| flip(r, head + BITMAP_AT, slot));
        assert!(
            matches!(&result, Err(Error::Corruption { reason, .. }) if reason.contains("no write in progress")),
            "slot {slot}: {result:?}"
        );
    }
}
