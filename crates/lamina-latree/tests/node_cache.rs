//! The node cache: exact hit/miss counts and the store reads they cause, LRU eviction,
//! write-back of dirty nodes on eviction and flush (in place and out of place), failed
//! write-backs losing nothing, the memory split, and sharing between threads.

use std::sync::Arc;

use lamina_core::Error;
use lamina_latree::node::{
    LeafNode, Node, NodeCache, NodeCacheOptions, NodeId, NodeLayout, NodeStore, NodeStoreOptions,
    Placement,
};
use lamina_storage::{FailKind, FaultPlan, FaultyStorage, MemoryStorage, Storage};

const NAME: &str = "latree.nodes";

fn layout() -> NodeLayout {
    NodeLayout::new(512, 16, 16).unwrap()
}

fn leaf(tag: u8) -> Node {
    let mut leaf = LeafNode::new();
    leaf.upsert(&layout(), &[b'k', tag], &[tag; 8]).unwrap();
    Node::Leaf(leaf)
}

/// Every `leaf(tag)` has the same charge.
fn node_charge() -> usize {
    leaf(0).memory_bytes()
}

fn store(storage: &dyn Storage, placement: Placement) -> NodeStore {
    // Out of place, every write-back takes a slot until reclamation (not built) exists.
    let options = NodeStoreOptions { layout: layout(), placement, slots_max: 10_000 };
    NodeStore::create(storage, NAME, options).unwrap()
}

fn cache_of(store: NodeStore, nodes: usize) -> NodeCache {
    NodeCache::new(store, NodeCacheOptions { budget_bytes: nodes * node_charge() })
}

/// A store holding nodes `0..count` (node i is `leaf(i)`), written directly.
fn filled(storage: &dyn Storage, count: u8) -> NodeStore {
    let store = store(storage, Placement::InPlace);
    for i in 0..count {
        let id = store.allocate().unwrap();
        store.write(id, &leaf(i)).unwrap();
    }
    store
}

#[test]
fn every_miss_is_one_read_and_every_hit_none() {
    let storage = MemoryStorage::new();
    let cache = cache_of(filled(&storage, 10), 100);
    let reads_before = storage.io_stats().reads();
    for round in 0..3 {
        for i in 0..10u8 {
            assert_eq!(*cache.get(NodeId(u64::from(i))).unwrap(), leaf(i), "round {round}");
        }
    }
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.hits, stats.evictions), (10, 20, 0));
    assert_eq!(storage.io_stats().reads() - reads_before, 10);
    assert_eq!(stats.cached_nodes, 10);
    assert_eq!(stats.cached_bytes, 10 * node_charge() as u64);
}

#[test]
fn the_least_recently_used_node_is_evicted() {
    let storage = MemoryStorage::new();
    let cache = cache_of(filled(&storage, 10), 3);
    let get = |i: u64| cache.get(NodeId(i)).unwrap();
    for i in [0, 1, 2, 0, 3] {
        get(i);
    }
    // Cached: 2, 0, 3 (1 was the least recently used). 1 misses and evicts 2; 0 hits.
    get(1);
    get(0);
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.hits, stats.evictions), (5, 2, 2));
    assert_eq!(stats.cached_nodes, 3);
    get(2);
    assert_eq!(cache.stats().misses, 6, "2 was evicted");
    assert_eq!(storage.io_stats().writes(), 10, "clean evictions write nothing");
}

