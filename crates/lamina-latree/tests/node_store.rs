//! The node store: in-place vs out-of-place writes (exact I/O counts), free ids, damaged pages
//! named by file and offset, snapshots, rebuilding the node table, a full partition and
//! failed writes.

use std::sync::Arc;

use lamina_core::Error;
use lamina_core::codec::{Decode, Encode};
use lamina_latree::node::{
    LeafNode, Node, NodeId, NodeLayout, NodeStore, NodeStoreOptions, Placement, StoreSnapshot,
};
use lamina_storage::{
    DeviceProfile, FailKind, FaultPlan, FaultyStorage, MemoryStorage, OpenMode, Storage,
};

const NAME: &str = "latree.nodes";

fn options(placement: Placement, slots_max: u64) -> NodeStoreOptions {
    NodeStoreOptions { layout: NodeLayout::new(512, 16, 16).unwrap(), placement, slots_max }
}

fn leaf(tag: u8) -> Node {
    let layout = NodeLayout::new(512, 16, 16).unwrap();
    let mut leaf = LeafNode::new();
    leaf.upsert(&layout, &[b'k', tag], &[tag; 8]).unwrap();
    Node::Leaf(leaf)
}

/// Writes nodes 2, 0, 1, then 0 again.
fn write_pattern(store: &NodeStore) {
    for expected in 0..3 {
        assert_eq!(store.allocate().unwrap(), NodeId(expected));
    }
    for (id, tag) in [(2, 2), (0, 0), (1, 1), (0, 10)] {
        store.write(NodeId(id), &leaf(tag)).unwrap();
    }
}

#[test]
fn in_place_rewrites_a_node_at_its_slot() {
    let storage = MemoryStorage::new();
    let store = NodeStore::create(&storage, NAME, options(Placement::InPlace, 100)).unwrap();
    write_pattern(&store);
    let io = storage.io_stats();
    assert_eq!(io.writes(), 4);
    assert_eq!(io.bytes_written, 4 * 512);
    // Offsets 1024 (first access, not at 0), 0, 512 (continues), 0 again.
    assert_eq!((io.writes_random, io.writes_sequential), (3, 1));
    let file = storage.open(NAME, OpenMode::Existing).unwrap();
    assert_eq!(file.len().unwrap(), 3 * 512, "three slots, one per node");
    assert_eq!(store.offset_of(NodeId(0)), Some(0));
    assert_eq!(store.offset_of(NodeId(2)), Some(1024));
    assert_eq!(store.read(NodeId(0)).unwrap(), leaf(10));
    assert_eq!(storage.io_stats().reads(), 1);
    assert_eq!(store.stats().dead_slots, 0);
    assert_eq!((store.stats().node_writes, store.stats().node_reads), (4, 1));
}

#[test]
fn out_of_place_appends_every_write_and_maps_the_latest_copy() {
    let storage = MemoryStorage::new();
    let store = NodeStore::create(&storage, NAME, options(Placement::OutOfPlace, 100)).unwrap();
    write_pattern(&store);
    let io = storage.io_stats();
    assert_eq!(io.writes(), 4);
    assert_eq!((io.writes_random, io.writes_sequential), (0, 4), "all appends");
    let file = storage.open(NAME, OpenMode::Existing).unwrap();
    assert_eq!(file.len().unwrap(), 4 * 512, "four copies");
    assert_eq!(store.offset_of(NodeId(2)), Some(0));
    assert_eq!(store.offset_of(NodeId(0)), Some(3 * 512), "the rewrite went to the head");
    assert_eq!(store.read(NodeId(0)).unwrap(), leaf(10));
    assert_eq!(store.stats().dead_slots, 1, "the first copy of node 0");
}

#[test]
fn placement_follows_the_device_profile() {
    assert_eq!(Placement::for_device(&DeviceProfile::nand_toshiba()), Placement::OutOfPlace);
    for ssd in [DeviceProfile::ssd_msp7525(), DeviceProfile::ssd_x25e(), DeviceProfile::host()] {
        assert_eq!(Placement::for_device(&ssd), Placement::InPlace, "{ssd}");
    }
    let nand = NodeStoreOptions::for_device(&DeviceProfile::nand_toshiba(), 16, 16).unwrap();
    assert_eq!((nand.placement, nand.layout.node_bytes()), (Placement::OutOfPlace, 512));
}

