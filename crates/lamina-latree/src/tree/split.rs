//! Structural changes after an emptying (section 2.1): splits of overfull nodes (a buffered
//! node's buffer split with it: each entry goes to the piece whose key range holds it),
//! borrow or merge of underfull children (their buffers redistributed or merged the same
//! way), a new root when the root splits and the root's removal when it is left with one
//! child.

use std::borrow::Cow;

use lamina_core::Result;

use super::core::{LaTree, merge_sorted};
use crate::buffer::BufferEntry;
use crate::node::{BufferId, InnerNode, Node, NodeId, Rebalanced, rebalance, split};

/// A node after an operation below it: its own id (the first piece) and, if it split, the
/// other pieces left to right, each with its low bound.
#[derive(Debug)]
pub(super) struct Pieces {
    pub first: NodeId,
    pub rest: Vec<(Vec<u8>, NodeId)>,
}

impl Pieces {
    pub fn single(id: NodeId) -> Self {
        Pieces { first: id, rest: Vec::new() }
    }
}

impl LaTree {
    /// Writes `node` as `id`, splitting it first if it is overfull.
    pub(super) fn finish_node(&mut self, id: NodeId, node: Node) -> Result<Pieces> {
        if node.fits(&self.layout) {
            self.write(id, node)?;
            return Ok(Pieces::single(id));
        }
        self.counters.splits += 1;
        let buffer = node.as_inner().and_then(|inner| inner.buffer);
        let entries = match buffer {
            Some(buffer) => self.take_buffer(buffer)?,
            None => Vec::new(),
        };
        let mut pieces = split(node, &self.layout);
        let new_ids =
            (1..pieces.pieces.len()).map(|_| self.nodes.allocate()).collect::<Result<Vec<_>>>()?;
        pieces.link_leaves(&new_ids);
        let mut buffers = vec![buffer];
        for piece in &mut pieces.pieces[1..] {
            if let (Node::Inner(inner), Some(_)) = (&mut *piece, buffer) {
                inner.buffer = Some(self.new_buffer());
            }
            buffers.push(piece.as_inner().and_then(|inner| inner.buffer));
        }
        self.spread(&pieces.separators, &buffers, entries)?;
        let ids = std::iter::once(id).chain(new_ids.iter().copied());
        for (piece_id, piece) in ids.zip(pieces.pieces) {
            self.write(piece_id, piece)?;
        }
        Ok(Pieces { first: id, rest: pieces.separators.into_iter().zip(new_ids).collect() })
    }

    /// Appends sorted `entries` to the buffers of adjacent nodes separated by `separators`
    /// (`buffers[i]` of the node whose low bound is `separators[i - 1]`).
    fn spread(
        &mut self,
        separators: &[Vec<u8>],
        buffers: &[Option<BufferId>],
        entries: Vec<BufferEntry>,
    ) -> Result<()> {
        assert_eq!(separators.len() + 1, buffers.len());
        if !entries.is_empty() {
            self.counters.buffers_redistributed += 1;
        }
        let mut parts: Vec<Vec<BufferEntry>> = vec![Vec::new(); buffers.len()];
        for entry in entries {
            let index = separators.partition_point(|s| s.as_slice() <= entry.key());
            parts[index].push(entry);
        }
        for (buffer, part) in buffers.iter().zip(parts) {
            if part.is_empty() {
                continue;
            }
            let buffer = buffer.expect("entries only come from buffered nodes");
            self.append_batch(buffer, part)?;
        }
        Ok(())
    }