#[test]
fn dirty_nodes_are_written_back_on_eviction_and_flush() {
    for placement in [Placement::InPlace, Placement::OutOfPlace] {
        let storage = MemoryStorage::new();
        let cache = cache_of(store(&storage, placement), 3);
        let mut held = Vec::new();
        for i in 0..6u8 {
            let id = cache.allocate().unwrap();
            held.push(cache.put(id, leaf(i)).unwrap());
        }
        assert_eq!(cache.put(NodeId(5), leaf(55)).unwrap().as_ref(), &leaf(55));
        let stats = cache.stats();
        assert_eq!((stats.evictions, stats.write_backs, stats.dirty_nodes), (3, 3, 3));
        assert_eq!(storage.io_stats().writes(), 3);
        assert_eq!(*held[0], leaf(0), "an evicted snapshot stays valid");
        cache.flush().unwrap();
        let io = storage.io_stats();
        assert_eq!((io.writes(), io.syncs), (6, 1), "{placement:?}");
        assert_eq!(cache.stats().dirty_nodes, 0);
        cache.flush().unwrap();
        assert_eq!(storage.io_stats().writes(), 6, "nothing dirty the second time");
        match placement {
            // Evictions of 0, 1, 2 at slots 0..3 then the flush of 3, 4, 5: one stream.
            Placement::InPlace | Placement::CopyOnWrite => assert_eq!(io.writes_random, 0),
            Placement::OutOfPlace => assert_eq!(io.writes_sequential, 6),
        }
        for i in 0..5u8 {
            assert_eq!(cache.store().read(NodeId(u64::from(i))).unwrap(), leaf(i));
        }
        assert_eq!(cache.store().read(NodeId(5)).unwrap(), leaf(55));
    }
}

#[test]
fn rewriting_cached_nodes_costs_in_place_random_writes_and_out_of_place_appends() {
    let mut io = Vec::new();
    for placement in [Placement::InPlace, Placement::OutOfPlace] {
        let storage = MemoryStorage::new();
        let cache = cache_of(store(&storage, placement), 100);
        for i in 0..8u8 {
            let id = cache.allocate().unwrap();
            cache.put(id, leaf(i)).unwrap();
        }
        cache.flush().unwrap();
        // Rewrite every other node and flush again.
        for i in (0..8u8).step_by(2) {
            cache.put(NodeId(u64::from(i)), leaf(100 + i)).unwrap();
        }
        cache.flush().unwrap();
        io.push(storage.io_stats());
        assert_eq!(
            cache.store().stats().dead_slots,
            if placement == Placement::InPlace { 0 } else { 4 }
        );
    }
    let (in_place, out_of_place) = (io[0], io[1]);
    assert_eq!((in_place.writes(), out_of_place.writes()), (12, 12));
    assert_eq!(in_place.writes_random, 4, "each rewrite skips a slot");
    assert_eq!(out_of_place.writes_random, 0);
    assert_eq!(out_of_place.bytes_written, in_place.bytes_written);
}

#[test]
fn freeing_a_dirty_node_writes_nothing() {
    let storage = MemoryStorage::new();
    let cache = cache_of(store(&storage, Placement::InPlace), 10);
    let id = cache.allocate().unwrap();
    cache.put(id, leaf(1)).unwrap();
    cache.free(id).unwrap();
    cache.flush().unwrap();
    assert_eq!(storage.io_stats().writes(), 0);
    assert_eq!(cache.stats().cached_nodes, 0);
    assert!(cache.free(id).is_err(), "double free");
}

#[test]
fn a_failed_write_back_installs_nothing_and_loses_nothing() {
    // Op 1 opens the file; op 2 is the first write-back.
    let plan = FaultPlan::none().fail_at(2, FailKind::Eio, false);
    let storage = FaultyStorage::new(Arc::new(MemoryStorage::new()), plan).unwrap();
    let cache = cache_of(store(&storage, Placement::InPlace), 1);
    let (a, b) = (cache.allocate().unwrap(), cache.allocate().unwrap());
    cache.put(a, leaf(1)).unwrap();
    assert!(matches!(cache.put(b, leaf(2)), Err(Error::Io { .. })));
    let stats = cache.stats();
    assert_eq!((stats.cached_nodes, stats.dirty_nodes, stats.write_backs), (1, 1, 0));
    assert_eq!(*cache.get(a).unwrap(), leaf(1), "still cached and dirty");
    cache.put(b, leaf(2)).unwrap();
    cache.flush().unwrap();
    assert_eq!(cache.store().read(a).unwrap(), leaf(1));
    assert_eq!(cache.store().read(b).unwrap(), leaf(2));
}

#[test]
fn the_memory_budget_is_split_with_the_buffer_pool() {
    let options = NodeCacheOptions::from_memory_budget(1 << 20, 25).unwrap();
    assert_eq!(options.budget_bytes, 256 << 10);
    assert_eq!(options.buffer_pool_bytes(1 << 20), 768 << 10);
    assert_eq!(lamina_latree::node::cache::NODE_CACHE_SHARE_PERCENT_DEFAULT, 25);
    assert!(NodeCacheOptions::from_memory_budget(1 << 20, 0).is_err());
    assert!(NodeCacheOptions::from_memory_budget(1 << 20, 101).is_err());
    assert_eq!(
        NodeCacheOptions::from_memory_budget(usize::MAX, 100).unwrap().budget_bytes,
        usize::MAX
    );
}

