//! Updates and lookups (section 2.1). An update is appended to the root buffer and ADAPT's
//! `on_update` decides whether the root subtree is emptied; while the root is a leaf (a
//! one-node tree) updates go straight into it. A lookup walks root to leaf; at each buffered
//! node ADAPT's `on_lookup` gets the scan cost and the emptying cost of that subtree
//! (section 3) and either the buffer is scanned (newest entry of the key wins; a buffer higher
//! up is newer than one below, any buffer entry newer than the leaf) or it is emptied and the
//! lookup starts again from the root.

use std::borrow::Cow;

use lamina_core::Result;

use super::core::LaTree;
use super::split::Pieces;
use crate::adapt::Decision;
use crate::buffer::{BufferEntry, BufferOp};
use crate::cost::{SubtreeKind, SubtreeStats};
use crate::node::{BufferId, InnerNode, Node, NodeId};

/// Where one walk of a lookup ([`LaTree::lookup_pass`]) ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupPass {
    /// The answer: the newest entry of the key on its way from the root (a buffer higher
    /// up is newer than one below, any buffer entry newer than the leaf).
    Found(Option<Vec<u8>>),
    /// ADAPT decided to empty a buffer on the way before scanning it.
    Empty(EmptyWish),
}

/// A lookup's wish to empty a buffer, taken by [`LaTree::get_after_pass`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmptyWish {
    /// The root-to-node path at the time of the walk; its last node carries `buffer`.
    pub path: Vec<NodeId>,
    /// The buffer to empty.
    pub buffer: BufferId,
    /// Buffers emptied in the tree's life before the walk: if any was emptied since, the
    /// path may be stale and the wish is dropped (ADAPT asks again at a later lookup if
    /// the buffer still deserves it).
    pub buffers_taken: u64,
}

