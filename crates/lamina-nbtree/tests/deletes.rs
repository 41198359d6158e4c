//! Deletes as delta records (paper section 3.2.2) and underfull s-nodes merged like B-tree
//! deletes: after most keys are deleted and the deletes are flushed down, leaves below
//! sigma / 4 beside a sibling and internal s-nodes below `ceil(f / 2)` children are merged,
//! the s-tree shrinks, `verify()` (which checks those floors between jobs) passes, and the
//! content equals the oracle, also after reopening.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::testkit::dump;
use lamina_core::{Durability, OrderedIndex};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};
use lamina_storage::MemoryStorage;

fn stat(db: &NbTree, name: &str) -> u64 {
    db.stats().extra.iter().find(|(n, _)| *n == name).unwrap().1
}

#[test]
fn deleting_most_keys_merges_s_nodes_and_shrinks_the_tree() {
    let storage = Arc::new(MemoryStorage::new());
    let options = NbTreeOptions {
        sigma_bytes: SIGMA_BYTES_MIN,
        page_bytes: 512,
        durability: Durability::None,
        deamortization: Deamortization::Foreground,
        verify_each_flush: true,
        ..NbTreeOptions::default()
    };
    let db = NbTree::open(storage.clone(), &options).unwrap();
    let mut oracle = BTreeMap::new();
    let key = |i: u32| format!("key{:07}", i.wrapping_mul(2_654_435_761) % 10_000_000).into_bytes();
    for i in 0..6000u32 {
        db.put(&key(i), &[i as u8; 60]).unwrap();
        oracle.insert(key(i), vec![i as u8; 60]);
    }
    db.flush_now().unwrap();
    db.verify().unwrap();
    let (nodes_full, height_full) = (stat(&db, "s_nodes"), stat(&db, "s_tree_height"));
    assert!(height_full >= 3, "the inserts must build a deep s-tree (height {height_full})");
    // Delete all but every 50th key, then push the deletes down with more flushes.
    for i in 0..6000u32 {
        if i % 50 != 0 {
            assert!(db.delete(&key(i)).unwrap());
            oracle.remove(&key(i));
        }
    }
    // Keep data flowing down every path: short-lived keys spread over the key space (put,
    // then deleted), whose flushes carry the deletes above down to the leaves.
    let temp = |r: u32, j: u32| {
        format!("key{:07}t", (r * 7919 + j).wrapping_mul(2_246_822_519) % 10_000_000).into_bytes()
    };
    for round in 0..150u32 {
        for j in 0..300u32 {
            db.put(&temp(round, j), &[1u8; 60]).unwrap();
        }
        for j in 0..300u32 {
            assert!(db.delete(&temp(round, j)).unwrap());
        }
    }
    db.flush_now().unwrap();
    if let Err(e) = db.verify() {
        let t = db.stree();
        eprintln!("root {}", t.root);
        for n in t.nodes.values() {
            eprintln!(
                "node {} children {:?} keys {} live {} dtree {}",
                n.id,
                n.children,
                n.keys.len(),
                n.live_bytes,
                n.dtree.is_some()
            );
        }
        panic!("{e}");
    }
    let nodes_after = stat(&db, "s_nodes");
    assert!(
        nodes_after < nodes_full,
        "merges must shrink the s-tree ({nodes_full} s-nodes before, {nodes_after} after)"
    );
    assert_eq!(dump(&db), oracle);
    db.close().unwrap();
    let db = NbTree::open(storage, &options).unwrap();
    db.verify().unwrap();
    assert_eq!(dump(&db), oracle);
}
