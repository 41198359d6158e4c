//! `verify()`: every invariant of the tree. Each node passes `verify_node` with its key
//! bounds; children are one level below their parent, so all leaves are at one depth; the
//! leaves are chained left to right by their sibling links, the last with none; exactly the
//! root (when inner) and the inner nodes at buffered levels carry a buffer, no two nodes one
//! (no node and no pool buffer at all when the tree is unbuffered);
//! every buffer entry lies in its node's key range; the pool holds no buffer the tree does
//! not name.

use std::collections::HashSet;

use lamina_core::{Error, Result};

use super::core::{LaTree, NODE_FILE, pool_id};
use crate::node::layout::HEIGHT_MAX;
use crate::node::{BufferId, Node, NodeContext, NodeId, verify_node};

/// What `verify()` counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeStats {
    /// The root's level (0 for a leaf root).
    pub root_level: u8,
    /// Nodes, leaves included.
    pub nodes: u64,
    /// Leaves.
    pub leaves: u64,
    /// Key-value pairs in the leaves.
    pub leaf_entries: u64,
    /// Buffers named by nodes.
    pub buffers: u64,
    /// Entries in those buffers, and in the root's draining batch (`drain.rs`).
    pub buffer_entries: u64,
    /// Entries in the buffers of each level (index: level), the draining batch's at the
    /// root's.
    pub buffer_entries_per_level: [u64; HEIGHT_MAX as usize],
}

struct Walk {
    stats: TreeStats,
    leaves: Vec<(NodeId, Option<NodeId>)>,
    buffers: HashSet<BufferId>,
}

impl LaTree {
    /// Checks every invariant (reads the whole tree and every buffer); the error names the
    /// node and the broken invariant.
    pub fn verify(&self) -> Result<TreeStats> {
        let root_level = self.peek(self.root)?.level();
        if root_level != self.root_level {
            let reason = format!("root at level {root_level}, the tree says {}", self.root_level);
            return Err(broken(self.root, &reason));
        }
        let mut walk = Walk {
            stats: TreeStats { root_level, ..TreeStats::default() },
            leaves: Vec::new(),
            buffers: HashSet::new(),
        };
        self.verify_subtree(self.root, root_level, None, None, &mut walk)?;
        for pair in walk.leaves.windows(2) {
            if pair[0].1 != Some(pair[1].0) {
                return Err(broken(pair[0].0, "the right sibling is not the next leaf"));
            }
        }
        if let Some(&(last, sibling)) = walk.leaves.last()
            && sibling.is_some()
        {
            return Err(broken(last, "the last leaf has a right sibling"));
        }
        if !self.options.buffered
            && (walk.stats.buffers > 0 || self.pool.buffer_ids().next().is_some())
        {
            let reason = "an unbuffered tree (latree-btree) holds a buffer";
            return Err(Error::corruption(NODE_FILE, 0, reason));
        }
        if let Some(draining) = &self.draining {
            // `drain.rs`, invariant 1: a sorted, non-empty batch under a buffered root.
            let left = draining.left();
            let buffered_root =
                self.peek(self.root)?.as_inner().is_some_and(|i| i.buffer.is_some());
            if left.is_empty() || !buffered_root {
                return Err(broken(
                    self.root,
                    "a draining batch that is empty or not under a buffered root",
                ));
            }
            if !left.is_sorted_by(|a, b| a.cmp_key_seq(b).is_le()) {
                return Err(broken(self.root, "the draining batch is not sorted by key and seq"));
            }
            walk.stats.buffer_entries += left.len() as u64;
            walk.stats.buffer_entries_per_level[usize::from(root_level)] += left.len() as u64;
        }
        for buffer in self.pool.buffer_ids() {
            if !walk.buffers.contains(&BufferId(buffer.0)) {
                let reason = format!("the pool holds buffer {buffer:?}, which no node names");
                return Err(Error::corruption(NODE_FILE, 0, reason));
            }
        }
        Ok(walk.stats)
    }

    fn verify_subtree(
        &self,
        id: NodeId,
        level: u8,
        low: Option<&[u8]>,
        high: Option<&[u8]>,
        walk: &mut Walk,
    ) -> Result<()> {
        let node = self.peek(id)?;
        let is_root = id == self.root;
        verify_node(&node, &self.layout, &NodeContext { low, high, is_root })
            .map_err(|reason| broken(id, &reason))?;
        if node.level() != level {
            return Err(broken(
                id,
                &format!("at level {} under a level {} parent", node.level(), level + 1),
            ));
        }
        walk.stats.nodes += 1;
        match &*node {
            Node::Leaf(leaf) => {
                walk.stats.leaves += 1;
                walk.stats.leaf_entries += leaf.len() as u64;
                walk.leaves.push((id, leaf.right_sibling));
            }
            Node::Inner(inner) => {
                let wants_buffer =
                    self.options.buffered && (is_root || self.is_buffered_level(level));
                if inner.buffer.is_some() != wants_buffer {
                    return Err(broken(id, &format!("buffer {:?} at level {level}", inner.buffer)));
                }
                if let Some(buffer) = inner.buffer {
                    if !walk.buffers.insert(buffer) {
                        return Err(broken(id, "a buffer named by two nodes"));
                    }
                    walk.stats.buffers += 1;
                    let contents = self.pool.read(pool_id(buffer))?;
                    for entry in contents.newest_first() {
                        let key = entry.key();
                        if low.is_some_and(|low| key < low) || high.is_some_and(|high| key >= high)
                        {
                            return Err(broken(id, "a buffer entry outside the node's range"));
                        }
                        walk.stats.buffer_entries += 1;
                        walk.stats.buffer_entries_per_level[usize::from(level)] += 1;
                    }
                }
                for index in 0..inner.children.len() {
                    let (child_low, child_high) = inner.child_bounds(index);
                    let child_low = child_low.or(low);
                    let child_high = child_high.or(high);
                    self.verify_subtree(
                        inner.children[index],
                        level - 1,
                        child_low,
                        child_high,
                        walk,
                    )?;
                }
            }
        }
        Ok(())
    }
}

fn broken(id: NodeId, reason: &str) -> Error {
    Error::corruption(NODE_FILE, 0, format!("LA-tree {id}: {reason}"))
}
