//! Splits of overfull nodes and the borrow/merge of underfull ones: the node operations of a
//! B+tree that is an a-b tree in bytes (LA-tree section 3: "each node is required to be at
//! least a quarter full").
//!
//! With capacity `C` (payload bytes of a node), a non-root node holds at least `C / 4`
//! ([`NodeLayout::underfull_bytes`]) and at most `C` bytes. [`NodeLayout`] guarantees a leaf
//! entry is at most `C / 2` and a separator with its child at most `C / 4`, which is what
//! makes these bounds reachable:
//! - [`split`] halves an overfull node of `T > C` bytes at the cut that minimises the larger
//!   half among the cuts leaving both halves at least `C / 4`, and halves again any half still
//!   over `C`. The cut nearest `T / 2` is off by at most half an entry, so it leaves both
//!   halves within `T / 2 +- C / 4`: at least `C / 4`, so such a cut always exists. A node of
//!   any size (a leaf receiving a whole batch from a buffer) ends in pieces of `C / 4 ..= C`.
//! - [`rebalance`] takes an underfull node and its sibling (each at most `C`): if their
//!   entries fit one node they merge; else (`C < T < 5C/4` plus a separator) they are cut
//!   as by [`split`], which leaves both at least `C / 4`.

use super::inner::InnerNode;
use super::layout::{BufferId, CHILD_ID_BYTES, NodeId, NodeLayout, separator_bytes};
use super::leaf::LeafNode;
use super::page::Node;

/// The pieces of a split node, left to right. The first piece keeps the split node's id
/// (and an inner node's buffer); the caller gives the others new ids, links leaves with
/// [`Split::link_leaves`] and adds them to the parent with [`InnerNode::insert_split`]. An
/// inner piece after the first has no buffer: the caller splits the buffer's entries at the
/// separators (LA-tree section 2.1, "buffers attached to these nodes are also split").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// At least two pieces, each fitting one node and (as proven above) at least a quarter
    /// full.
    pub pieces: Vec<Node>,
    /// `pieces.len() - 1` keys: `separators[i]` is the low bound of `pieces[i + 1]`.
    pub separators: Vec<Vec<u8>>,
}

impl Split {
    /// Chains leaf pieces through their right siblings, given the ids of `pieces[1..]`; the
    /// last piece keeps the split leaf's right sibling. Does nothing for inner pieces.
    pub fn link_leaves(&mut self, new_ids: &[NodeId]) {
        assert_eq!(new_ids.len() + 1, self.pieces.len(), "an id for each new piece");
        let last = self.pieces.len() - 1;
        for (i, piece) in self.pieces[..last].iter_mut().enumerate() {
            if let Node::Leaf(leaf) = piece {
                leaf.right_sibling = Some(new_ids[i]);
            }
        }
    }
}

/// Splits an overfull node into pieces of at most a node each (see the module docs).
pub fn split(node: Node, layout: &NodeLayout) -> Split {
    assert!(!node.fits(layout), "only overfull nodes are split");
    let mut pieces = Vec::new();
    let mut separators = Vec::new();
    split_into(node, layout, &mut pieces, &mut separators);
    debug_assert!(pieces.iter().all(|p| p.fits(layout)), "every piece fits");
    Split { pieces, separators }
}

fn split_into(node: Node, layout: &NodeLayout, pieces: &mut Vec<Node>, seps: &mut Vec<Vec<u8>>) {
    if node.fits(layout) {
        pieces.push(node);
        return;
    }
    let (left, separator, right) = halve(node, layout);
    split_into(left, layout, pieces, seps);
    seps.push(separator);
    split_into(right, layout, pieces, seps);
}

/// How two underfull-or-sibling nodes were rebalanced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebalanced {
    /// Everything is in the left node now; the caller frees the right one and drops it from
    /// the parent ([`InnerNode::remove_merged`]). For inner nodes, the right node's buffer
    /// (if any) must be merged into the left's by the caller.
    Merged {
        /// The right inner node's buffer, now orphaned.
        absorbed_buffer: Option<BufferId>,
    },
    /// Entries moved between the two; the parent's separator between them becomes this.
    /// Inner nodes keep their own buffers; the caller moves buffered entries whose keys
    /// changed sides.
    Redistributed {
        /// The new low bound of the right node.
        separator: Vec<u8>,
    },
}