#[test]
fn freed_ids_are_reused_only_after_a_durable_commit() {
    for placement in [Placement::InPlace, Placement::OutOfPlace] {
        let storage = MemoryStorage::new();
        let store = NodeStore::create(&storage, NAME, options(placement, 100)).unwrap();
        write_pattern(&store);
        store.free(NodeId(1)).unwrap();
        assert_eq!(store.offset_of(NodeId(1)), None);
        assert!(store.free(NodeId(1)).is_err(), "double free");
        assert!(store.free(NodeId(50)).is_err(), "never allocated");
        let err = store.read(NodeId(1)).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
        assert_eq!(store.allocate().unwrap(), NodeId(3), "{placement:?}");
        store.commit_durable();
        assert_eq!(store.allocate().unwrap(), NodeId(1), "{placement:?}");
        assert_eq!(store.stats().live_ids, 4);
    }
}

#[test]
fn damaged_or_missing_pages_are_corruption_naming_file_and_offset() {
    for placement in [Placement::InPlace, Placement::OutOfPlace] {
        let storage = MemoryStorage::new();
        let store = NodeStore::create(&storage, NAME, options(placement, 100)).unwrap();
        write_pattern(&store);
        let offset = store.offset_of(NodeId(1)).unwrap();
        let file = storage.open(NAME, OpenMode::Existing).unwrap();
        file.write_all_at(offset + 50, &[0xee]).unwrap();
        match store.read(NodeId(1)).unwrap_err() {
            Error::Corruption { file, offset: at, reason } => {
                assert_eq!(file, storage.path_of(NAME));
                assert!((offset..offset + 512).contains(&at), "{at} outside the page at {offset}");
                assert!(reason.contains("checksum"), "{reason}");
            }
            other => panic!("{other}"),
        }
        // A page holding another node.
        let other = store.offset_of(NodeId(2)).unwrap();
        let mut page = vec![0; 512];
        file.read_exact_at(other, &mut page).unwrap();
        file.write_all_at(store.offset_of(NodeId(0)).unwrap(), &page).unwrap();
        let err = store.read(NodeId(0)).unwrap_err().to_string();
        assert!(err.contains("node 2 found"), "{err}");
    }
    // In place, an allocated node never written lies past the end of the file.
    let storage = MemoryStorage::new();
    let store = NodeStore::create(&storage, NAME, options(Placement::InPlace, 100)).unwrap();
    let id = store.allocate().unwrap();
    assert!(matches!(store.read(id).unwrap_err(), Error::Corruption { offset: 0, .. }));
}

#[test]
fn a_snapshot_reopens_the_store_and_refuses_damage() {
    for placement in [Placement::InPlace, Placement::OutOfPlace, Placement::CopyOnWrite] {
        let storage = MemoryStorage::new();
        let store = NodeStore::create(&storage, NAME, options(placement, 100)).unwrap();
        write_pattern(&store);
        store.free(NodeId(2)).unwrap();
        let bytes = store.snapshot().encode();
        let snapshot = StoreSnapshot::decode(&bytes).unwrap();
        // Pending frees decode as free (they are, in the state the snapshot records).
        assert_eq!(snapshot.encode(), bytes);
        assert_eq!(snapshot.write_seq, 4);
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            assert!(StoreSnapshot::decode(&bad).is_err(), "{placement:?} byte {at}");
        }
        assert!(StoreSnapshot::decode(&bytes[..bytes.len() - 1]).is_err());
        drop(store);
        let other = match placement {
            Placement::InPlace => Placement::OutOfPlace,
            Placement::OutOfPlace => Placement::CopyOnWrite,
            Placement::CopyOnWrite => Placement::InPlace,
        };
        let err = NodeStore::open(&storage, NAME, options(other, 100), snapshot.clone());
        assert!(matches!(err, Err(Error::Incompatible { .. })));
        let store = NodeStore::open(&storage, NAME, options(placement, 100), snapshot).unwrap();
        assert_eq!(store.read(NodeId(0)).unwrap(), leaf(10));
        assert_eq!(store.read(NodeId(1)).unwrap(), leaf(1));
        assert!(store.read(NodeId(2)).is_err(), "freed before the snapshot");
        assert_eq!(store.allocate().unwrap(), NodeId(2), "free in the snapshot");
        store.write(NodeId(2), &leaf(20)).unwrap();
        assert_eq!(store.snapshot().write_seq, 5, "sequence numbers continue");
    }
}