impl LaTree {
    /// Inserts or overwrites `key` (refused, changing nothing, if the key or value is over
    /// the tree's limits).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.layout.check_entry(key, value)?;
        let seq = self.next_seq;
        let entry = BufferEntry::put(key, value, seq)?;
        self.update(entry)
    }

    /// Deletes `key` (a no-op if absent).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.layout.check_entry(key, b"")?;
        let entry = BufferEntry::delete(key, self.next_seq)?;
        self.update(entry)
    }

    fn update(&mut self, entry: BufferEntry) -> Result<()> {
        self.next_seq();
        let root = self.root;
        // A leaf root, or any root of an unbuffered tree (the B+tree baseline): the entry
        // goes straight down to its leaf.
        let buffer = match *self.peek(root)? {
            Node::Inner(InnerNode { buffer: Some(buffer), .. }) => buffer,
            Node::Inner(_) if self.options.buffered => unreachable!("an inner root buffers"),
            Node::Inner(_) | Node::Leaf(_) => {
                let pieces = self.descend(root, vec![entry])?;
                self.finish_root(pieces)?;
                return self.reclaim_if_due();
            }
        };
        self.pool.append(super::core::pool_id(buffer), entry)?;
        let entries = self.buffer_len(buffer);
        let limit = self.options.buffer_entries_max;
        if let Decision::Empty(_) = self.with_adapt(buffer, |a| a.on_update(entries, limit)) {
            if self.options.drain_root && self.draining.is_none() {
                self.start_draining()?;
            } else {
                // With a draining still going (rare: it takes about a root fanout of
                // updates), the batch goes down with the buffer (`drain.rs`, invariant 3).
                let pieces = self.empty_node(root)?;
                self.finish_root(pieces)?;
            }
        } else {
            self.drain_step()?;
        }
        self.reclaim_if_due()
    }

    /// The value of `key`, if present. (A lookup may empty buffers, so it may reclaim
    /// the partition afterwards, `reclaim.rs`.)
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let found = self.lookup(key, Vec::new())?;
        self.reclaim_if_due()?;
        Ok(found)
    }

    /// Finishes a lookup whose [`LaTree::lookup_pass`] (under shared access) ended in
    /// [`LookupPass::Empty`]: empties the buffer if no buffer was emptied since the walk
    /// (so its path still holds; another call may have emptied that very buffer meanwhile),
    /// then looks up again without offering the lookup to ADAPT a second time for the
    /// buffers in `consulted`.
    pub fn get_after_pass(
        &mut self,
        key: &[u8],
        wish: &EmptyWish,
        consulted: Vec<BufferId>,
    ) -> Result<Option<Vec<u8>>> {
        if self.draining.is_some() {
            // The root changes under a draining only through it (`drain.rs`, invariant 3):
            // finished first; the wish is dropped (its path may be stale now).
            self.finish_draining()?;
        } else if wish.buffers_taken == self.buffers_taken {
            self.empty_on_path(&wish.path)?;
        }
        let found = self.lookup(key, consulted)?;
        self.reclaim_if_due()?;
        Ok(found)
    }

    fn lookup(&mut self, key: &[u8], mut consulted: Vec<BufferId>) -> Result<Option<Vec<u8>>> {
        loop {
            match self.lookup_pass(key, &mut consulted)? {
                LookupPass::Found(found) => return Ok(found),
                // A draining is finished first (`drain.rs`, invariant 3), dropping the wish.
                LookupPass::Empty(_) if self.draining.is_some() => self.finish_draining()?,
                LookupPass::Empty(wish) => self.empty_on_path(&wish.path)?,
            }
        }
    }

    /// One walk of a lookup from the root, changing nothing but ADAPT's registers (so it
    /// needs only shared access to the tree; the engine runs it under its shared lock). At
    /// each buffered node not yet in `consulted` ADAPT's `on_lookup` gets the scan and
    /// emptying costs; if it decides to empty, the walk stops with the path to that node
    /// (the caller empties it and walks again). Buffers offered to ADAPT are added to
    /// `consulted`, so a walk after an emptying does not count the lookup twice for them.
    pub fn lookup_pass(&self, key: &[u8], consulted: &mut Vec<BufferId>) -> Result<LookupPass> {
        let mut path = Vec::new();
        let mut id = self.root;
        loop {
            // The cached node itself, not a copy (a lookup changes no node).
            let node = self.nodes.get(id)?;
            let inner = match &*node {
                Node::Leaf(leaf) => {
                    return Ok(LookupPass::Found(leaf.get(key).map(<[u8]>::to_vec)));
                }
                Node::Inner(inner) => inner,
            };
            path.push(id);
            if let Some(buffer) = inner.buffer {
                if !consulted.contains(&buffer) {
                    consulted.push(buffer);
                    let (stats, kind) = self.subtree_stats(inner, buffer);
                    let costs = self.cost.lookup_costs(&stats, kind);
                    if let Decision::Empty(_) = self.with_adapt(buffer, |a| a.on_lookup(costs)) {
                        let buffers_taken = self.buffers_taken;
                        return Ok(LookupPass::Empty(EmptyWish { path, buffer, buffers_taken }));
                    }
                }
                if let Some(found) = self.pool.find(super::core::pool_id(buffer), key)? {
                    return Ok(LookupPass::Found(match found.op() {
                        BufferOp::Put(value) => Some(value.clone()),
                        BufferOp::Delete => None,
                    }));
                }
            }
            // The root's draining batch: older than its buffer, newer than the child.
            if path.len() == 1
                && let Some(found) = self.draining_find(key)
            {
                return Ok(LookupPass::Found(match found.op() {
                    BufferOp::Put(value) => Some(value.clone()),
                    BufferOp::Delete => None,
                }));
            }
            id = inner.child_for(key);
        }
    }

    /// Section 3's statistics of the subtree of buffered node `inner`, estimated from its
    /// own fanout `c` (see the README): `d` levels down to the next buffered level, `S` the
    /// nodes of those levels (leaves included for a leaf subtree), `L = c^d` leaves, `H` the
    /// whole tree's height.
    pub(super) fn subtree_stats(
        &self,
        inner: &InnerNode,
        buffer: BufferId,
    ) -> (SubtreeStats, SubtreeKind) {
        let below = self.next_buffered_below(inner.level);
        let depth = u32::from(inner.level - below);
        let fanout = inner.children.len() as u64;
        let level_nodes = |i: u32| fanout.saturating_pow(i);
        let buffer_stats = self.pool.buffer_stats(super::core::pool_id(buffer));
        let mut stats = SubtreeStats {
            nodes: (0..depth).map(level_nodes).fold(0, u64::saturating_add),
            buffer_entries: buffer_stats.entries,
            leaves: 0,
            buffer_pages: buffer_stats.pages_spanned,
        };
        if below > 0 {
            return (stats, SubtreeKind::NonLeaf);
        }
        stats.leaves = level_nodes(depth);
        stats.nodes = stats.nodes.saturating_add(stats.leaves);
        (stats, SubtreeKind::Leaf { tree_height: u64::from(self.root_level) + 1 })
    }

    /// Empties the last node of `path` (root first) and puts its pieces in place up to the
    /// root.
    fn empty_on_path(&mut self, path: &[NodeId]) -> Result<()> {
        let (&target, ancestors) = path.split_last().expect("a path to the emptied node");
        // The LA-tree's flush: a buffer emptied into the subtree below it (section 2.3).
        let _span = tracing::debug_span!("latree_emptying", depth = path.len()).entered();
        let mut pieces = self.empty_node(target)?;
        for &parent in ancestors.iter().rev() {
            pieces = self.install(parent, pieces)?;
        }
        self.finish_root(pieces)
    }

    /// Puts `pieces` of a child of `parent` in place, rebalances the child if it is left
    /// underfull and finishes `parent`.
    fn install(&mut self, parent: NodeId, pieces: Pieces) -> Result<Pieces> {
        let mut inner: Cow<'_, InnerNode> = Cow::Owned(self.read_inner(parent)?);
        let child = pieces.first;
        let split = !pieces.rest.is_empty();
        if split {
            let index = inner.children.iter().position(|&c| c == child).expect("a child");
            let (separators, ids): (Vec<_>, Vec<_>) = pieces.rest.into_iter().unzip();
            inner.to_mut().insert_split(index, &separators, &ids);
        }
        let rebalanced = self.fix_underfull(&mut inner, &[child])?;
        if !split && !rebalanced {
            return Ok(Pieces::single(parent)); // unchanged: no write
        }
        self.finish_node(parent, Node::Inner(inner.into_owned()))
    }
}
