//! [`OlcInner`]'s `insert_separator`: Algorithm 2 line 17's second transaction
//! (`UpdateParents` after a leaf split), by re-traversal under optimistic lock coupling.
//!
//! The writer descends optimistically like a reader, then upgrades, from the versions it
//! read, the bottom node and every full ancestor above it plus the first one that is not full
//! (the sentinel when the root splits): each of them gets a new content (invariant 5 of
//! `olc.rs`). A failed upgrade releases what was taken, unchanged, and starts over. New
//! right siblings become reachable only through their parent's new content, published under
//! the parent's lock.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::contract::LeafId;
use super::node::{Child, Children, Content, Keys, Node, pin};
use super::olc::{HEIGHT_MAX, KEY_BYTES_MAX, OlcInnerOn, Path};
use super::version::{VersionWord, WriteLocked};

impl<W: VersionWord> OlcInnerOn<W> {
    pub(super) fn insert(&self, separator: &[u8], right: LeafId) {
        assert!(!separator.is_empty(), "the empty separator is the first leaf's");
        assert!(separator.len() <= KEY_BYTES_MAX, "separator longer than {KEY_BYTES_MAX}");
        loop {
            let guard = pin();
            let mut path = Path::new();
            if self.descend(separator, &guard, &mut path).is_err() {
                self.count_conflict();
                continue;
            }
            // Already a separator: it is the lower bound of the child some step took.
            let present =
                path.steps().any(|s| s.index > 0 && s.content.keys.get(s.index - 1) == separator);
            if present {
                assert!(!path.validate(), "insert_separator: {separator:?} already present");
                self.count_conflict();
                continue;
            }
            // The nodes that change: the bottom one, and each full one's parent.
            let mut top = path.len() - 1;
            while top > 0 && path.get(top).content.children.len() >= self.fanout_max {
                top -= 1;
            }
            assert!(
                top > 0 || path.len() - 1 < HEIGHT_MAX,
                "insert_separator: the tree would be higher than {HEIGHT_MAX}"
            );
            let Some(locks) = upgrade_all(&path, top) else {
                self.count_conflict();
                continue;
            };
            // New contents, bottom up, each split pushing a key and a right node upwards.
            let mut changes = Vec::with_capacity(path.len() - top);
            let mut carry: (Box<[u8]>, Child<W>) = (separator.into(), Child::Leaf(right));
            let mut bytes_added = 0;
            for i in (top..path.len()).rev() {
                let step = path.get(i);
                let (key, child) = carry;
                if i == 0 {
                    // The root split: a new root over the old one and its new right sibling.
                    let Children::Nodes(roots) = &step.content.children else {
                        unreachable!("the sentinel names the root")
                    };
                    let Child::Node(sibling) = child else {
                        unreachable!("a root splits in nodes")
                    };
                    let root = Content::new(
                        Keys::pack([&*key]),
                        Children::Nodes(vec![Arc::clone(&roots[0]), sibling]),
                    );
                    bytes_added += root.bytes();
                    let root = Content::new(
                        Keys::default(),
                        Children::Nodes(vec![Arc::new(Node::new(root))]),
                    );
                    changes.push((step.node, root));
                    break;
                }
                let (content, split) =
                    step.content.with_inserted(step.index, &key, child, self.fanout_max);
                changes.push((step.node, content));
                let Some((middle, right)) = split else { break };
                bytes_added += right.bytes();
                carry = (middle, Child::Node(Arc::new(Node::new(right))));
            }
            assert_eq!(changes.len(), path.len() - top, "every locked node changes");
            for (node, content) in changes {
                let old = path.steps().find(|s| std::ptr::eq(s.node, node)).expect("on the path");
                bytes_added += content.bytes();
                let bytes_removed = old.content.bytes();
                node.replace(content, &guard);
                self.dram_bytes.fetch_sub(bytes_removed, Ordering::Relaxed);
            }
            self.dram_bytes.fetch_add(bytes_added, Ordering::Relaxed);
            self.leaves.fetch_add(1, Ordering::Relaxed);
            for lock in locks {
                lock.unlock();
            }
            return;
        }
    }
}

/// Upgrades the nodes of `path` from `top` down; on a failure releases those taken,
/// unchanged, and answers `None`.
pub(super) fn upgrade_all<'a, W: VersionWord>(
    path: &Path<'a, W>,
    top: usize,
) -> Option<Vec<WriteLocked<'a, W>>> {
    let mut locks = Vec::with_capacity(path.len() - top);
    for step in path.steps().skip(top) {
        match step.node.lock.try_upgrade(step.version) {
            Some(lock) => locks.push(lock),
            None => {
                release_unchanged(locks);
                return None;
            }
        }
    }
    Some(locks)
}

/// Releases locks taken by a writer that gives up before changing anything.
pub(super) fn release_unchanged<W: VersionWord>(locks: Vec<WriteLocked<'_, W>>) {
    for lock in locks {
        lock.unlock_unchanged();
    }
}