#[test]
fn the_node_table_is_rebuilt_by_scanning_the_partition() {
    let storage = MemoryStorage::new();
    let store = NodeStore::create(&storage, NAME, options(Placement::OutOfPlace, 100)).unwrap();
    write_pattern(&store);
    store.write(NodeId(1), &leaf(11)).unwrap();
    let before = store.snapshot().table.unwrap();
    drop(store);
    let (store, damaged) =
        NodeStore::open_rebuilding(&storage, NAME, options(Placement::OutOfPlace, 100)).unwrap();
    assert!(damaged.is_empty());
    assert_eq!(store.snapshot().table.unwrap(), before);
    assert_eq!(store.read(NodeId(1)).unwrap(), leaf(11));
    assert_eq!(store.snapshot().write_seq, 5);
    // Damage the dead first copy of node 0 (slot 1): reported, the latest copy still wins.
    let file = storage.open(NAME, OpenMode::Existing).unwrap();
    file.write_all_at(512 + 50, &[0xab]).unwrap();
    drop(store);
    let (store, damaged) =
        NodeStore::open_rebuilding(&storage, NAME, options(Placement::OutOfPlace, 100)).unwrap();
    assert_eq!(damaged, [1]);
    assert_eq!(store.read(NodeId(0)).unwrap(), leaf(10));
    assert!(
        NodeStore::open_rebuilding(&storage, NAME, options(Placement::InPlace, 100)).is_err(),
        "in place has no table to rebuild"
    );
}

#[test]
fn a_full_partition_refuses_writes_and_changes_nothing() {
    let storage = MemoryStorage::new();
    let store = NodeStore::create(&storage, NAME, options(Placement::OutOfPlace, 4)).unwrap();
    write_pattern(&store);
    let err = store.write(NodeId(1), &leaf(99)).unwrap_err();
    assert!(matches!(&err, Error::NoSpace { context } if context.contains("4 slots")), "{err}");
    assert_eq!(store.read(NodeId(1)).unwrap(), leaf(1));
    assert_eq!(storage.io_stats().writes(), 4);
    let zero = NodeStoreOptions { slots_max: 0, ..options(Placement::InPlace, 1) };
    assert!(NodeStore::create(&MemoryStorage::new(), NAME, zero).is_err());
}

#[test]
fn a_failed_write_leaves_the_previous_copy_mapped() {
    // Op 1 opens the file; ops 2..=5 are the pattern's writes; op 6 fails.
    let plan = FaultPlan::none().fail_at(6, FailKind::Eio, false);
    let storage = FaultyStorage::new(Arc::new(MemoryStorage::new()), plan).unwrap();
    let store = NodeStore::create(&storage, NAME, options(Placement::OutOfPlace, 100)).unwrap();
    write_pattern(&store);
    assert!(matches!(store.write(NodeId(1), &leaf(42)), Err(Error::Io { .. })));
    assert_eq!(store.offset_of(NodeId(1)), Some(2 * 512));
    assert_eq!(store.read(NodeId(1)).unwrap(), leaf(1));
    store.write(NodeId(1), &leaf(43)).unwrap();
    assert_eq!(store.offset_of(NodeId(1)), Some(4 * 512), "the failed slot is reused");
    assert_eq!(store.read(NodeId(1)).unwrap(), leaf(43));
}

