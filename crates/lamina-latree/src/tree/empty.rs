//! Emptying (section 2.1): a buffer's entries, read sorted (section 2.3), walk its subtree
//! once down to the next buffered level, where each buffer receives its share as one sorted
//! batch (the new Y) and ADAPT's `on_update` decides whether it empties in turn; at the
//! leaves the entries are merged left to right, the latest sequence number of a key winning
//! and deletes removing. Structural changes come back up as [`Pieces`] ([`super::split`]).

use std::borrow::Cow;

use lamina_core::Result;

use super::core::{LaTree, merge_sorted};
use super::split::Pieces;
use crate::adapt::Decision;
use crate::buffer::{BufferEntry, BufferOp};
use crate::node::{LeafNode, Node, NodeId, NodeLayout};

impl LaTree {
    /// `entries` (sorted by key and seq, all within `id`'s key range, newer than anything
    /// below `id`) arrive at node `id`: a buffered node takes them as a batch unless ADAPT
    /// says EMPTY, then passes them and its own entries on; other nodes pass them on.
    pub(super) fn descend(&mut self, id: NodeId, entries: Vec<BufferEntry>) -> Result<Pieces> {
        debug_assert!(entries.is_sorted_by(|a, b| a.cmp_key_seq(b).is_le()));
        let node = self.peek(id)?;
        let buffer = match &*node {
            Node::Leaf(leaf) => {
                let merged = merge_into_leaf(leaf, &self.layout, &entries)?;
                drop(node);
                return self.finish_node(id, Node::Leaf(merged));
            }
            Node::Inner(inner) => inner.buffer,
        };
        match buffer {
            Some(buffer) => {
                let after = self.buffer_len(buffer) + entries.len() as u64;
                let limit = self.options.buffer_entries_max;
                // A reclamation empties every buffer (`reclaim.rs`), without ADAPT.
                if !self.force_empty
                    && let Decision::NotEmpty =
                        self.with_adapt(buffer, |a| a.on_update(after, limit))
                {
                    self.append_batch(buffer, entries)?;
                    return Ok(Pieces::single(id));
                }
                let own = self.take_buffer(buffer)?;
                let all = merge_sorted(own, entries);
                if !all.is_empty() {
                    self.count_emptying(id, all.len());
                }
                self.pass_through(id, &node, all, false)
            }
            None => self.pass_through(id, &node, entries, false),
        }
    }

    /// Empties the buffer of inner node `id` (its ADAPT state is reset) and returns the
    /// node's pieces after the structural changes below it.
    pub(super) fn empty_node(&mut self, id: NodeId) -> Result<Pieces> {
        let node = self.peek(id)?;
        let buffer = node.as_inner().and_then(|inner| inner.buffer);
        let buffer = buffer.expect("only buffered nodes are emptied");
        let mut entries = self.take_buffer(buffer)?;
        if id == self.root {
            // A draining batch goes down with the root's buffer (`drain.rs`, invariant 3).
            entries = self.with_draining_left(entries);
        }
        self.count_emptying(id, entries.len());
        self.pass_through(id, &node, entries, false)
    }

    pub(super) fn count_emptying(&mut self, id: NodeId, entries: usize) {
        let entries = entries as u64;
        let counters = &mut self.counters;
        counters.emptyings += 1;
        counters.entries_emptied += entries;
        counters.emptied_entries_max = counters.emptied_entries_max.max(entries);
        if id == self.root {
            counters.root_emptyings += 1;
            counters.root_entries_emptied += entries;
        }
    }

    /// Distributes `entries` to the children of inner node `id` (`node`, its cached version,
    /// or with `unwritten` a changed version not yet written) in key order, puts their pieces
    /// in place, rebalances the children left underfull and finishes the node. The node is
    /// copied only if it changes (an unbuffered update passes through inner nodes that stay
    /// as they are).
    pub(super) fn pass_through(
        &mut self,
        id: NodeId,
        node: &Node,
        entries: Vec<BufferEntry>,
        unwritten: bool,
    ) -> Result<Pieces> {
        let Node::Inner(inner) = node else { unreachable!("{id} is an inner node") };
        let mut inner = Cow::Borrowed(inner);
        let mut parts: Vec<(usize, Vec<BufferEntry>)> = Vec::new();
        if self.force_empty && inner.level > 1 {
            // Emptying every buffer: every inner child is visited, even without entries
            // (buffers below it may hold some); leaves only when entries reach them.
            parts = (0..inner.children.len()).map(|i| (i, Vec::new())).collect();
            for entry in entries {
                parts[inner.child_index(entry.key())].1.push(entry);
            }
        } else {
            for entry in entries {
                let index = inner.child_index(entry.key());
                match parts.last_mut() {
                    Some((i, part)) if *i == index => part.push(entry),
                    _ => parts.push((index, vec![entry])),
                }
            }
        }
        let mut touched = Vec::with_capacity(parts.len());
        let mut changed = false;
        // Right to left, so inserting a child's pieces keeps the indices to its left.
        for (index, part) in parts.into_iter().rev() {
            let child = inner.children[index];
            let pieces = self.descend(child, part)?;
            assert_eq!(pieces.first, child, "a split keeps the node's id for its first piece");
            if !pieces.rest.is_empty() {
                let (separators, ids): (Vec<_>, Vec<_>) = pieces.rest.into_iter().unzip();
                inner.to_mut().insert_split(index, &separators, &ids);
                changed = true;
            }
            touched.push(child);
        }
        changed |= self.fix_underfull(&mut inner, &touched)?;
        if !changed && !unwritten {
            // Neither split nor rebalanced below: the node on flash is still right (a B+tree
            // update writes only the nodes it changes; emptying keeps the buffer's id).
            return Ok(Pieces::single(id));
        }
        self.finish_node(id, Node::Inner(inner.into_owned()))
    }
}

/// `leaf` with sorted `entries` merged in: per key the entry with the largest seq decides
/// (a put sets the value, a delete removes the key). One pass over both.
fn merge_into_leaf(
    leaf: &LeafNode,
    layout: &NodeLayout,
    entries: &[BufferEntry],
) -> Result<LeafNode> {
    let latest = entries.iter().enumerate().filter_map(|(i, entry)| {
        if entries.get(i + 1).is_some_and(|next| next.key() == entry.key()) {
            return None; // a newer entry of the same key follows
        }
        let value = match entry.op() {
            BufferOp::Put(value) => Some(value.as_slice()),
            BufferOp::Delete => None,
        };
        Some((entry.key(), value))
    });
    leaf.merged(layout, latest)
}
