//! The node cache of LA-tree section 4.2: decoded nodes under a byte budget with LRU
//! eviction. The budget is a share of the engine's memory budget (25% by default, the rest
//! going to the buffers' write-coalescing pool; [`NodeCacheOptions::from_memory_budget`]).
//!
//! Nodes are handed out as `Arc<Node>` snapshots: a writer changes a node by [`NodeCache::put`]
//! of a new version, which is dirty until it is written back, on eviction or on
//! [`NodeCache::flush`]. An evicted snapshot stays valid for whoever holds it.
//!
//! Invariants: `bytes` is the sum of the cached nodes' charges and at most the budget after
//! every successful call, except that the node a call returns always stays (a budget smaller
//! than one node caches one node); every dirty node's latest version is in the cache, never
//! only on its way to the store; the LRU order holds each cached id once.
//!
//! Concurrency: one mutex around the map and the LRU order, held across the store I/O of a
//! miss or a write-back, so a miss never reads a page whose write-back is under way. Safe to
//! share between threads; the tree's latches (later) serialize writers of one node.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use lamina_core::{Error, Result};
use parking_lot::Mutex;

use super::layout::NodeId;
use super::page::Node;
use super::store::NodeStore;

/// Default share of the engine's memory budget given to the node cache (section 4.2).
pub const NODE_CACHE_SHARE_PERCENT_DEFAULT: u32 = 25;

/// How large the node cache is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeCacheOptions {
    /// Most bytes of decoded nodes kept ([`Node::memory_bytes`] each).
    pub budget_bytes: usize,
}

impl NodeCacheOptions {
    /// `node_cache_percent` of `memory_bytes` (section 4.2 uses 25%); the rest is the buffer
    /// pool's ([`NodeCacheOptions::buffer_pool_bytes`]).
    pub fn from_memory_budget(memory_bytes: usize, node_cache_percent: u32) -> Result<Self> {
        if !(1..=100).contains(&node_cache_percent) {
            return Err(Error::option(
                "node_cache_percent",
                format!("{node_cache_percent} is not in 1..=100"),
            ));
        }
        let budget_bytes = (memory_bytes as u128 * u128::from(node_cache_percent) / 100) as usize;
        Ok(NodeCacheOptions { budget_bytes })
    }

    /// What is left of `memory_bytes` for the buffer pool after this cache.
    pub fn buffer_pool_bytes(&self, memory_bytes: usize) -> usize {
        memory_bytes.saturating_sub(self.budget_bytes)
    }
}

/// Counters of the node cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeCacheStats {
    /// `get` calls served from memory.
    pub hits: u64,
    /// `get` calls that read the store.
    pub misses: u64,
    /// Nodes dropped to stay within the budget.
    pub evictions: u64,
    /// Dirty nodes written to the store (on eviction or flush).
    pub write_backs: u64,
    /// Nodes cached now.
    pub cached_nodes: u64,
    /// Their charge in bytes.
    pub cached_bytes: u64,
    /// Cached nodes not yet written back.
    pub dirty_nodes: u64,
}

#[derive(Debug)]
struct Cached {
    node: Arc<Node>,
    dirty: bool,
    bytes: usize,
    tick: u64,
}

#[derive(Debug, Default)]
struct CacheState {
    nodes: HashMap<NodeId, Cached>,
    /// Last use -> id, oldest first.
    lru: BTreeMap<u64, NodeId>,
    tick: u64,
    bytes: usize,
    stats: NodeCacheStats,
}

impl CacheState {
    /// The cached `id`, counted as a hit and made most recently used.
    fn hit(&mut self, id: NodeId) -> Option<Arc<Node>> {
        let node = Arc::clone(&self.nodes.get(&id)?.node);
        self.stats.hits += 1;
        self.touch(id);
        Some(node)
    }

    fn touch(&mut self, id: NodeId) {
        self.tick += 1;
        let tick = self.tick;
        let cached = self.nodes.get_mut(&id).expect("touching a cached node");
        self.lru.remove(&cached.tick);
        cached.tick = tick;
        self.lru.insert(tick, id);
    }

    fn insert(&mut self, id: NodeId, node: Arc<Node>, dirty: bool) {
        let bytes = node.memory_bytes();
        self.tick += 1;
        let cached = Cached { node, dirty, bytes, tick: self.tick };
        if let Some(old) = self.nodes.insert(id, cached) {
            self.lru.remove(&old.tick);
            self.bytes -= old.bytes;
        }
        self.lru.insert(self.tick, id);
        self.bytes += bytes;
    }
}

/// The LRU cache of decoded nodes in front of a [`NodeStore`].
#[derive(Debug)]
pub struct NodeCache {
    store: NodeStore,
    options: NodeCacheOptions,
    state: Mutex<CacheState>,
}

impl NodeCache {
    /// A cache of `options.budget_bytes` over `store`.
    pub fn new(store: NodeStore, options: NodeCacheOptions) -> Self {
        NodeCache { store, options, state: Mutex::new(CacheState::default()) }
    }

    /// The store behind the cache (ids, snapshot, stats). Writing through it directly would
    /// bypass dirty cached versions: use [`NodeCache::put`].
    pub fn store(&self) -> &NodeStore {
        &self.store
    }

