//! Underfull s-nodes merged like B-tree deletes (paper section 3.2.2: "the cases when
//! s-nodes become underfull as a result of a deletion can also be handled using a mechanism
//! similar to deletions in B-trees"; the paper leaves the details out, issue 16 asks for
//! them).
//!
//! - A leaf s-node with a sibling whose live part falls below `sigma / 4` (deletes dropped
//!   at the leaf level, overwrites with shorter values) is merged with an adjacent sibling:
//!   their live parts are rewritten as one d-tree, or, if together they hold more than
//!   sigma, as two d-trees of about half each (redistribution), the s-key between them
//!   moving to the new boundary. (A quarter, not the paper's half: with sizes in bytes a
//!   split leaves halves a little below `sigma / 2`, and redistribution must never leave a
//!   leaf underfull again.)
//! - A non-root internal s-node with fewer than `ceil(f / 2)` children is merged with an
//!   adjacent sibling: keys `left | separator | right`, children concatenated, d-trees'
//!   live parts concatenated (the linkage property orders them); if that makes more than
//!   `f` children, the result is split again at its median s-key.
//! - A root with a single internal child is replaced by that child (the tree shrinks by one
//!   level); if that child owns a d-tree, the d-tree is first flushed whole to its children.

use super::rewrite::{Output, Rewrite, Split, WriterContext};
use super::source::{DTreePart, Source};
use crate::dtree::DTree;
use crate::stree::{NodeId, SNode, STree};
use std::sync::Arc;

/// The live bytes below which a leaf with a sibling is merged.
pub fn leaf_underfull_bytes(sigma_bytes: u64) -> u64 {
    sigma_bytes / 4
}

/// A merge to do: the children `left` and `left + 1` of `parent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Underflow {
    /// The parent.
    pub parent: NodeId,
    /// The left child's index.
    pub left: usize,
}

/// The first underfull s-node (leaves first, then internal s-nodes deepest first) and the
/// sibling to merge it with, if any.
pub fn find(tree: &STree, fanout: usize, sigma_bytes: u64) -> Option<Underflow> {
    let mut internal: Option<(usize, Underflow)> = None;
    let mut level = vec![tree.root];
    let mut depth = 0;
    while !level.is_empty() {
        let mut next = Vec::new();
        for &id in &level {
            let n = tree.node(id);
            if n.children.len() < 2 {
                next.extend_from_slice(&n.children);
                continue;
            }
            for (i, &c) in n.children.iter().enumerate() {
                let child = tree.node(c);
                let underfull = if child.is_leaf() {
                    child.live_bytes < leaf_underfull_bytes(sigma_bytes)
                } else {
                    child.children.len() < fanout.div_ceil(2)
                };
                if underfull {
                    // Merge with the right sibling, or the left one for the last child.
                    let left = if i + 1 < n.children.len() { i } else { i - 1 };
                    let found = Underflow { parent: id, left };
                    if child.is_leaf() {
                        return Some(found);
                    }
                    internal = Some((depth, found));
                }
            }
            next.extend_from_slice(&n.children);
        }
        level = next;
        depth += 1;
    }
    internal.map(|(_, u)| u)
}

fn parts(nodes: [&SNode; 2]) -> Vec<DTreePart> {
    nodes.into_iter().filter_map(DTreePart::of).collect()
}

/// The rewrite that merges `u`'s two children.
pub fn task(
    tree: &STree,
    u: Underflow,
    fanout: usize,
    sigma_bytes: u64,
    context: WriterContext,
) -> Rewrite {
    let p = tree.node(u.parent);
    let (l, r) = (tree.node(p.children[u.left]), tree.node(p.children[u.left + 1]));
    let leaf = l.is_leaf();
    let split = if leaf {
        let total = l.live_bytes + r.live_bytes;
        if total > sigma_bytes { Split::AtHalf { total_bytes: total } } else { Split::None }
    } else {
        let keys = merged_keys(p, u, l, r);
        if keys.len() + 1 > fanout {
            Split::AtKey(keys[keys.len() / 2].clone())
        } else {
            Split::None
        }
    };
    let source = Source::dtrees(parts([l, r]), None, None, None);
    Rewrite::new(None, source, leaf, split, context, l.live_entries + r.live_entries)
}

fn merged_keys(p: &SNode, u: Underflow, l: &SNode, r: &SNode) -> Vec<Vec<u8>> {
    let mut keys = l.keys.clone();
    keys.push(p.keys[u.left].clone());
    keys.extend(r.keys.iter().cloned());
    keys
}

/// Applies a finished merge; returns the d-trees it made obsolete.
pub fn apply(tree: &mut STree, u: Underflow, outputs: Vec<Output>) -> Vec<Arc<DTree>> {
    let p = tree.node(u.parent);
    let (lid, rid) = (p.children[u.left], p.children[u.left + 1]);
    let (l, r) = (tree.node(lid), tree.node(rid));
    let leaf = l.is_leaf();
    let keys = merged_keys(p, u, l, r);
    let mut children = l.children.clone();
    children.extend_from_slice(&r.children);
    let mut obsolete: Vec<Arc<DTree>> = l.dtree.iter().chain(r.dtree.iter()).cloned().collect();
    let mut outputs = outputs.into_iter();
    let first = outputs.next().expect("at least one output");
    let second = outputs.next();
    // Where the two halves meet, if the result stays two s-nodes.
    let boundary = match &second {
        Some(out) if leaf => out.first_key.clone(),
        Some(_) => Some(keys[keys.len() / 2].clone()),
        None => None,
    };
    match boundary {
        None => {
            // One s-node: the left one takes everything, the right one goes.
            let left = tree.node_mut(lid);
            if !leaf {
                left.keys = keys;
                left.children = children;
            }
            left.set_dtree(first.dtree, first.bytes, first.entries);
            for out in second.into_iter().filter_map(|o| o.dtree) {
                // A split output with no boundary holds nothing; never the case, but
                // never leak it either.
                obsolete.push(out);
            }
            let parent = tree.node_mut(u.parent);
            parent.keys.remove(u.left);
            parent.children.remove(u.left + 1);
            tree.nodes.remove(&rid);
        }
        Some(separator) => {
            let second = second.expect("a boundary has a second output");
            if !leaf {
                let m = keys.len() / 2;
                let left = tree.node_mut(lid);
                left.keys = keys[..m].to_vec();
                left.children = children[..=m].to_vec();
                let right = tree.node_mut(rid);
                right.keys = keys[m + 1..].to_vec();
                right.children = children[m + 1..].to_vec();
            }
            tree.node_mut(lid).set_dtree(first.dtree, first.bytes, first.entries);
            tree.node_mut(rid).set_dtree(second.dtree, second.bytes, second.entries);
            tree.node_mut(u.parent).keys[u.left] = separator;
        }
    }
    obsolete
}

/// The root's single internal child without a d-tree, which can become the root.
pub fn collapsible_root(tree: &STree) -> Option<NodeId> {
    let root = tree.root();
    let [only] = root.children.as_slice() else { return None };
    let child = tree.node(*only);
    (!child.is_leaf() && child.dtree.is_none()).then_some(*only)
}

/// The root's single internal child that owns a d-tree (flushed whole first, then it
/// becomes the root).
pub fn root_child_to_empty(tree: &STree) -> Option<NodeId> {
    let root = tree.root();
    let [only] = root.children.as_slice() else { return None };
    let child = tree.node(*only);
    (!child.is_leaf() && child.dtree.is_some()).then_some(*only)
}
