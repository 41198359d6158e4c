//! The operations against a model, with splits, leaf removals, updates, scans and reopening,
//! in both leaf-allocation configurations.

mod common;

use std::collections::BTreeMap;

use common::{FILE_ID, check_tree, contents, key, new_tree, value};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_fptree::{FpTree, FpTreeConfig};
use lamina_storage::pmem::SimulatedRegion;

fn configs() -> [FpTreeConfig; 2] {
    [FpTreeConfig::default(), FpTreeConfig::with_leaf_groups()]
}

#[test]
fn inserts_updates_and_deletes_match_a_model_across_splits_and_removals() {
    for config in configs() {
        let (region, tree) = new_tree(8 << 20, config);
        let mut model = BTreeMap::new();
        let n = 2000u64;
        for i in 0..n {
            let i = (i * 7919) % n; // a permutation: splits everywhere
            tree.put(&key(i), &value(i, 0)).unwrap();
            model.insert(key(i), value(i, 0));
        }
        assert!(tree.stats().splits > 20, "{:?}", tree.stats());
        for i in (0..n).step_by(3) {
            tree.put(&key(i), &value(i, 1)).unwrap();
            model.insert(key(i), value(i, 1));
        }
        for i in 0..n {
            if i % 5 != 0 || i >= n / 2 {
                assert!(tree.delete(&key(i)).unwrap());
                model.remove(&key(i));
            }
        }
        assert!(!tree.delete(&key(1)).unwrap(), "deleting twice finds nothing");
        assert!(tree.stats().leaf_removals > 0, "{:?}", tree.stats());
        assert_eq!(contents(&tree).unwrap(), model);
        assert_eq!(check_tree(&tree).unwrap(), model);
        let leaves = tree.stats().leaves;
        drop(tree);
        let reopened = FpTree::<SimulatedRegion>::open(region.crash().into(), config).unwrap();
        assert_eq!(check_tree(&reopened).unwrap(), model);
        assert_eq!(reopened.stats().leaves, leaves);
        let report = reopened.recovery_report();
        assert_eq!((report.logs_replayed, report.stray_blobs_freed), (0, 0), "{report:?}");
        assert_eq!(report.records, model.len());
    }
}

#[test]
fn deleting_everything_leaves_one_empty_leaf_and_frees_the_rest() {
    for config in configs() {
        let (_, tree) = new_tree(4 << 20, config);
        let used_empty = tree.allocator_stats().used_chunks;
        for i in 0..1000 {
            tree.put(&key(i), &value(i, 0)).unwrap();
        }
        for i in 0..1000 {
            assert!(tree.delete(&key(i)).unwrap());
        }
        assert_eq!(tree.stats().leaves, 1);
        assert_eq!(tree.allocator_stats().used_chunks, used_empty, "{config:?}");
        assert!(contents(&tree).unwrap().is_empty());
    }
}

#[test]
fn scans_respect_bounds_and_limits() {
    let (_, tree) = new_tree(4 << 20, FpTreeConfig::default());
    for i in 0..500 {
        tree.put(format!("{i:04}").as_bytes(), b"v").unwrap();
    }
    let got = tree.scan(b"0100", Some(b"0200"), 1000).unwrap();
    assert_eq!(got.len(), 100);
    assert_eq!(got[0].0, b"0100");
    assert_eq!(got[99].0, b"0199");
    let got = tree.scan(b"0450", None, 10).unwrap();
    assert_eq!(got.len(), 10);
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(tree.scan(b"", None, 0).unwrap().is_empty());
}

#[test]
fn limits_are_enforced_and_the_largest_records_work() {
    let (_, tree) = new_tree(8 << 20, FpTreeConfig::default());
    tree.put(&[], b"v").unwrap(); // the empty key is a key, the smallest
    assert_eq!(tree.get(&[]).unwrap(), Some(b"v".to_vec()));
    assert!(tree.put(&[1u8; KEY_BYTES_MAX + 1], b"v").is_err());
    assert!(tree.put(b"k", &[1u8; VALUE_BYTES_MAX + 1]).is_err());
    for i in 0..60u8 {
        let mut k = vec![i; KEY_BYTES_MAX];
        k[0] = i;
        tree.put(&k, &[i; VALUE_BYTES_MAX]).unwrap();
    }
    tree.put(b"empty", b"").unwrap();
    assert_eq!(tree.get(b"empty").unwrap(), Some(Vec::new()));
    assert_eq!(tree.get(&[5u8; KEY_BYTES_MAX]).unwrap(), Some(vec![5u8; VALUE_BYTES_MAX]));
    check_tree(&tree).unwrap();
}

#[test]
fn a_full_region_gives_no_space_and_changes_nothing() {
    let (_, tree) = new_tree(256 << 10, FpTreeConfig::default());
    let mut model = BTreeMap::new();
    let mut refused = 0;
    for i in 0..2000 {
        match tree.put(&key(i), &[7u8; 600]) {
            Ok(()) => {
                model.insert(key(i), vec![7u8; 600]);
            }
            Err(lamina_core::Error::NoSpace { .. }) => refused += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(refused > 0);
    assert_eq!(check_tree(&tree).unwrap(), model);
}

#[test]
fn reopening_an_empty_region_initializes_it_once() {
    let region = common::region(1 << 20);
    drop(lamina_storage::pmem::PmemAllocator::format(region.clone(), FILE_ID, 64).unwrap());
    let tree = FpTree::<SimulatedRegion>::open(region.clone(), FpTreeConfig::default()).unwrap();
    assert!(tree.recovery_report().initialized);
    tree.put(b"a", b"1").unwrap();
    let tree =
        FpTree::<SimulatedRegion>::open(region.crash().into(), FpTreeConfig::default()).unwrap();
    assert!(!tree.recovery_report().initialized);
    assert_eq!(tree.get(b"a").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn the_read_latency_knob_charges_leaf_visits_and_blob_reads() {
    let (_, tree) = new_tree(1 << 20, FpTreeConfig::default());
    tree.put(b"a", b"1").unwrap();
    assert_eq!(tree.stats().read_misses, 0, "off by default");
    tree.set_read_latency_ns(10).unwrap();
    assert_eq!(tree.get(b"a").unwrap(), Some(b"1".to_vec()));
    // The leaf, the probed key, the record.
    assert_eq!(tree.stats().read_misses, 3);
    assert!(tree.set_read_latency_ns(2_000_000).is_err());
}
