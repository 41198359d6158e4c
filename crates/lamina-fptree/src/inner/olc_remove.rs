//! [`OlcInner`]'s `remove_leaf`: Algorithm 5's inner update ("the key and pointer
//! corresponding to the leaf are removed from its parent, possibly triggering further inner
//! node modifications"), under optimistic lock coupling.
//!
//! The removed leaf's range goes to the leaf before it. Cases, from the bottom node up:
//! - a node left with no child leaves the tree (released obsolete), and its parent loses it
//!   in turn, up to the first node with more than one child, the *stop* node;
//! - if the child the stop node loses is not its first, its lower bound goes with it, and the
//!   child before (whose rightmost leaf is the leaf before) absorbs the range: one node
//!   changes;
//! - if it is its first child, the stop node's lower bound rises to its first key, which
//!   moves into the *anchor*, the deepest ancestor where the path did not take the first
//!   child (there is one: the first leaf is never removed). Every node from the anchor down to
//!   the stop node has its range shrink and is locked (invariant 5 of `olc.rs`);
//! - a root left with one child collapses, with the inner nodes of one child under it (off
//!   the path: read, then upgraded from the versions read); the sentinel names the first
//!   node below them.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use super::contract::LeafId;
use super::node::{Children, Content, Keys, Node, pin};
use super::olc::{OlcInnerOn, Path};
use super::olc_insert::{release_unchanged, upgrade_all};
use super::version::{VersionWord, WriteLocked};

impl<W: VersionWord> OlcInnerOn<W> {
    pub(super) fn remove(&self, key: &[u8], leaf: LeafId) {
        loop {
            let guard = pin();
            let mut path = Path::new();
            if self.descend(key, &guard, &mut path).is_err() {
                self.count_conflict();
                continue;
            }
            let bottom = path.last();
            let Children::Leaves(leaves) = &bottom.content.children else {
                unreachable!("a descent ends at a bottom node")
            };
            if leaves[bottom.index] != leaf {
                assert!(!path.validate(), "remove_leaf: {key:?} is not covered by leaf {leaf}");
                self.count_conflict();
                continue;
            }
            // The stop node: the deepest with another child left.
            let mut stop = path.len() - 1;
            while stop > 0 && path.get(stop).content.children.len() == 1 {
                stop -= 1;
            }
            let index = path.get(stop).index;
            let anchor =
                if index > 0 { None } else { (1..stop).rev().find(|&i| path.get(i).index > 0) };
            if stop == 0 || (index == 0 && anchor.is_none()) {
                assert!(!path.validate(), "remove_leaf: leaf {leaf} is the first leaf");
                self.count_conflict();
                continue;
            }
            // A root left with one child collapses. Only the stop node can be left with one
            // (every node above it keeps its children), and an inner root has two children or
            // more (invariant 2), so only a root that is the stop node collapses.
            let collapse = stop == 1
                && path.get(1).content.children.len() == 2
                && matches!(path.get(1).content.children, Children::Nodes(_));
            let top = if collapse { 0 } else { anchor.unwrap_or(stop) };
            let Some(locks) = upgrade_all(&path, top) else {
                self.count_conflict();
                continue;
            };
            let stop_step = path.get(stop);
            let (content, lower) = stop_step.content.without(index);
            // Everything from the stop node down is replaced or leaves the tree.
            let mut bytes_removed: u64 = path.steps().skip(stop).map(|s| s.content.bytes()).sum();
            let mut bytes_added = 0;
            let mut chain_locks = Vec::new();
            if collapse {
                // The child the root keeps, and the inner nodes of one child under it (off the
                // path) go too: the new root is the first node below them.
                let Children::Nodes(nodes) = &stop_step.content.children else {
                    unreachable!("a collapsing root names nodes")
                };
                let Some((new_root, chain, chain_bytes)) =
                    one_child_chain(&nodes[1 - index], &guard)
                else {
                    release_unchanged(locks);
                    self.count_conflict();
                    continue;
                };
                (chain_locks, bytes_removed) = (chain, bytes_removed + chain_bytes);
                let sentinel =
                    Content::new(Keys::default(), Children::Nodes(vec![Arc::clone(new_root)]));
                bytes_removed += path.get(0).content.bytes();
                bytes_added += sentinel.bytes();
                path.get(0).node.replace(sentinel, &guard);
            } else {
                bytes_added += content.bytes();
                stop_step.node.replace(content, &guard);
            }
            if let Some(anchor) = anchor {
                let step = path.get(anchor);
                let content = step.content.with_key(step.index - 1, &lower);
                bytes_removed += step.content.bytes();
                bytes_added += content.bytes();
                step.node.replace(content, &guard);
            }
            self.dram_bytes.fetch_add(bytes_added, Ordering::Relaxed);
            self.dram_bytes.fetch_sub(bytes_removed, Ordering::Relaxed);
            self.leaves.fetch_sub(1, Ordering::Relaxed);
            // Release: the nodes below the stop node, a collapsed root and its chain left the
            // tree.
            for lock in chain_locks {
                lock.unlock_obsolete();
            }
            for (lock, i) in locks.into_iter().zip(top..) {
                if i > stop || (collapse && i == stop) {
                    lock.unlock_obsolete();
                } else {
                    lock.unlock();
                }
            }
            return;
        }
    }
}

/// The nodes of one child from `node` down, each write-locked, the first node below them, and
/// the bytes of their contents; `None` if one of them is locked or changed (restart).
#[allow(clippy::type_complexity, reason = "a private helper's result, destructured at once")]
fn one_child_chain<'a, W: VersionWord>(
    mut node: &'a Arc<Node<W>>,
    guard: &'a Guard,
) -> Option<(&'a Arc<Node<W>>, Vec<WriteLocked<'a, W>>, u64)> {
    let mut locks = Vec::new();
    let mut bytes = 0;
    while let Some(version) = node.lock.read() {
        let content = node.content(guard);
        let Children::Nodes(nodes) = &content.children else { return Some((node, locks, bytes)) };
        if nodes.len() > 1 {
            return Some((node, locks, bytes));
        }
        // Upgrading from the version read before the content: the content is still current.
        let Some(lock) = node.lock.try_upgrade(version) else { break };
        locks.push(lock);
        bytes += content.bytes();
        node = &nodes[0];
    }
    release_unchanged(locks);
    None
}
