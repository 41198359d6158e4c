//! The [`LaTree`] itself: its parts (node cache, buffer pool, cost model, ADAPT state per
//! buffer), the buffered-level rule, and the node and buffer helpers the operations share.
//!
//! Levels are heights above the leaves (a leaf is level 0). A node carries a buffer when it
//! is the root and inner, or when its level is a positive multiple of `K` (see the README's
//! adaptations: buffers are anchored by height from the leaves, so growing the tree never
//! moves them, and the root always buffers).

use std::collections::HashMap;
use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::Storage;
use parking_lot::Mutex;

use super::options::LaTreeOptions;
use super::reclaim::{Partitions, ReclaimCounters, Retired, Spare};
use crate::adapt::{AdaptOptions, AdaptState, REGISTERS_MAX};
use crate::buffer::{BufferEntry, BufferId as PoolBufferId, BufferPool, BufferStore};
use crate::cost::{CostModel, TreeShape};
use crate::node::{
    BufferId, InnerNode, LeafNode, Node, NodeCache, NodeCacheOptions, NodeId, NodeLayout,
    NodeStore, NodeStoreOptions, Placement,
};

/// File of the node store (on raw NAND, out of place: partition 0's node file).
pub const NODE_FILE: &str = "latree.nodes";
/// File of the buffer store in partition 0.
pub const BUFFER_FILE: &str = "latree.buffers";
/// Partition 1's node file (out-of-place node stores only; section 4.3, `reclaim.rs`).
pub const NODE_FILE_1: &str = "latree.nodes.1";
/// Partition 1's buffer file.
pub const BUFFER_FILE_1: &str = "latree.buffers.1";
/// Every file a tree may have.
pub const TREE_FILES: [&str; 4] = [NODE_FILE, BUFFER_FILE, NODE_FILE_1, BUFFER_FILE_1];
/// Node slots of the node store (out of place: of one partition, dead copies included).
pub const NODE_SLOTS_MAX: u64 = 1 << 24;

/// The node file of `partition` for a store placed `placement`: out of place, one per
/// partition; otherwise the one file (nodes are not reclaimed, section 4.3).
pub fn node_file(placement: Placement, partition: u8) -> &'static str {
    match (placement, partition) {
        (Placement::OutOfPlace, 1) => NODE_FILE_1,
        _ => NODE_FILE,
    }
}

/// The buffer file of `partition`.
pub fn buffer_file(partition: u8) -> &'static str {
    if partition == 1 { BUFFER_FILE_1 } else { BUFFER_FILE }
}

/// Counters of the tree's own work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeCounters {
    /// Buffers emptied (at an update, a lookup or a parent's emptying).
    pub emptyings: u64,
    /// Node splits (one per split node, whatever its pieces).
    pub splits: u64,
    /// Sibling merges.
    pub merges: u64,
    /// Times the tree grew a level.
    pub grows: u64,
    /// Splits, borrows and merges of buffered nodes whose buffers held entries, which were
    /// moved to the node whose range holds them.
    pub buffers_redistributed: u64,
    /// Entries of the buffers emptied, summed at each emptying (the effective buffer sizes
    /// `B_i` ADAPT chose, Figure 6(b); in a cascade, the buffer's entries plus the batch).
    pub entries_emptied: u64,
    /// The largest buffer emptied, in entries.
    pub emptied_entries_max: u64,
    /// Drain steps (`drain.rs`): one child's share of a root emptying handed down.
    pub drain_steps: u64,
    /// Emptyings of the root's buffer (included in `emptyings`).
    pub root_emptyings: u64,
    /// Entries of the root buffers emptied (included in `entries_emptied`).
    pub root_entries_emptied: u64,
    /// Section 4.3's reclamation (`reclaim.rs`).
    pub reclaim: ReclaimCounters,
}

