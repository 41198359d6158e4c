//! Several threads writing and reading through the optimistic leaf locks (inner nodes:
//! `OlcInner`, the default): no update is lost, readers never see a torn or foreign record, and
//! scans stay sorted, while leaves split and are removed under them.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use common::{check_tree, key, new_tree, value};
use lamina_fptree::FpTreeConfig;

const WRITERS: u64 = 4;
const KEYS: u64 = 1600;
const ROUNDS: u64 = 3;

fn run(config: FpTreeConfig) {
    let (_, tree) = new_tree(32 << 20, config);
    let tree = Arc::new(tree);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (tree, stop) = (tree.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for i in (0..KEYS).step_by(37) {
                    if let Some(v) = tree.get(&key(i)).unwrap() {
                        let prefix = format!("v{i}-");
                        assert!(v.starts_with(prefix.as_bytes()), "key {i} read {v:?}");
                    }
                    reads += 1;
                }
                let scanned = tree.scan(&key(100), None, 300).unwrap();
                assert!(scanned.windows(2).all(|w| w[0].0 < w[1].0), "scan out of order");
            }
            reads
        })
    };
    let barrier = Arc::new(Barrier::new(WRITERS as usize));
    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (tree, barrier) = (tree.clone(), barrier.clone());
            std::thread::spawn(move || {
                // Thread t owns the keys i with i % WRITERS == t, interleaved with the other
                // threads' keys in every leaf.
                for round in 0..ROUNDS {
                    for i in (t..KEYS).step_by(WRITERS as usize) {
                        tree.put(&key(i), &value(i, round)).unwrap();
                    }
                    // Delete a contiguous range (leaves empty and are removed), except in the
                    // last round. The barriers make every leaf of that range empty.
                    barrier.wait();
                    if round + 1 < ROUNDS {
                        for i in (t..KEYS / 2).step_by(WRITERS as usize) {
                            assert!(tree.delete(&key(i)).unwrap());
                        }
                    }
                    barrier.wait();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    for i in 0..KEYS {
        assert_eq!(tree.get(&key(i)).unwrap(), Some(value(i, ROUNDS - 1)), "lost update of {i}");
    }
    let all = check_tree(&tree).unwrap();
    assert_eq!(all.len() as u64, KEYS);
    let stats = tree.stats();
    assert!(stats.splits > 0 && stats.leaf_removals > 0, "{stats:?}");
}

#[test]
fn concurrent_writers_lose_no_update_per_leaf_allocation() {
    run(FpTreeConfig::default());
}

#[test]
fn concurrent_writers_lose_no_update_with_leaf_groups() {
    run(FpTreeConfig { leaf_groups: true, group_leaves: 4, ..FpTreeConfig::default() });
}
