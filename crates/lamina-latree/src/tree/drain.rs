//! Root emptying spread over the updates that follow it (an adaptation for the engine, off
//! in the paper's experiments: [`super::LaTreeOptions::drain_root`]).
//!
//! The paper empties a buffer in one go (section 2.1). At 10M keys the engine's tree is three
//! levels high and the root's buffer is its only one (`K = 2`), so each root emptying merges
//! `U` entries into leaves all over the tree, in the call of the update that overflowed it:
//! that put took up to 0.46 s (`docs/results/latree.md`). With draining, the update that
//! triggers the root's emptying takes the buffer's entries, sorted, into memory (the
//! *draining batch*; the root's buffer is empty again and takes the next updates), and that
//! update and each one after it hand the batch's next few entries down to **one child** of
//! the root (a drain step: the same descent, merges and splits as the whole emptying, on a
//! slice of one child's share), left to right, until the batch is gone. A step takes at most
//! `ceil(2 * batch / U)` entries (and never more than one child's), so the batch is gone
//! within about `U / 2` updates, half of the `U` it takes to fill the buffer again: the
//! emptying's cost is spread over the updates as evenly as a step's granularity allows.
//!
//! Invariants:
//! 1. The batch is older than every entry in the root's buffer and newer than everything
//!    below the root; it is sorted by (key, seq) and `entries[next..]` is what is left.
//!    Every entry before `entries[next]` was handed down, and they hold the smallest keys
//!    (a step hands down a prefix of what is left). A lookup checks the root's buffer,
//!    then the batch, then the child; a scan adds the batch's entries by seq.
//! 2. The root keeps its shape across a step: a step whose child split (or was merged) so
//!    that the root would no longer fit its page, or would keep one child, instead hands down
//!    everything left at once (the batch merged with the root's buffer, by (key, seq)) as a
//!    whole emptying, which splits, grows or shrinks the root as usual. So the root's buffer,
//!    newer than the batch, never moves below it.
//! 3. Anything else that would empty the root's buffer or change the root (a lookup's
//!    emptying, a reclamation, a checkpoint) first finishes the draining the same way.
//! 4. Each step counts as a buffer taken (`buffers_taken`): it changes the tree's shape, so
//!    a lookup's emptying wish from before it is dropped.

use std::borrow::Cow;

use lamina_core::Result;

use super::core::{LaTree, merge_sorted};
use crate::buffer::BufferEntry;
use crate::node::Node;

/// The root buffer's entries being handed down (module doc).
#[derive(Debug)]
pub(crate) struct Draining {
    /// Sorted by (key, seq).
    entries: Vec<BufferEntry>,
    /// Entries before this one were handed down.
    next: usize,
    /// Most entries one step hands down (module doc).
    step_entries: usize,
}

impl Draining {
    /// What is left, sorted by (key, seq).
    pub(super) fn left(&self) -> &[BufferEntry] {
        &self.entries[self.next..]
    }

    /// The newest entry of `key` left in the batch.
    pub(super) fn find(&self, key: &[u8]) -> Option<&BufferEntry> {
        let left = self.left();
        let after = left.partition_point(|e| e.key() <= key);
        left[..after].last().filter(|e| e.key() == key)
    }
}

impl LaTree {
    /// Entries left in the draining batch (0: no draining).
    pub fn draining_entries(&self) -> usize {
        self.draining.as_ref().map_or(0, |d| d.left().len())
    }

    /// The newest entry of `key` in the draining batch, as a lookup sees it (invariant 1).
    pub(super) fn draining_find(&self, key: &[u8]) -> Option<&BufferEntry> {
        self.draining.as_ref()?.find(key)
    }