/// The LA-tree, single-threaded (issue 18's tree core; no log, no recovery yet).
#[derive(Debug)]
pub struct LaTree {
    pub(super) options: LaTreeOptions,
    pub(super) layout: NodeLayout,
    /// Shared with the engine's checkpointer, which writes dirty nodes back ahead of a
    /// checkpoint ([`NodeCache::write_back_some`]).
    pub(super) nodes: Arc<NodeCache>,
    pub(super) pool: BufferPool,
    pub(super) cost: CostModel,
    pub(super) root: NodeId,
    /// The root's level (`H - 1`).
    pub(super) root_level: u8,
    pub(super) next_seq: u64,
    pub(super) next_buffer: u64,
    /// ADAPT's state per buffer, behind its own lock: a lookup with shared access to the
    /// tree ([`LaTree::lookup_pass`]) updates the registers of the buffers it passes.
    pub(super) adapt: Mutex<HashMap<BufferId, AdaptState>>,
    pub(super) counters: TreeCounters,
    /// Buffers taken for emptying so far ([`LaTree::take_buffer`]), and drain steps
    /// (`drain.rs`): only these move entries between buffers or change the tree's shape, so
    /// a root-to-node path seen when this was `n` still holds while it is `n`
    /// ([`super::ops::EmptyWish`]).
    pub(super) buffers_taken: u64,
    /// The root buffer's entries being handed down, one child at a time (`drain.rs`).
    pub(super) draining: Option<super::drain::Draining>,
    /// The active partition and the other one (`reclaim.rs`).
    pub(super) partitions: Partitions,
    /// Set while a reclamation empties every buffer: every buffered node empties.
    pub(super) force_empty: bool,
    /// A checkpoint was taken and is not yet committed (`checkpoint_unsynced` until
    /// `checkpoint_committed`): no reclamation starts meanwhile.
    pub(super) checkpoint_in_flight: bool,
}

impl LaTree {
    /// Creates an empty tree (one empty leaf) in `storage`, whose files must not exist.
    pub fn create(storage: &dyn Storage, options: LaTreeOptions) -> Result<Self> {
        options.validate()?;
        let layout =
            NodeLayout::new(options.node_bytes, options.key_bytes_max, options.value_bytes_max)?;
        let store_options = node_store_options(&options, layout);
        let store = NodeStore::create(storage, NODE_FILE, store_options)?;
        let buffers = BufferStore::create(storage, BUFFER_FILE, options.buffer_page_bytes)?;
        let spare = Spare::open(storage, store_options.placement, 1)?;
        let partitions = Partitions::new(0, Some(spare), Retired::Erased);
        let mut tree = Self::assemble(options, layout, store, buffers, partitions)?;
        tree.root = tree.nodes.allocate()?;
        tree.nodes.put(tree.root, Node::Leaf(LeafNode::new()))?;
        Ok(tree)
    }

    /// The tree over `store` and `buffers` with an empty pool and no root yet (`create` and
    /// `open` set it).
    pub(super) fn assemble(
        options: LaTreeOptions,
        layout: NodeLayout,
        store: NodeStore,
        buffers: BufferStore,
        partitions: Partitions,
    ) -> Result<Self> {
        let mut cache_options =
            NodeCacheOptions::from_memory_budget(options.memory_bytes, options.node_cache_percent)?;
        let pool_bytes = cache_options.buffer_pool_bytes(options.memory_bytes) as u64;
        // The extra bytes are cache only: the pool keeps the paper's share of `memory_bytes`.
        cache_options.budget_bytes =
            cache_options.budget_bytes.saturating_add(options.node_cache_extra_bytes);
        let nodes = Arc::new(NodeCache::new(store, cache_options));
        let pool = BufferPool::new(buffers, pool_bytes)?;
        let (_, fanout) = layout.fanout_for(options.key_bytes_max, 0);
        let shape = TreeShape {
            node_bytes: u64::from(options.node_bytes),
            entry_bytes: options.mean_entry_bytes,
            fanout: (fanout as u64).max(2),
        };
        let cost = CostModel::new(&options.device, shape)?;
        Ok(LaTree {
            options,
            layout,
            nodes,
            pool,
            cost,
            root: NodeId(0),
            root_level: 0,
            next_seq: 1,
            next_buffer: 1,
            adapt: Mutex::new(HashMap::new()),
            counters: TreeCounters::default(),
            buffers_taken: 0,
            draining: None,
            partitions,
            force_empty: false,
            checkpoint_in_flight: false,
        })
    }

    /// The options.
    pub fn options(&self) -> &LaTreeOptions {
        &self.options
    }

    /// The node layout.
    pub fn layout(&self) -> &NodeLayout {
        &self.layout
    }

    /// The tree's counters.
    pub fn counters(&self) -> TreeCounters {
        self.counters
    }

    /// The node cache (its store's counters are the node I/O).
    pub fn node_cache(&self) -> &NodeCache {
        &self.nodes
    }

    /// The node cache, to share: its own lock guards it, so another thread may write its
    /// dirty nodes back while the tree goes on ([`NodeCache::write_back_some`]).
    pub fn node_cache_handle(&self) -> Arc<NodeCache> {
        Arc::clone(&self.nodes)
    }