/// Rebalances `left` and `right`, adjacent children of one parent separated there by
/// `separator`, of one kind and level, each fitting a node: merges them when their entries
/// fit one node, else moves entries so both are at least a quarter full.
pub fn rebalance(
    left: &mut Node,
    separator: &[u8],
    right: &mut Node,
    layout: &NodeLayout,
) -> Rebalanced {
    assert!(left.fits(layout) && right.fits(layout), "rebalancing nodes that fit");
    assert_eq!(left.level(), right.level(), "siblings are on one level");
    // A leaf's right sibling is `right` itself; it stays so if entries are only moved.
    let left_link = left.as_leaf().and_then(|leaf| leaf.right_sibling);
    let (combined, absorbed_buffer, right_buffer) = match (
        std::mem::replace(left, empty_like(left)),
        std::mem::replace(right, empty_like(right)),
    ) {
        (Node::Leaf(mut l), Node::Leaf(r)) => {
            l.append(&r);
            (Node::Leaf(l), None, None)
        }
        (Node::Inner(mut l), Node::Inner(r)) => {
            l.separators.push(separator.to_vec());
            l.separators.extend(r.separators);
            l.children.extend(r.children);
            (Node::Inner(l), r.buffer, r.buffer)
        }
        _ => unreachable!("siblings on one level have one kind"),
    };
    if combined.fits(layout) {
        *left = combined;
        return Rebalanced::Merged { absorbed_buffer };
    }
    let (mut l, new_separator, mut r) = halve(combined, layout);
    match (&mut l, &mut r) {
        (Node::Leaf(l), _) => l.right_sibling = left_link,
        (_, Node::Inner(r)) => r.buffer = right_buffer,
        _ => {}
    }
    assert!(l.fits(layout) && r.fits(layout), "siblings of at most 5/4 node cut into two");
    *left = l;
    *right = r;
    Rebalanced::Redistributed { separator: new_separator }
}

fn empty_like(node: &Node) -> Node {
    match node {
        Node::Leaf(_) => Node::Leaf(LeafNode::new()),
        Node::Inner(inner) => Node::Inner(InnerNode {
            level: inner.level,
            separators: Vec::new(),
            children: Vec::new(),
            buffer: None,
        }),
    }
}

/// Cuts `node` in two at the best cut (module docs); returns (left, separator, right).
fn halve(node: Node, layout: &NodeLayout) -> (Node, Vec<u8>, Node) {
    let floor = layout.underfull_bytes();
    match node {
        Node::Leaf(leaf) => {
            let n = leaf.len();
            assert!(n >= 2, "an overfull leaf has at least two entries");
            let prefix = prefix_sums((0..n).map(|i| leaf.entry_bytes(i)));
            let total = prefix[n];
            let j = best_cut(1..n, |j| (prefix[j], total - prefix[j]), floor);
            let mut left = leaf;
            let right = left.split_off(j);
            let separator = right.first_key().expect("a piece has entries").to_vec();
            (Node::Leaf(left), separator, Node::Leaf(right))
        }
        Node::Inner(inner) => {
            let n = inner.children.len();
            assert!(n >= 3, "an overfull inner node has at least three children");
            let prefix = prefix_sums(inner.separators.iter().map(|s| separator_bytes(s.len())));
            let total = prefix[n - 1];
            // Cut before child j: children ..j stay, separator j - 1 goes up.
            let sizes =
                |j: usize| (CHILD_ID_BYTES + prefix[j - 1], CHILD_ID_BYTES + total - prefix[j]);
            let j = best_cut(1..n, sizes, floor);
            let mut separators = inner.separators;
            let mut right_separators = separators.split_off(j - 1);
            let separator = right_separators.remove(0);
            let mut children = inner.children;
            let right_children = children.split_off(j);
            let left = InnerNode { level: inner.level, separators, children, buffer: inner.buffer };
            let right = InnerNode {
                level: inner.level,
                separators: right_separators,
                children: right_children,
                buffer: None,
            };
            (Node::Inner(left), separator, Node::Inner(right))
        }
    }
}

fn prefix_sums(sizes: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut prefix = vec![0];
    for size in sizes {
        prefix.push(prefix.last().expect("starts with 0") + size);
    }
    prefix
}

/// The cut in `cuts` minimising the larger side among those leaving both sides at least
/// `floor` bytes, or among all cuts if none does.
fn best_cut(
    cuts: std::ops::Range<usize>,
    sides: impl Fn(usize) -> (usize, usize),
    floor: usize,
) -> usize {
    assert!(!cuts.is_empty(), "a node with a place to cut");
    let best = |candidates: &mut dyn Iterator<Item = usize>| {
        candidates.min_by_key(|&j| {
            let (l, r) = sides(j);
            l.max(r)
        })
    };
    let balanced = best(&mut cuts.clone().filter(|&j| {
        let (l, r) = sides(j);
        l.min(r) >= floor
    }));
    balanced.or_else(|| best(&mut cuts.clone())).expect("cuts is not empty")
}