    /// The root's buffer becomes the draining batch (sorted; the root's buffer is emptied,
    /// its ADAPT state reset), and the first step runs.
    pub(super) fn start_draining(&mut self) -> Result<()> {
        assert!(self.draining.is_none(), "one draining at a time");
        let root = self.peek(self.root)?;
        let buffer = root.as_inner().and_then(|inner| inner.buffer);
        let buffer = buffer.expect("only a buffered root drains");
        drop(root);
        let entries = self.take_buffer(buffer)?;
        self.count_emptying(self.root, entries.len());
        if entries.is_empty() {
            return Ok(());
        }
        let limit = usize::try_from(self.options.buffer_entries_max).unwrap_or(usize::MAX);
        let step_entries = (entries.len() * 2).div_ceil(limit.max(1)).max(1);
        self.draining = Some(Draining { entries, next: 0, step_entries });
        self.drain_step()
    }

    /// One step (module doc): the batch's next entries, for one child of the root, handed
    /// down.
    pub(super) fn drain_step(&mut self) -> Result<()> {
        if self.draining.is_none() {
            return Ok(());
        }
        self.buffers_taken += 1; // invariant 4
        self.counters.drain_steps += 1;
        let root = self.root;
        // The cached root itself; copied only if this step changes it.
        let root_node = self.peek(root)?;
        let cached = root_node.as_inner().expect("a draining root is inner");
        let draining = self.draining.as_mut().expect("checked above");
        let first = draining.left().first().expect("a draining batch is never empty");
        let index = cached.child_index(first.key());
        let share = draining.left().partition_point(|e| cached.child_index(e.key()) == index);
        // A slice of the child's share, never splitting one key's entries (they go down
        // together, newest last).
        let mut share = share.min(draining.step_entries);
        let left = draining.left();
        while share < left.len() && share > 0 && left[share].key() == left[share - 1].key() {
            share += 1;
        }
        let part = draining.left()[..share].to_vec();
        draining.next += share;
        if draining.left().is_empty() {
            self.draining = None;
        }
        let child = cached.children[index];
        let pieces = self.descend(child, part)?;
        assert_eq!(pieces.first, child, "a split keeps the node's id for its first piece");
        let mut inner = Cow::Borrowed(cached);
        let split = !pieces.rest.is_empty();
        if split {
            let (separators, ids): (Vec<_>, Vec<_>) = pieces.rest.into_iter().unzip();
            inner.to_mut().insert_split(index, &separators, &ids);
        }
        let rebalanced = self.fix_underfull(&mut inner, &[child])?;
        if !split && !rebalanced {
            return Ok(());
        }
        let node = Node::Inner(inner.into_owned());
        let keeps_shape = node.fits(&self.layout)
            && node.as_inner().is_some_and(|inner| inner.children.len() >= 2);
        if keeps_shape {
            return self.write(root, node);
        }
        // Invariant 2: everything left goes down now, through the changed root.
        let left = self.draining.take().map(|d| d.entries[d.next..].to_vec()).unwrap_or_default();
        let buffer = node.as_inner().and_then(|inner| inner.buffer).expect("a buffered root");
        let own = self.take_buffer(buffer)?;
        let all = merge_sorted(left, own);
        self.count_emptying(root, all.len());
        let pieces = self.pass_through(root, &node, all, true)?;
        self.finish_root(pieces)
    }

    /// Finishes a draining at once (invariant 3): the batch and the root's buffer emptied
    /// together as one whole emptying of the root.
    pub fn finish_draining(&mut self) -> Result<()> {
        if self.draining.is_none() {
            return Ok(());
        }
        let pieces = self.empty_node(self.root)?;
        self.finish_root(pieces)
    }

    /// The entries `empty_node` takes from the root's buffer: with a draining, the batch's
    /// left entries merged in (they are older, invariant 1).
    pub(super) fn with_draining_left(&mut self, own: Vec<BufferEntry>) -> Vec<BufferEntry> {
        match self.draining.take() {
            Some(d) => merge_sorted(d.entries[d.next..].to_vec(), own),
            None => own,
        }
    }
}
