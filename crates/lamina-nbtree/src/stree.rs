//! The structural tree (s-tree, paper section 3.1): a B-tree whose nodes hold s-keys and
//! child pointers but no values, each s-node owning one d-tree.
//!
//! # Invariants (checked by `verify.rs`)
//! - S-tree fanout: an internal s-node has at most `f` children and, unless it is the root,
//!   at least `ceil(f / 2)`; it has one s-key fewer than children, sorted strictly. The root
//!   may have a single child (adaptation: a tree whose data fits one d-tree; the paper's
//!   root would be a leaf holding it, but lamina keeps the root's d-tree in memory only).
//! - Cross-s-node linkage: every s-key and d-key under child `i` of a node lies in
//!   `[K_(i-1), K_i)` of that node (open ends at the first and last child).
//! - Lazy removal (section 5.1): the entries of a node's d-tree at or below
//!   `flushed_through` were moved to its children and are not part of the node; the rest is
//!   its live part, of `live_bytes` (what counts toward sigma).
//! - The root owns no on-disk d-tree (its d-tree is the in-memory memtable).
//! - All leaves are at the same depth.
//!
//! An `STree` is immutable once published: the flush job edits its own copy and publishes
//! a new one (`version.rs`), so readers never wait for a flush.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::dtree::DTree;

/// Identifies an s-node (stable across versions and reopens).
pub type NodeId = u64;

/// Most s-nodes an s-tree may have (the manifest's limit).
pub const NODES_MAX: usize = 1 << 20;

/// One s-node.
#[derive(Debug, Clone)]
pub struct SNode {
    /// Its id.
    pub id: NodeId,
    /// Sorted s-keys, one fewer than `children` (none in a leaf).
    pub keys: Vec<Vec<u8>>,
    /// Child s-nodes (none in a leaf).
    pub children: Vec<NodeId>,
    /// Its d-tree (`None`: empty).
    pub dtree: Option<Arc<DTree>>,
    /// Lazy removal: the last key flushed to the children (`None`: nothing flushed since
    /// the d-tree was written).
    pub flushed_through: Option<Vec<u8>>,
    /// Bytes of the live part (`entry_bytes` summed), what counts toward sigma.
    pub live_bytes: u64,
    /// Entries of the live part.
    pub live_entries: u64,
}

impl SNode {
    /// A node with no d-tree.
    pub fn empty(id: NodeId) -> SNode {
        SNode {
            id,
            keys: Vec::new(),
            children: Vec::new(),
            dtree: None,
            flushed_through: None,
            live_bytes: 0,
            live_entries: 0,
        }
    }

    /// Whether it has no children.
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// The child whose range holds `key` (section 3.2.3: `K_(i-1) <= key < K_i`).
    pub fn child_index(&self, key: &[u8]) -> usize {
        self.keys.partition_point(|k| k.as_slice() <= key)
    }

    /// The key range of child `i`: `(low, high)`, low included, high excluded, `None` open.
    pub fn child_range(&self, i: usize) -> (Option<&[u8]>, Option<&[u8]>) {
        assert!(i < self.children.len().max(1));
        let low = i.checked_sub(1).map(|j| self.keys[j].as_slice());
        (low, self.keys.get(i).map(Vec::as_slice))
    }

    /// Whether `key` is in the live part of the d-tree (beyond the lazily removed prefix).
    pub fn is_live(&self, key: &[u8]) -> bool {
        self.flushed_through.as_deref().is_none_or(|f| key > f)
    }

    /// Installs a newly written d-tree as the whole of this node's data.
    pub fn set_dtree(&mut self, dtree: Option<Arc<DTree>>, bytes: u64, entries: u64) {
        self.dtree = dtree;
        self.flushed_through = None;
        self.live_bytes = bytes;
        self.live_entries = entries;
    }
}

