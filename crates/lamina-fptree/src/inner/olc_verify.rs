//! [`OlcInner`]'s expensive checks, for tests: the invariants of `olc.rs` on a quiescent
//! tree, and its leaves in key order.

use std::sync::atomic::Ordering;

use super::contract::LeafId;
use super::node::{Children, Node, pin};
use super::olc::OlcInnerOn;
use super::version::VersionWord;

/// What a walk of the tree found.
struct Walk {
    leaves: Vec<(Box<[u8]>, LeafId)>,
    bottom_depths: Vec<usize>,
    bytes: u64,
}

impl<W: VersionWord> OlcInnerOn<W> {
    /// The leaves in key order with their separators (the first one's is empty). Reads
    /// without validation: for a tree no writer is changing.
    pub fn leaves(&self) -> Vec<(Box<[u8]>, LeafId)> {
        self.walk().leaves
    }

    /// Checks every invariant of the tree (1-3 and 6 of `olc.rs`), the leaf count and the
    /// DRAM accounting; panics on a violation. For a tree no writer is changing.
    pub fn verify(&self) {
        let walk = self.walk();
        assert!(
            walk.bottom_depths.windows(2).all(|w| w[0] == w[1]),
            "bottom nodes at different depths: {:?}",
            walk.bottom_depths
        );
        assert_eq!(walk.leaves.len(), self.leaves.load(Ordering::Relaxed), "leaf count");
        assert!(walk.leaves.windows(2).all(|w| w[0].0 < w[1].0), "separators out of order");
        assert_eq!(walk.bytes, self.dram_bytes.load(Ordering::Relaxed), "dram_bytes");
    }

    fn walk(&self) -> Walk {
        let guard = pin();
        let content = self.sentinel.content(&guard);
        assert_eq!(content.keys.len(), 0, "the sentinel has no keys");
        let Children::Nodes(roots) = &content.children else { panic!("the sentinel names a node") };
        let root = roots[0].content(&guard);
        assert!(
            root.children.len() > 1 || matches!(root.children, Children::Leaves(_)),
            "an inner root has two children or more"
        );
        let mut walk =
            Walk { leaves: Vec::new(), bottom_depths: Vec::new(), bytes: content.bytes() };
        self.walk_node(&roots[0], &[], None, 1, &mut walk);
        walk
    }

    /// Walks `node`, whose range is `[lower, upper)` (`upper` `None`: unbounded).
    fn walk_node(
        &self,
        node: &Node<W>,
        lower: &[u8],
        upper: Option<&[u8]>,
        depth: usize,
        walk: &mut Walk,
    ) {
        let guard = pin();
        assert!(node.lock.read().is_some(), "a node in the tree is locked or obsolete");
        let content = node.content(&guard);
        walk.bytes += content.bytes();
        let count = content.children.len();
        assert!((1..=self.fanout_max).contains(&count), "{count} children");
        let keys: Vec<&[u8]> = content.keys.iter().collect();
        for (i, key) in keys.iter().enumerate() {
            assert!(*key > lower, "key below the node's range");
            assert!(upper.is_none_or(|upper| *key < upper), "key above the node's range");
            assert!(i == 0 || keys[i - 1] < *key, "keys out of order");
        }
        let bound = |i: usize| if i == 0 { lower } else { keys[i - 1] };
        let upper_of = |i: usize| if i < keys.len() { Some(keys[i]) } else { upper };
        match &content.children {
            Children::Leaves(leaves) => {
                walk.bottom_depths.push(depth);
                for (i, &leaf) in leaves.iter().enumerate() {
                    walk.leaves.push((bound(i).into(), leaf));
                }
            }
            Children::Nodes(nodes) => {
                for (i, child) in nodes.iter().enumerate() {
                    self.walk_node(child, bound(i), upper_of(i), depth + 1, walk);
                }
            }
        }
    }
}