    /// Node `id`, from memory or read from the store.
    ///
    /// A miss reads the store without holding the cache's lock, so lookups that share the
    /// tree (the engine's shared tree lock) read nodes in parallel. That is sound because a
    /// node is changed or freed only under exclusive access to the tree: while `id` is read,
    /// other callers at most write back other, cached nodes as they evict them. If another
    /// caller cached `id` meanwhile, its copy (the same node) is the one kept.
    pub fn get(&self, id: NodeId) -> Result<Arc<Node>> {
        if let Some(node) = self.state.lock().hit(id) {
            return Ok(node);
        }
        let node = Arc::new(self.store.read(id)?);
        let mut state = self.state.lock();
        if let Some(cached) = state.hit(id) {
            return Ok(cached);
        }
        state.stats.misses += 1;
        self.make_room(&mut state, id, node.memory_bytes())?;
        state.insert(id, Arc::clone(&node), false);
        Ok(node)
    }

    /// Installs `node` (which must fit a page) as the latest version of `id`, dirty. If room
    /// cannot be made (a write-back failed) nothing is installed.
    pub fn put(&self, id: NodeId, node: Node) -> Result<Arc<Node>> {
        assert!(node.fits(self.store.layout()), "{id}: split an overfull node before put");
        // Checked here, not at the write-back much later, where the culprit is gone.
        assert!(self.store.is_allocated(id), "{id}: put of a node id that is not allocated");
        let node = Arc::new(node);
        let mut state = self.state.lock();
        self.make_room(&mut state, id, node.memory_bytes())?;
        state.insert(id, Arc::clone(&node), true);
        Ok(node)
    }

    /// A fresh node id (install its node with [`NodeCache::put`]).
    pub fn allocate(&self) -> Result<NodeId> {
        self.store.allocate()
    }

    /// Drops `id` from the cache (unwritten changes are discarded) and frees it in the store.
    pub fn free(&self, id: NodeId) -> Result<()> {
        let mut state = self.state.lock();
        self.store.free(id)?;
        if let Some(cached) = state.nodes.remove(&id) {
            state.lru.remove(&cached.tick);
            state.bytes -= cached.bytes;
        }
        Ok(())
    }

    /// Writes every dirty node back (in ascending id order) and syncs the store. On an error
    /// the nodes not yet written stay dirty.
    pub fn flush(&self) -> Result<()> {
        self.write_back()?;
        self.store.sync()
    }

    /// Writes every dirty node back (in ascending id order) without syncing (the caller
    /// syncs, [`NodeStore::sync_handle`]). On an error the nodes not yet written stay dirty.
    pub fn write_back(&self) -> Result<()> {
        let mut state = self.state.lock();
        let mut dirty: Vec<NodeId> =
            state.nodes.iter().filter(|(_, c)| c.dirty).map(|(&id, _)| id).collect();
        dirty.sort_unstable();
        for id in dirty {
            let cached = state.nodes.get_mut(&id).expect("listed above");
            self.store.write(id, &cached.node)?;
            cached.dirty = false;
            state.stats.write_backs += 1;
        }
        Ok(())
    }

    /// Writes back up to `nodes_max` dirty nodes (ascending id among those picked) without
    /// syncing; returns how many. The cache's lock is held only for these, so the tree's
    /// operations go on between calls: a checkpoint writes most dirty nodes back this way
    /// before it takes the tree lock (the engine's `checkpoint`). Writing a node back is what
    /// an eviction does at any moment, so any moment is safe. On an error the nodes not yet
    /// written stay dirty.
    pub fn write_back_some(&self, nodes_max: usize) -> Result<usize> {
        let mut state = self.state.lock();
        let mut dirty: Vec<NodeId> = state
            .nodes
            .iter()
            .filter(|(_, c)| c.dirty)
            .map(|(&id, _)| id)
            .take(nodes_max)
            .collect();
        dirty.sort_unstable();
        for &id in &dirty {
            let cached = state.nodes.get_mut(&id).expect("listed above");
            self.store.write(id, &cached.node)?;
            cached.dirty = false;
            state.stats.write_backs += 1;
        }
        Ok(dirty.len())
    }

    /// Counters.
    pub fn stats(&self) -> NodeCacheStats {
        let state = self.state.lock();
        let mut stats = state.stats;
        stats.cached_nodes = state.nodes.len() as u64;
        stats.cached_bytes = state.bytes as u64;
        stats.dirty_nodes = state.nodes.values().filter(|c| c.dirty).count() as u64;
        stats
    }

    /// The budget in bytes.
    pub fn budget_bytes(&self) -> usize {
        self.options.budget_bytes
    }

    /// Evicts least recently used nodes other than `keep` until `incoming` more bytes (in
    /// place of `keep`'s current charge) fit the budget, writing dirty ones back.
    fn make_room(&self, state: &mut CacheState, keep: NodeId, incoming: usize) -> Result<()> {
        let keep_bytes = state.nodes.get(&keep).map_or(0, |c| c.bytes);
        loop {
            if state.bytes - keep_bytes + incoming <= self.options.budget_bytes {
                return Ok(());
            }
            let victim = state.lru.values().copied().find(|&id| id != keep);
            let Some(victim) = victim else { return Ok(()) };
            let cached = &state.nodes[&victim];
            if cached.dirty {
                self.store.write(victim, &cached.node)?;
                state.stats.write_backs += 1;
            }
            let cached = state.nodes.remove(&victim).expect("victim is cached");
            state.lru.remove(&cached.tick);
            state.bytes -= cached.bytes;
            state.stats.evictions += 1;
        }
    }
}
