//! A lookup never misses an entry sitting in a buffer at any level: with every level
//! buffered (`K = 1`) and the `host` profile (all costs 0, so ADAPT empties only past `U` and
//! lookups never move entries), entries rest in buffers on several levels at once, shadowing
//! older values below them; every key reads back as the oracle says, and the lookups change
//! nothing.

use std::collections::BTreeMap;

use lamina_latree::node::NodeLayout;
use lamina_latree::tree::{LaTree, LaTreeOptions};
use lamina_storage::{DeviceProfile, MemoryStorage};

fn options() -> LaTreeOptions {
    let mut options = LaTreeOptions::for_device(DeviceProfile::host());
    options.node_bytes = NodeLayout::node_bytes_min_for(12, 8);
    options.key_bytes_max = 12;
    options.value_bytes_max = 8;
    options.levels_per_buffer = 1;
    options.buffer_entries_max = 16;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 1024;
    options
}

fn key(k: u32) -> Vec<u8> {
    format!("{k:012}").into_bytes()
}

#[test]
fn lookups_find_entries_in_buffers_at_every_level() {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, options()).unwrap();
    let mut oracle = BTreeMap::new();
    // Three rounds over the keys: values, overwrites, and deletes of every third key, so
    // newer entries in upper buffers shadow older ones in lower buffers and the leaves.
    for round in 0..3u32 {
        for i in 0..1500u32 {
            let k = key((i * 7) % 1500);
            if round == 2 && i % 3 == 0 {
                tree.delete(&k).unwrap();
                oracle.remove(&k);
            } else {
                let value = format!("{round}:{i}").into_bytes();
                tree.put(&k, &value).unwrap();
                oracle.insert(k, value);
            }
        }
    }
    let stats = tree.verify().unwrap();
    let levels_with_entries =
        stats.buffer_entries_per_level.iter().filter(|&&entries| entries > 0).count();
    assert!(stats.root_level >= 3, "{stats:?}");
    assert!(levels_with_entries >= 3, "entries wait on several levels: {stats:?}");
    let before = (tree.counters(), stats);
    for i in 0..1600u32 {
        assert_eq!(tree.get(&key(i)).unwrap(), oracle.get(&key(i)).cloned(), "key {i}");
    }
    assert_eq!((tree.counters(), tree.verify().unwrap()), before, "lookups moved nothing");
    let all = tree.range(&key(0), None, usize::MAX).unwrap();
    assert_eq!(all, oracle.into_iter().collect::<Vec<_>>());
}
