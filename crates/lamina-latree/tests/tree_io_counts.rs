//! I/O counts of a fixed sequence are deterministic (asserted exactly, so any change in how
//! the tree reads or writes shows up here), ADAPT empties buffers at lookups when lookups
//! follow updates on a profile with real costs, and bad input changes nothing.

use lamina_core::Error;
use lamina_latree::node::NodeLayout;
use lamina_latree::tree::{LaTree, LaTreeOptions};
use lamina_storage::{DeviceProfile, MemoryStorage};

fn options(device: DeviceProfile) -> LaTreeOptions {
    let mut options = LaTreeOptions::for_device(device);
    options.node_bytes = NodeLayout::node_bytes_min_for(8, 16).max(256);
    options.key_bytes_max = 8;
    options.value_bytes_max = 16;
    options.buffer_entries_max = 64;
    options.buffer_page_bytes = 512;
    options.memory_bytes = 1024;
    options
}

fn key(k: u32) -> Vec<u8> {
    format!("{k:08}").into_bytes()
}

/// (node reads, node writes, buffer units written, buffer pages written, buffer units read,
/// buffer pages read, emptyings, splits, merges, grows) after `run`.
type Counts = [u64; 10];

fn counts(tree: &LaTree) -> Counts {
    let nodes = tree.node_cache().store().stats();
    let buffers = tree.buffer_pool().stats().store;
    let c = tree.counters();
    [
        nodes.node_reads,
        nodes.node_writes,
        buffers.units_written,
        buffers.pages_written,
        buffers.units_read,
        buffers.pages_read,
        c.emptyings,
        c.splits,
        c.merges,
        c.grows,
    ]
}

/// 3000 updates (puts, every third a delete), then 1000 lookups.
fn run(device: DeviceProfile) -> (LaTree, u64) {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, options(device)).unwrap();
    for i in 0..3000u32 {
        let k = key((i * 7919) % 1000);
        if i % 3 == 2 {
            tree.delete(&k).unwrap();
        } else {
            tree.put(&k, &i.to_le_bytes()).unwrap();
        }
    }
    let emptyings_after_updates = tree.counters().emptyings;
    for i in 0..1000u32 {
        tree.get(&key((i * 13) % 1000)).unwrap();
    }
    tree.verify().unwrap();
    (tree, emptyings_after_updates)
}

#[test]
fn io_counts_of_a_fixed_sequence() {
    let (nand, _) = run(DeviceProfile::nand_toshiba());
    let (ssd, _) = run(DeviceProfile::ssd_msp7525());
    // The SSD profile's random reads are cheap next to its writes, so ADAPT empties the
    // root buffer less often at lookups there and the lookups scan it more.
    // Inner nodes an emptying passes through unchanged are not rewritten; a lookup whose
    // key is in a buffer's in-memory tail reads none of its fragments.
    assert_eq!(counts(&nand), [7141, 1825, 46, 46, 77, 77, 46, 71, 0, 2]);
    assert_eq!(counts(&ssd), [6893, 1786, 46, 46, 1024, 1024, 45, 71, 0, 2]);
    let (again, _) = run(DeviceProfile::nand_toshiba());
    assert_eq!(counts(&again), counts(&nand), "deterministic");
}

#[test]
fn adapt_empties_at_lookups_on_the_nand_profile() {
    let (tree, after_updates) = run(DeviceProfile::nand_toshiba());
    assert!(tree.counters().emptyings > after_updates, "{:?}", tree.counters());
    let (host, host_after_updates) = run(DeviceProfile::host());
    assert_eq!(host.counters().emptyings, host_after_updates, "host: free scans never empty");
}

#[test]
fn oversized_keys_and_values_are_refused_and_change_nothing() {
    let storage = MemoryStorage::new();
    let mut tree = LaTree::create(&storage, options(DeviceProfile::nand_toshiba())).unwrap();
    tree.put(b"a", b"1").unwrap();
    let before = tree.verify().unwrap();
    let long_key = [b'k'; 9];
    let long_value = [0u8; 17];
    for result in [
        tree.put(&long_key, b"v"),
        tree.put(b"b", &long_value),
        tree.delete(&long_key),
        tree.put(b"", &long_value),
    ] {
        assert!(matches!(result, Err(Error::InvalidArgument(_))), "{result:?}");
    }
    assert_eq!(tree.verify().unwrap(), before);
    assert_eq!(tree.get(b"a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(tree.get(b"b").unwrap(), None);
}

/// The unbuffered tree (`latree-btree`) pays a B+tree's I/O: a put reads the root-to-leaf
/// path and writes only the leaf (plus the new nodes and the parent when it splits), a get
/// reads the path, and no buffer page is ever written or read.
#[test]
fn an_unbuffered_put_reads_the_path_and_writes_one_leaf() {
    let storage = MemoryStorage::new();
    let mut options = options(DeviceProfile::ssd_msp7525());
    options.buffered = false;
    options.memory_bytes = 1; // the node cache keeps one node: every path read is a miss
    let mut tree = LaTree::create(&storage, options).unwrap();
    for i in 0..2000u32 {
        tree.put(&key(i * 2), b"v").unwrap();
    }
    let stats = tree.verify().unwrap();
    assert!(stats.root_level >= 2, "{stats:?}");
    assert_eq!((stats.buffers, stats.buffer_entries), (0, 0));
    let height = u64::from(stats.root_level) + 1;
    tree.node_cache().flush().unwrap();
    let mut splits_seen = 0;
    let value = [b'w'; 16]; // longer than the preloaded values: leaves fill and split
    for i in 0..400u32 {
        let before = (nodes(&tree), tree.counters().splits);
        // Overwrites (never split) and inserts between existing keys (some split).
        let k = if i % 2 == 0 { key(i * 10) } else { key(2 * i + 1) };
        tree.put(&k, &value).unwrap();
        tree.node_cache().flush().unwrap();
        let after = nodes(&tree);
        let splits = tree.counters().splits - before.1;
        // The path, then on the way up each level re-reads the child it descended to (to
        // check it is not underfull) and the root is read once more: hits in any real cache,
        // misses in this one-node cache.
        let reads = after.node_reads - before.0.node_reads;
        let writes = after.node_writes - before.0.node_writes;
        if splits == 0 {
            assert_eq!(reads, 2 * height - 1, "put {i}: the path");
            assert_eq!(writes, 1, "put {i}: only the leaf");
        } else {
            splits_seen += 1;
            // The leaf, its new sibling and the parent (a parent split adds two per level).
            assert!(writes == 3 || writes > 3 && splits > 1, "put {i}: {writes} {splits}");
        }
        let before_get = nodes(&tree);
        assert_eq!(tree.get(&k).unwrap(), Some(value.to_vec()));
        let after_get = nodes(&tree);
        // The path below the root (the node the cache kept, read last by the put).
        let reads = after_get.node_reads - before_get.node_reads;
        assert_eq!(reads, height - 1, "get {i}: the path");
        assert_eq!(after_get.node_writes, before_get.node_writes);
    }
    assert!(splits_seen > 0, "some inserts split a leaf");
    let buffers = tree.buffer_pool().stats().store;
    assert_eq!((buffers.units_written, buffers.pages_written, buffers.units_read), (0, 0, 0));
    assert_eq!(tree.counters().emptyings, 0);
    tree.verify().unwrap();
}

fn nodes(tree: &LaTree) -> lamina_latree::node::NodeStoreStats {
    tree.node_cache().store().stats()
}
