//! Relocating an out-of-place node store to the other partition (`node/relocate.rs`, the node
//! half of section 4.3's reclamation): reads find each node in the new partition or the
//! draining one, writes and frees take it out of the draining map, the remaining nodes are
//! copied with exact I/O counts, the drained file is never written, a partition that is not
//! erased is refused, and snapshots afterwards name only the new partition.

use lamina_core::Error;
use lamina_latree::node::{
    LeafNode, Node, NodeId, NodeLayout, NodeStore, NodeStoreOptions, Placement,
};
use lamina_storage::{MemoryStorage, OpenMode, Storage};

const OLD: &str = "latree.nodes";
const NEW: &str = "latree.nodes.1";

fn options() -> NodeStoreOptions {
    let layout = NodeLayout::new(512, 16, 16).unwrap();
    NodeStoreOptions { layout, placement: Placement::OutOfPlace, slots_max: 100 }
}

fn leaf(tag: u8) -> Node {
    let layout = NodeLayout::new(512, 16, 16).unwrap();
    let mut leaf = LeafNode::new();
    leaf.upsert(&layout, &[b'k', tag], &[tag; 8]).unwrap();
    Node::Leaf(leaf)
}

#[test]
fn relocation_copies_the_live_nodes_and_never_writes_the_old_partition() {
    let storage = MemoryStorage::new();
    let store = NodeStore::create(&storage, OLD, options()).unwrap();
    for id in 0..5 {
        assert_eq!(store.allocate().unwrap(), NodeId(id));
        store.write(NodeId(id), &leaf(id as u8)).unwrap();
    }
    store.write(NodeId(3), &leaf(30)).unwrap(); // a dead copy of 3 in the old partition
    let old_bytes = storage.read_all(OLD).unwrap();
    assert_eq!(old_bytes.len(), 6 * 512);

    // Not erased: refused, nothing changed.
    let dirty = storage.open(NEW, OpenMode::Create).unwrap();
    dirty.write_all_at(0, &[1]).unwrap();
    let err = store.relocate_begin(dirty.clone(), storage.path_of(NEW)).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(!store.is_relocating());
    dirty.set_len(0).unwrap();

    store.relocate_begin(dirty, storage.path_of(NEW)).unwrap();
    assert!(store.is_relocating());
    // Read from the draining partition.
    assert_eq!(store.read(NodeId(3)).unwrap(), leaf(30));
    assert_eq!(store.offset_of(NodeId(3)), Some(5 * 512));
    // A write goes to the new partition's head; a freed node is not copied.
    store.write(NodeId(1), &leaf(11)).unwrap();
    assert_eq!(store.offset_of(NodeId(1)), Some(0));
    store.free(NodeId(4)).unwrap();
    let writes = storage.io_stats().writes();
    assert_eq!(store.relocate_remaining().unwrap(), 3, "nodes 0, 2 and 3");
    assert_eq!(storage.io_stats().writes() - writes, 3);
    let (file, path) = store.relocate_end();
    assert_eq!(path, storage.path_of(OLD));
    assert_eq!(file.len().unwrap(), 6 * 512);
    assert!(!store.is_relocating());
    assert_eq!(storage.read_all(OLD).unwrap(), old_bytes, "the old partition was not written");
    for (id, tag) in [(0, 0), (1, 11), (2, 2), (3, 30)] {
        assert_eq!(store.read(NodeId(id)).unwrap(), leaf(tag), "node {id}");
    }
    let stats = store.stats();
    assert_eq!((stats.slots, stats.dead_slots, stats.nodes_relocated), (4, 0, 3));
    // Copies in id order after the write of node 1: 0, 2, 3 at slots 1, 2, 3.
    assert_eq!(store.offset_of(NodeId(0)), Some(512));
    assert_eq!(store.offset_of(NodeId(3)), Some(3 * 512));
    let snapshot = store.snapshot();
    assert_eq!(snapshot.table.as_ref().unwrap().head(), 4);
    store.sync().unwrap();
    drop(store);
    // The snapshot opens over the new partition's file alone.
    let store = NodeStore::open(&storage, NEW, options(), snapshot).unwrap();
    assert_eq!(store.read(NodeId(2)).unwrap(), leaf(2));
}