    /// Rebalances each of `touched` (children of `inner`) left under a quarter full with a
    /// neighbour, until it is not underfull, is merged away, or is the only child. Returns
    /// whether `inner` changed.
    pub(super) fn fix_underfull(
        &mut self,
        inner: &mut Cow<'_, InnerNode>,
        touched: &[NodeId],
    ) -> Result<bool> {
        let mut changed = false;
        for &child in touched {
            while inner.children.len() >= 2 {
                let Some(index) = inner.children.iter().position(|&c| c == child) else {
                    break; // merged into its left neighbour
                };
                if !self.peek(child)?.is_underfull(&self.layout) {
                    break;
                }
                let left = if index + 1 < inner.children.len() { index } else { index - 1 };
                self.rebalance_children(inner.to_mut(), left)?;
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Rebalances children `left` and `left + 1` of `inner`, moving buffered entries to the
    /// node whose range holds them.
    fn rebalance_children(&mut self, inner: &mut InnerNode, left: usize) -> Result<()> {
        let (left_id, right_id) = (inner.children[left], inner.children[left + 1]);
        let (mut l, mut r) = (self.read(left_id)?, self.read(right_id)?);
        let buffers = [l.as_inner().and_then(|n| n.buffer), r.as_inner().and_then(|n| n.buffer)];
        let mut entries = Vec::new();
        for buffer in buffers.into_iter().flatten() {
            let taken = self.take_buffer(buffer)?;
            entries = merge_sorted(entries, taken);
        }
        match rebalance(&mut l, &inner.separators[left], &mut r, &self.layout) {
            Rebalanced::Merged { .. } => {
                self.counters.merges += 1;
                if let Some(buffer) = buffers[0] {
                    if !entries.is_empty() {
                        self.counters.buffers_redistributed += 1;
                    }
                    self.append_batch(buffer, entries)?;
                }
                inner.remove_merged(left + 1);
                self.write(left_id, l)?;
                self.nodes.free(right_id)?;
            }
            Rebalanced::Redistributed { separator } => {
                self.spread(std::slice::from_ref(&separator), &buffers, entries)?;
                inner.separators[left] = separator;
                self.write(left_id, l)?;
                self.write(right_id, r)?;
            }
        }
        Ok(())
    }

    /// Installs the root's pieces: grows the tree while the root splits (the new root gets a
    /// buffer; pieces of an old root whose level is not buffered hand their entries up to
    /// it), and removes a root left with one child (its entries go down to the child, which
    /// becomes the root and gets a buffer if it is inner and has none).
    pub(super) fn finish_root(&mut self, mut pieces: Pieces) -> Result<()> {
        assert_eq!(pieces.first, self.root, "the root's pieces");
        loop {
            if !pieces.rest.is_empty() {
                pieces = self.grow(pieces)?;
                continue;
            }
            let (buffer, child, level) = match &*self.peek(self.root)? {
                Node::Inner(root) if root.children.len() == 1 => {
                    (root.buffer, root.children[0], root.level)
                }
                _ => return Ok(()),
            };
            let entries = match buffer {
                Some(buffer) => self.take_buffer(buffer)?,
                None => Vec::new(),
            };
            self.nodes.free(self.root)?;
            self.root = child;
            self.root_level = level - 1;
            match self.read(child)? {
                Node::Leaf(_) => pieces = self.descend(child, entries)?,
                Node::Inner(_) if !self.options.buffered => {
                    assert!(entries.is_empty(), "an unbuffered tree has no entries to hand down");
                    pieces = Pieces::single(child);
                }
                Node::Inner(mut inner) => {
                    let buffer = match inner.buffer {
                        Some(buffer) => buffer,
                        None => {
                            let buffer = self.new_buffer();
                            inner.buffer = Some(buffer);
                            self.write(child, Node::Inner(inner))?;
                            buffer
                        }
                    };
                    self.append_batch(buffer, entries)?;
                    pieces = Pieces::single(child);
                }
            }
        }
    }

    fn grow(&mut self, pieces: Pieces) -> Result<Pieces> {
        self.counters.grows += 1;
        let old_level = self.peek(pieces.first)?.level();
        let level = old_level + 1;
        let mut children = vec![pieces.first];
        let mut separators = Vec::new();
        for (separator, id) in pieces.rest {
            separators.push(separator);
            children.push(id);
        }
        let mut entries = Vec::new();
        if !self.is_buffered_level(old_level) {
            for &id in &children {
                let Node::Inner(mut inner) = self.read(id)? else { continue };
                if let Some(buffer) = inner.buffer.take() {
                    entries = merge_sorted(entries, self.take_buffer(buffer)?);
                    self.write(id, Node::Inner(inner))?;
                }
            }
        }
        let buffer = if self.options.buffered {
            let buffer = self.new_buffer();
            self.append_batch(buffer, entries)?;
            Some(buffer)
        } else {
            assert!(entries.is_empty(), "an unbuffered tree has no entries to hand up");
            None
        };
        let root = InnerNode { level, separators, children, buffer };
        let id = self.nodes.allocate()?;
        self.root = id;
        self.root_level = level;
        self.finish_node(id, Node::Inner(root))
    }
}
