//! Inline (fixed-size) records, `FpTreeConfig::inline_records`: the paper's section 4 base
//! case. Records of other sizes are refused and change nothing; a tree of inline records
//! allocates only leaves; it reopens the same; damage to a key is caught by its fingerprint
//! (unless the damaged key has the same fingerprint), damage to a value is not (no checksum
//! in the paper's layout; the engine uses blobs).

mod common;

use std::sync::Arc;

use common::{check_tree, contents};
use lamina_core::Error;
use lamina_fptree::fingerprint::fingerprint;
use lamina_fptree::layout::HEAD_LEAF_PPTR;
use lamina_fptree::leaf::{BITMAP_AT, LEAF_BYTES, SLOTS_AT};
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::{PmemRegion, SimulatedRegion};

fn key(i: u64) -> [u8; 8] {
    (i * 7919).to_be_bytes()
}

fn value(i: u64) -> [u8; 8] {
    (i ^ 0x5555).to_le_bytes()
}

fn config() -> FpTreeConfig {
    FpTreeConfig::default().with_inline_records()
}

fn open(region: SimulatedRegion) -> Result<FpTree<SimulatedRegion>, Error> {
    FpTree::<SimulatedRegion>::open(Arc::new(region), config())
}

#[test]
fn records_of_other_sizes_are_refused_and_change_nothing() {
    let (_, tree) = common::new_tree(1 << 20, config());
    tree.put(&key(1), &value(1)).unwrap();
    let before = contents(&tree).unwrap();
    for (k, v) in [(&b"short"[..], &value(2)[..]), (&key(2)[..], &b"long value"[..]), (b"", b"")] {
        let err = tree.put(k, v).unwrap_err();
        assert!(err.is_invalid_argument(), "{err}");
        assert!(err.to_string().contains("8-byte keys"), "{err}");
    }
    assert_eq!(contents(&tree).unwrap(), before);
    // Reads and deletes of a key no record can have find nothing.
    assert_eq!(tree.get(b"short").unwrap(), None);
    assert!(!tree.delete(b"short").unwrap());
    assert_eq!(tree.config(), config());
}

#[test]
fn a_tree_of_inline_records_allocates_only_leaves_and_reopens_the_same() {
    let (region, tree) = common::new_tree(4 << 20, config());
    for i in 0..3000 {
        tree.put(&key(i), &value(i)).unwrap();
    }
    for i in (0..3000).step_by(3) {
        tree.put(&key(i), &value(i + 1)).unwrap(); // updates (Algorithm 8)
    }
    for i in (0..3000).step_by(5) {
        assert!(tree.delete(&key(i)).unwrap());
    }
    let leaves = tree.list_leaves().unwrap() as u64;
    let leaf_chunks = LEAF_BYTES.div_ceil(64);
    assert_eq!(tree.reachable_chunks().unwrap(), leaves * leaf_chunks);
    let model = check_tree(&tree).unwrap();
    assert_eq!(model.len(), 2400);
    drop(tree);
    let reopened = open(region.crash()).unwrap();
    assert_eq!(reopened.recovery_report().records, 2400);
    assert_eq!(reopened.config(), config(), "the header keeps the layout");
    assert_eq!(check_tree(&reopened).unwrap(), model);
    // Opened asking for blobs, the tree keeps its inline records.
    drop(reopened);
    let as_blobs =
        FpTree::<SimulatedRegion>::open(Arc::new(region.crash()), FpTreeConfig::default()).unwrap();
    assert!(as_blobs.config().inline_records);
    assert_eq!(contents(&as_blobs).unwrap(), model);
}

#[test]
fn a_damaged_key_is_caught_by_its_fingerprint() {
    let (region, tree) = common::new_tree(1 << 20, config());
    for i in 0..20 {
        tree.put(&key(i), &value(i)).unwrap();
    }
    let model = contents(&tree).unwrap();
    drop(tree);
    let base = region.crash();
    let head = base.load_u64(HEAD_LEAF_PPTR + 8).unwrap();
    let bitmap = base.load_u64(head + BITMAP_AT).unwrap();
    let (mut caught, mut same_fingerprint) = (0, 0);
    for slot in 0..20u64 {
        assert!(bitmap & (1 << slot) != 0);
        let at = head + SLOTS_AT + slot * 16;
        for bit in [0u32, 9, 30, 63] {
            let damaged = base.crash();
            let word = damaged.load_u64(at).unwrap();
            damaged.store_u64(at, word ^ (1 << bit)).unwrap();
            match open(damaged) {
                Err(Error::Corruption { reason, .. }) => {
                    assert!(reason.contains("fingerprint"), "{reason}");
                    caught += 1;
                }
                Err(e) => panic!("slot {slot} bit {bit}: {e}"),
                Ok(tree) => {
                    // The damaged key has the original's fingerprint: the paper's layout
                    // cannot tell (the documented limit of inline records).
                    let original = word.to_le_bytes();
                    let changed = (word ^ (1 << bit)).to_le_bytes();
                    assert_eq!(fingerprint(&original), fingerprint(&changed));
                    assert_ne!(contents(&tree).unwrap(), model);
                    same_fingerprint += 1;
                }
            }
        }
    }
    assert_eq!(caught + same_fingerprint, 80);
    assert!(caught >= 70, "{caught} of 80 caught");
}
