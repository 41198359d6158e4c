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
//! - a root left with one inner child collapses: the sentinel names that child.

use std::sync::atomic::Ordering;

use super::contract::LeafId;
use super::node::{Children, Content, Keys, pin};
use super::olc::{OlcInner, Path};
use super::olc_insert::upgrade_all;
use super::version::VersionWord;

impl<W: VersionWord> OlcInner<W> {
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
            // A root (path step 1) left with one inner child collapses.
            let collapse = stop == 1
                && path.get(1).content.children.len() == 2
                && matches!(path.get(1).content.children, Children::Nodes(_));
            let top = if collapse { 0 } else { anchor.unwrap_or(stop) };
            let Some(mut locks) = upgrade_all(&path, top) else {
                self.count_conflict();
                continue;
            };
            let stop_step = path.get(stop);
            let (content, lower) = stop_step.content.without(index);
            let mut bytes_removed: u64 =
                path.steps().skip(stop).map(|s| s.content.bytes()).sum::<u64>();
            let mut bytes_added = 0;
            if collapse {
                let Children::Nodes(nodes) = content.children else { unreachable!() };
                let sentinel = Content::new(Keys::default(), Children::Nodes(nodes));
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
            // Release: nodes below the stop node (and a collapsed root) left the tree.
            let gone_from = (if collapse { 1 } else { stop + 1 }) - top;
            for lock in locks.drain(gone_from..) {
                lock.unlock_obsolete();
            }
            for lock in locks {
                lock.unlock();
            }
            return;
        }
    }
}