#[test]
fn copy_on_write_moves_a_checkpointed_node_once_and_reuses_slots_after_the_commit() {
    let storage = MemoryStorage::new();
    let store = NodeStore::create(&storage, NAME, options(Placement::CopyOnWrite, 100)).unwrap();
    // Nodes written since the last checkpoint are rewritten in place: 2 -> 0, 0 -> 1, 1 -> 2.
    write_pattern(&store);
    assert_eq!(store.offset_of(NodeId(0)), Some(512), "rewritten in its own slot");
    let committed = store.checkpoint();
    store.commit_durable();
    // After the checkpoint node 0 moves once, then stays; node 1's slot is vacated.
    store.write(NodeId(0), &leaf(30)).unwrap();
    assert_eq!(store.offset_of(NodeId(0)), Some(3 * 512));
    store.write(NodeId(0), &leaf(31)).unwrap();
    assert_eq!(store.offset_of(NodeId(0)), Some(3 * 512));
    store.free(NodeId(1)).unwrap();
    let stats = store.stats();
    assert_eq!((stats.slots, stats.free_slots, stats.dead_slots), (4, 0, 2));
    // The committed checkpoint still reads as it was.
    let old =
        NodeStore::open(&storage, NAME, options(Placement::CopyOnWrite, 100), committed).unwrap();
    for (id, tag) in [(0, 10), (1, 1), (2, 2)] {
        assert_eq!(old.read(NodeId(id)).unwrap(), leaf(tag));
    }
    drop(old);
    // Vacated slots wait for the next checkpoint's commit, not the current one's.
    store.commit_durable();
    assert_eq!(store.stats().free_slots, 0);
    store.checkpoint();
    assert_eq!(store.stats().free_slots, 0, "not before the commit");
    store.commit_durable();
    assert_eq!(store.stats().free_slots, 2);
    store.write(NodeId(2), &leaf(22)).unwrap();
    assert_eq!(store.offset_of(NodeId(2)), Some(512), "the lowest free slot");
    assert_eq!(store.stats().slots, 4, "the file did not grow");
    assert_eq!(store.read(NodeId(0)).unwrap(), leaf(31));
    assert_eq!(store.read(NodeId(2)).unwrap(), leaf(22));
}

#[test]
fn a_store_file_cut_before_its_checkpoint_is_corruption() {
    for placement in [Placement::OutOfPlace, Placement::CopyOnWrite] {
        let storage = MemoryStorage::new();
        let store = NodeStore::create(&storage, NAME, options(placement, 100)).unwrap();
        write_pattern(&store);
        let snapshot = store.checkpoint();
        drop(store);
        let file = storage.open(NAME, OpenMode::Existing).unwrap();
        file.set_len(512).unwrap();
        let err = NodeStore::open(&storage, NAME, options(placement, 100), snapshot).unwrap_err();
        let named =
            matches!(&err, Error::Corruption { file, .. } if file.to_string_lossy().contains(NAME));
        assert!(named, "{err}");
    }
}

/// A commit frees a slot the commit before it still names, and a later write of the *same*
/// node takes that slot again: the older commit, opened because the newest was lost
/// (`tests/lost_newest_commit.rs`), finds a valid page of the right node there. Its write
/// sequence number, newer than the older commit's, makes the read `Corruption`; this
/// process's own writes to such slots read normally.
#[test]
fn a_newer_copy_of_the_same_node_in_an_older_commits_slot_is_corruption() {
    let storage = MemoryStorage::new();
    let store = NodeStore::create(&storage, NAME, options(Placement::CopyOnWrite, 100)).unwrap();
    write_pattern(&store);
    let older = store.checkpoint();
    store.commit_durable();
    let node0_slot = store.offset_of(NodeId(0)).unwrap();
    store.write(NodeId(0), &leaf(30)).unwrap(); // moves away from the older commit's slot
    assert_ne!(store.offset_of(NodeId(0)), Some(node0_slot));
    store.checkpoint();
    store.commit_durable(); // the newest commit: node 0's old slot awaits the next one
    store.checkpoint();
    store.commit_durable(); // now free
    store.write(NodeId(0), &leaf(31)).unwrap();
    assert_eq!(store.offset_of(NodeId(0)), Some(node0_slot), "the lowest free slot");
    assert_eq!(store.read(NodeId(0)).unwrap(), leaf(31), "this process's own write");
    drop(store);

    let reopened =
        NodeStore::open(&storage, NAME, options(Placement::CopyOnWrite, 100), older).unwrap();
    for id in [1, 2] {
        reopened.read(NodeId(id)).unwrap(); // untouched since the older commit
    }
    let err = reopened.read(NodeId(0)).unwrap_err();
    match &err {
        Error::Corruption { offset, reason, .. } => {
            assert_eq!(*offset, node0_slot);
            assert!(reason.contains("written after the committed state"), "{reason}");
        }
        other => panic!("expected corruption, got {other}"),
    }
    // Written again by the reopened store (copy-on-write: elsewhere), node 0 reads normally.
    reopened.write(NodeId(0), &leaf(40)).unwrap();
    assert_eq!(reopened.read(NodeId(0)).unwrap(), leaf(40));
}