    /// The buffer pool (its store's counters are the buffer I/O).
    pub fn buffer_pool(&self) -> &BufferPool {
        &self.pool
    }

    /// The root's level (0 while the root is a leaf).
    pub fn root_level(&self) -> u8 {
        self.root_level
    }

    /// Whether a non-root inner node at `level` carries a buffer (never when unbuffered).
    pub(super) fn is_buffered_level(&self, level: u8) -> bool {
        self.options.buffered && level > 0 && level.is_multiple_of(self.options.levels_per_buffer)
    }

    /// The level of the next buffered nodes (or the leaves, 0) strictly below `level`.
    pub(super) fn next_buffered_below(&self, level: u8) -> u8 {
        assert!(level > 0, "only inner nodes have a level below");
        let k = self.options.levels_per_buffer;
        (level - 1) / k * k
    }

    /// A copy of node `id` to change and write back.
    pub(super) fn read(&self, id: NodeId) -> Result<Node> {
        Ok(Node::clone(&*self.nodes.get(id)?))
    }

    /// The cached node `id` itself, to look at (no copy).
    pub(super) fn peek(&self, id: NodeId) -> Result<Arc<Node>> {
        self.nodes.get(id)
    }

    pub(super) fn read_inner(&self, id: NodeId) -> Result<InnerNode> {
        match self.read(id)? {
            Node::Inner(inner) => Ok(inner),
            Node::Leaf(_) => unreachable!("{id} is an inner node"),
        }
    }

    pub(super) fn write(&self, id: NodeId, node: Node) -> Result<()> {
        assert!(node.fits(&self.layout), "only nodes that fit are written");
        self.nodes.put(id, node).map(|_| ())
    }

    pub(super) fn new_buffer(&mut self) -> BufferId {
        let id = BufferId(self.next_buffer);
        self.next_buffer += 1;
        id
    }

    /// Runs `f` on `buffer`'s ADAPT state (created on first use).
    pub(super) fn with_adapt<R>(
        &self,
        buffer: BufferId,
        f: impl FnOnce(&mut AdaptState) -> R,
    ) -> R {
        let options =
            AdaptOptions { registers_max: REGISTERS_MAX, savings_rule: self.options.savings_rule };
        let mut adapt = self.adapt.lock();
        f(adapt.entry(buffer).or_insert_with(|| AdaptState::with_options(options)))
    }

    /// Entries in `buffer`.
    pub(super) fn buffer_len(&self, buffer: BufferId) -> u64 {
        self.pool.buffer_stats(pool_id(buffer)).entries
    }

    /// Reads `buffer` sorted by (key, seq) and forgets it (its ADAPT state too).
    pub(super) fn take_buffer(&mut self, buffer: BufferId) -> Result<Vec<BufferEntry>> {
        let entries = self.pool.sorted_entries(pool_id(buffer))?.collect::<Result<Vec<_>>>()?;
        self.pool.forget(pool_id(buffer));
        self.adapt.get_mut().remove(&buffer);
        self.buffers_taken += 1;
        Ok(entries)
    }

    /// Appends a sorted batch to `buffer` (a no-op for an empty batch).
    pub(super) fn append_batch(&mut self, buffer: BufferId, batch: Vec<BufferEntry>) -> Result<()> {
        self.pool.append_sorted_batch(pool_id(buffer), batch)
    }

    pub(super) fn next_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq = seq.checked_add(1).expect("sequence numbers never run out");
        seq
    }
}

/// How the tree's node store is laid out: the device's placement, made copy-on-write when the
/// tree is crash consistent (`node/store.rs`).
pub(super) fn node_store_options(options: &LaTreeOptions, layout: NodeLayout) -> NodeStoreOptions {
    let mut placement = Placement::for_device(&options.device);
    if options.crash_consistent {
        placement = placement.crash_consistent();
    }
    NodeStoreOptions { layout, placement, slots_max: NODE_SLOTS_MAX }
}

/// The pool's name of a node's buffer.
pub(super) fn pool_id(buffer: BufferId) -> PoolBufferId {
    PoolBufferId(buffer.0)
}

/// Merges two (key, seq)-sorted runs.
pub(super) fn merge_sorted(a: Vec<BufferEntry>, b: Vec<BufferEntry>) -> Vec<BufferEntry> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.cmp_key_seq(y).is_le(),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return out,
        };
        out.push(if take_a { a.next() } else { b.next() }.expect("peeked"));
    }
}