#[test]
fn extra_node_cache_bytes_leave_the_buffer_pool_its_share() {
    let mut options =
        lamina_latree::tree::LaTreeOptions::for_device(lamina_storage::DeviceProfile::host());
    options.memory_bytes = 4 << 20;
    options.node_cache_extra_bytes = 15 << 20;
    let storage = MemoryStorage::new();
    let tree = lamina_latree::tree::LaTree::create(&storage, options.clone()).unwrap();
    assert_eq!(tree.node_cache().budget_bytes(), (1 << 20) + (15 << 20));
    assert_eq!(tree.buffer_pool().stats().budget_bytes, 3 << 20);
    options.node_cache_extra_bytes = usize::MAX;
    let err = options.validate().unwrap_err().to_string();
    assert!(err.contains("node_cache_extra_bytes"), "{err}");
}

#[test]
fn threads_share_the_cache_without_losing_updates() {
    const THREADS: u64 = 4;
    const NODES_PER_THREAD: u64 = 16;
    const ROUNDS: u8 = 20;
    let storage = MemoryStorage::new();
    let cache = Arc::new(cache_of(store(&storage, Placement::OutOfPlace), 8));
    for _ in 0..THREADS * NODES_PER_THREAD {
        let id = cache.allocate().unwrap();
        cache.put(id, leaf(0)).unwrap();
    }
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let cache = Arc::clone(&cache);
            std::thread::spawn(move || {
                for round in 1..=ROUNDS {
                    for n in 0..NODES_PER_THREAD {
                        let id = NodeId(t * NODES_PER_THREAD + n);
                        assert_eq!(*cache.get(id).unwrap(), leaf(round - 1));
                        cache.put(id, leaf(round)).unwrap();
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    cache.flush().unwrap();
    for id in 0..THREADS * NODES_PER_THREAD {
        assert_eq!(cache.store().read(NodeId(id)).unwrap(), leaf(ROUNDS));
    }
    assert!(cache.stats().cached_bytes <= 8 * node_charge() as u64);
}

#[test]
#[should_panic(expected = "not allocated")]
fn a_node_id_must_be_allocated_before_it_is_put() {
    let cache = cache_of(store(&MemoryStorage::new(), Placement::InPlace), 10);
    let _ = cache.put(NodeId(3), leaf(1));
}

/// `write_back_some` (a checkpoint's write-back ahead of the tree lock) writes at most the
/// nodes asked, each dirty node once; the written ones are clean and read back from the
/// store as they were; a node put again after its write-back is dirty again.
#[test]
fn write_back_some_writes_at_most_the_nodes_asked() {
    let storage = MemoryStorage::new();
    let cache = cache_of(store(&storage, Placement::CopyOnWrite), 100);
    let ids: Vec<NodeId> = (0..10u8)
        .map(|i| {
            let id = cache.allocate().unwrap();
            cache.put(id, leaf(i)).unwrap();
            id
        })
        .collect();
    assert_eq!(cache.stats().dirty_nodes, 10);
    assert_eq!(cache.write_back_some(4).unwrap(), 4);
    assert_eq!(cache.stats().dirty_nodes, 6);
    assert_eq!(cache.store().stats().node_writes, 4);
    assert_eq!(cache.write_back_some(100).unwrap(), 6);
    assert_eq!(cache.write_back_some(100).unwrap(), 0, "nothing dirty is left");
    assert_eq!(cache.store().stats().node_writes, 10, "each node written once");
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(cache.store().read(id).unwrap(), leaf(i as u8), "node {id}");
    }
    cache.put(ids[3], leaf(33)).unwrap();
    assert_eq!(cache.stats().dirty_nodes, 1);
    assert_eq!(cache.write_back_some(8).unwrap(), 1);
    assert_eq!(cache.store().read(ids[3]).unwrap(), leaf(33));
}
