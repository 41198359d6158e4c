//! Section 4.3's reclamation keeps a churning tree in bounded space: overwrites and deletes
//! over a small key set, many times the partition size, on `nand-toshiba` (nodes out of
//! place, both files partitioned) and `ssd-msp7525` (nodes in place copy-on-write, the
//! buffer file partitioned), crash consistent (checkpoints committed now and then, the old
//! partition erased after each commit) and not. Checked at every step: the tree equals a
//! `BTreeMap` oracle on every lookup (lookups interleaved with the updates, so some run
//! right before and after a reclamation and some trigger one), `verify()` now and then, and
//! the bytes of the tree's files stay under the stated bound (`tree/reclaim.rs`):
//! `2 * (max(partition_bytes, 2 * live_max) + W_max)` plus the in-place node file, `W_max`
//! the largest growth of the active partition in one operation. Deterministic: sizes and
//! counts, never time. Memory backend.

use std::collections::BTreeMap;

use lamina_latree::node::NodeLayout;
use lamina_latree::tree::{LaTree, LaTreeOptions, NODE_FILE, Retired, TREE_FILES};
use lamina_storage::{DeviceProfile, MemoryStorage, OpenMode, Storage};

type Oracle = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u32 = 60;
const PARTITION_BYTES: u64 = 24 << 10;

fn options(device: DeviceProfile, crash_consistent: bool) -> LaTreeOptions {
    let mut options = LaTreeOptions::for_device(device);
    options.node_bytes = NodeLayout::node_bytes_min_for(4, 12).max(96);
    options.key_bytes_max = 4;
    options.value_bytes_max = 12;
    options.buffer_entries_max = 400;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 1024;
    options.crash_consistent = crash_consistent;
    options.partition_bytes = PARTITION_BYTES;
    options
}

fn key(k: u32) -> Vec<u8> {
    format!("{k:04}").into_bytes()
}

fn file_bytes(storage: &MemoryStorage, name: &str) -> u64 {
    if !storage.exists(name).unwrap() {
        return 0;
    }
    storage.open(name, OpenMode::Existing).unwrap().len().unwrap()
}

struct Run {
    reclamations: u64,
    total_max: u64,
    bound: u64,
}

fn churn(device: DeviceProfile, crash_consistent: bool, ops: u32) -> Run {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, options(device, crash_consistent)).unwrap();
    let mut oracle = Oracle::new();
    let (mut live_max, mut growth_max, mut total_max, mut bound) = (0u64, 0u64, 0u64, 0u64);
    let reclamations_before = |tree: &LaTree| tree.counters().reclaim.reclamations;
    for i in 0..ops {
        let before = tree.partition_usage();
        let reclaimed = reclamations_before(&tree);
        let x = i.wrapping_mul(7919) % KEYS;
        match i % 7 {
            0 => {
                let got = tree.get(&key(x)).unwrap();
                assert_eq!(got.as_ref(), oracle.get(&key(x)), "op {i}: lookup of {x}");
            }
            5 => {
                tree.delete(&key(x)).unwrap();
                oracle.remove(&key(x));
            }
            _ => {
                let value = vec![(i % 251) as u8; (i % 13) as usize];
                tree.put(&key(x), &value).unwrap();
                oracle.insert(key(x), value);
            }
        }
        let after = tree.partition_usage();
        if reclamations_before(&tree) == reclaimed && after.active == before.active {
            growth_max = growth_max.max(after.used_bytes.saturating_sub(before.used_bytes));
        }
        live_max = live_max.max(after.live_bytes).max(before.live_bytes);
        if crash_consistent && i % 500 == 499 {
            tree.checkpoint().unwrap();
            tree.checkpoint_committed();
        }
        if i % 1000 == 999 {
            tree.verify().unwrap();
        }
        let in_place_nodes =
            if device.name == "nand-toshiba" { 0 } else { file_bytes(&storage, NODE_FILE) };
        let total: u64 = TREE_FILES.iter().map(|n| file_bytes(&storage, n)).sum();
        let partitions = total - in_place_nodes;
        total_max = total_max.max(partitions);
        bound = 2 * (PARTITION_BYTES.max(2 * live_max) + growth_max);
        assert!(partitions <= bound, "{device} op {i}: {partitions} bytes over the bound {bound}");
        // The in-place node file: copy-on-write slots are reused, so it stays near the tree.
        let nodes_bound = 8 * tree.node_cache().store().stats().live_ids * 96 + (16 << 10);
        assert!(in_place_nodes <= nodes_bound, "{device}: node file {in_place_nodes}");
    }
    tree.verify().unwrap();
    let all: Oracle = tree.range(b"", None, usize::MAX).unwrap().into_iter().collect();
    assert_eq!(all, oracle);
    let counters = tree.counters().reclaim;
    eprintln!(
        "{device} crash_consistent={crash_consistent}: {counters:?}, partition files at most \
         {total_max} bytes (bound {bound}, live max {live_max}, growth max {growth_max}), \
         written {} buffer pages, usage {:?}",
        tree.buffer_pool().stats().store.pages_written,
        tree.partition_usage()
    );
    if !crash_consistent {
        assert_eq!(tree.partition_usage().retired, Retired::Erased);
    }
    Run { reclamations: counters.reclamations, total_max, bound }
}

#[test]
fn nand_churn_stays_in_two_partitions() {
    for crash_consistent in [true, false] {
        let run = churn(DeviceProfile::nand_toshiba(), crash_consistent, 30_000);
        assert!(run.reclamations >= 5, "{}", run.reclamations);
        assert!(run.total_max <= run.bound);
        // The bound is meaningful: a few partitions, not the whole history.
        assert!(run.bound <= 6 * PARTITION_BYTES, "bound {}", run.bound);
    }
}

#[test]
fn ssd_churn_keeps_the_buffer_file_bounded() {
    for crash_consistent in [true, false] {
        let run = churn(DeviceProfile::ssd_msp7525(), crash_consistent, 30_000);
        assert!(run.reclamations >= 2, "{}", run.reclamations);
        assert!(run.bound <= 6 * PARTITION_BYTES, "bound {}", run.bound);
    }
}
