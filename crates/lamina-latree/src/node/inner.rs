//! Inner nodes: separator keys, child ids, and (at every K-th level) the id of the attached
//! buffer.
//!
//! Invariants (checked by [`super::verify`]): `children.len() == separators.len() + 1`, at
//! least one child (two for the root, which otherwise collapses into its child); separators
//! strictly ascend; child `i` holds the keys `k` with `separators[i - 1] <= k <
//! separators[i]` (unbounded at the ends, within the node's own bounds); `level >= 1`, the
//! children are at `level - 1`; child ids are distinct.

use super::layout::{BufferId, CHILD_ID_BYTES, NodeId, separator_bytes};

/// An inner (non-leaf) node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InnerNode {
    /// Height above the leaves: 1 for the parents of leaves.
    pub level: u8,
    /// `children.len() - 1` keys in strictly ascending order.
    pub separators: Vec<Vec<u8>>,
    /// The children, left to right.
    pub children: Vec<NodeId>,
    /// The buffer of pending updates for this subtree, on buffer-carrying levels.
    pub buffer: Option<BufferId>,
}

impl InnerNode {
    /// A new root over two children split at `separator`.
    pub fn new_root(level: u8, left: NodeId, separator: Vec<u8>, right: NodeId) -> Self {
        assert!(level >= 1, "an inner node is above the leaves");
        InnerNode { level, separators: vec![separator], children: vec![left, right], buffer: None }
    }

    /// Bytes of payload: the first child, then each separator with the child to its right.
    pub fn payload_bytes(&self) -> usize {
        CHILD_ID_BYTES + self.separators.iter().map(|s| separator_bytes(s.len())).sum::<usize>()
    }

    /// The index of the child whose range holds `key`.
    pub fn child_index(&self, key: &[u8]) -> usize {
        self.separators.partition_point(|s| s.as_slice() <= key)
    }

    /// The child whose range holds `key`.
    pub fn child_for(&self, key: &[u8]) -> NodeId {
        self.children[self.child_index(key)]
    }

    /// The bounds of child `index`'s keys: `(inclusive low, exclusive high)`, `None` where
    /// only this node's own bounds apply.
    pub fn child_bounds(&self, index: usize) -> (Option<&[u8]>, Option<&[u8]>) {
        assert!(index < self.children.len(), "child {index} of {}", self.children.len());
        let low = index.checked_sub(1).map(|i| self.separators[i].as_slice());
        let high = self.separators.get(index).map(Vec::as_slice);
        (low, high)
    }

    /// Child `index` was split: its pieces after the first (`new_children`, left to right)
    /// go right after it, each preceded by its separator (`separators[i]` is the low bound of
    /// `new_children[i]`). This node may be overfull afterwards.
    pub fn insert_split(&mut self, index: usize, separators: &[Vec<u8>], new_children: &[NodeId]) {
        assert_eq!(separators.len(), new_children.len(), "one separator per new child");
        assert!(index < self.children.len(), "child {index} of {}", self.children.len());
        let at = index + 1;
        self.separators.splice(index..index, separators.iter().cloned());
        self.children.splice(at..at, new_children.iter().copied());
        debug_assert!(self.separators.windows(2).all(|w| w[0] < w[1]), "separators ascend");
    }

    /// Child `index` (at least 1) was merged into its left neighbour: drops it and the
    /// separator between them; returns the dropped child. This node may be underfull after.
    pub fn remove_merged(&mut self, index: usize) -> NodeId {
        assert!(index >= 1 && index < self.children.len(), "merged child {index}");
        self.separators.remove(index - 1);
        self.children.remove(index)
    }

    /// Estimated heap bytes of the decoded node (what the node cache charges).
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.children.len() * std::mem::size_of::<NodeId>()
            + self
                .separators
                .iter()
                .map(|s| std::mem::size_of::<Vec<u8>>() + s.len())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> InnerNode {
        InnerNode {
            level: 1,
            separators: vec![b"f".to_vec(), b"p".to_vec()],
            children: vec![NodeId(1), NodeId(2), NodeId(3)],
            buffer: Some(BufferId(9)),
        }
    }

    #[test]
    fn child_index_follows_the_separators() {
        let n = node();
        assert_eq!(n.child_index(b"a"), 0);
        assert_eq!(n.child_index(b"f"), 1, "a separator is the low bound of its right child");
        assert_eq!(n.child_index(b"o"), 1);
        assert_eq!(n.child_index(b"p"), 2);
        assert_eq!(n.child_for(b"zzz"), NodeId(3));
        assert_eq!(n.child_bounds(0), (None, Some(&b"f"[..])));
        assert_eq!(n.child_bounds(1), (Some(&b"f"[..]), Some(&b"p"[..])));
        assert_eq!(n.child_bounds(2), (Some(&b"p"[..]), None));
        assert_eq!(n.payload_bytes(), 8 + 2 * (1 + 1 + 8));
    }

    #[test]
    fn split_children_are_inserted_and_merged_ones_removed() {
        let mut n = node();
        n.insert_split(1, &[b"h".to_vec(), b"k".to_vec()], &[NodeId(4), NodeId(5)]);
        assert_eq!(n.children, [NodeId(1), NodeId(2), NodeId(4), NodeId(5), NodeId(3)]);
        assert_eq!(n.separators, [b"f".to_vec(), b"h".to_vec(), b"k".to_vec(), b"p".to_vec()]);
        assert_eq!(n.remove_merged(3), NodeId(5));
        assert_eq!(n.children, [NodeId(1), NodeId(2), NodeId(4), NodeId(3)]);
        assert_eq!(n.separators, [b"f".to_vec(), b"h".to_vec(), b"p".to_vec()]);
        let root = InnerNode::new_root(2, NodeId(7), b"m".to_vec(), NodeId(8));
        assert_eq!(root.child_for(b"m"), NodeId(8));
    }
}