/// An s-tree: its nodes by id and its root.
#[derive(Debug, Clone)]
pub struct STree {
    /// Every s-node.
    pub nodes: BTreeMap<NodeId, SNode>,
    /// The root.
    pub root: NodeId,
    /// The id the next new s-node gets.
    pub next_node_id: NodeId,
}

impl Default for STree {
    fn default() -> Self {
        STree::new()
    }
}

impl STree {
    /// A tree of one empty root.
    pub fn new() -> STree {
        let mut nodes = BTreeMap::new();
        nodes.insert(1, SNode::empty(1));
        STree { nodes, root: 1, next_node_id: 2 }
    }

    /// The node `id` (it must exist).
    pub fn node(&self, id: NodeId) -> &SNode {
        self.nodes.get(&id).unwrap_or_else(|| panic!("s-node {id} is not in the tree"))
    }

    /// The node `id`, to change (it must exist).
    pub fn node_mut(&mut self, id: NodeId) -> &mut SNode {
        self.nodes.get_mut(&id).unwrap_or_else(|| panic!("s-node {id} is not in the tree"))
    }

    /// A new empty node.
    pub fn add_node(&mut self) -> NodeId {
        let id = self.next_node_id;
        self.next_node_id += 1;
        assert!(self.nodes.len() < NODES_MAX, "the s-tree has {NODES_MAX} s-nodes");
        self.nodes.insert(id, SNode::empty(id));
        id
    }

    /// The root node.
    pub fn root(&self) -> &SNode {
        self.node(self.root)
    }

    /// Levels of s-nodes, the root's included (1: the root alone).
    pub fn height(&self) -> usize {
        let mut height = 1;
        let mut node = self.root();
        while let Some(&first) = node.children.first() {
            height += 1;
            node = self.node(first);
        }
        height
    }

    /// The s-nodes from the root to the leaf whose range holds `key`.
    pub fn path(&self, key: &[u8]) -> Vec<&SNode> {
        let mut out = Vec::with_capacity(8);
        let mut node = self.root();
        loop {
            out.push(node);
            if node.is_leaf() {
                return out;
            }
            node = self.node(node.children[node.child_index(key)]);
        }
    }

    /// Every d-tree the tree refers to.
    pub fn dtrees(&self) -> impl Iterator<Item = &Arc<DTree>> {
        self.nodes.values().filter_map(|n| n.dtree.as_ref())
    }

    /// Sum of the live bytes of every node.
    pub fn live_bytes(&self) -> u64 {
        self.nodes.values().map(|n| n.live_bytes).sum()
    }

    /// The parent of `id` and `id`'s index among its children (`None` for the root).
    pub fn parent_of(&self, id: NodeId) -> Option<(NodeId, usize)> {
        self.nodes
            .values()
            .find_map(|n| n.children.iter().position(|&c| c == id).map(|i| (n.id, i)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_index_follows_the_linkage_property() {
        let mut node = SNode::empty(1);
        node.keys = vec![b"b".to_vec(), b"d".to_vec()];
        node.children = vec![2, 3, 4];
        assert_eq!(node.child_index(b"a"), 0);
        assert_eq!(node.child_index(b"b"), 1);
        assert_eq!(node.child_index(b"c"), 1);
        assert_eq!(node.child_index(b"d"), 2);
        assert_eq!(node.child_range(0), (None, Some(&b"b"[..])));
        assert_eq!(node.child_range(2), (Some(&b"d"[..]), None));
        node.flushed_through = Some(b"c".to_vec());
        assert!(!node.is_live(b"c") && node.is_live(b"ca"));
    }

    #[test]
    fn a_new_tree_is_one_root_leaf() {
        let mut t = STree::new();
        assert_eq!(t.height(), 1);
        let c = t.add_node();
        t.node_mut(1).children.push(c);
        assert_eq!(t.height(), 2);
        assert_eq!(t.parent_of(c), Some((1, 0)));
        assert_eq!(t.path(b"x").len(), 2);
    }
}
