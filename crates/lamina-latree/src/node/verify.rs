//! `verify_node`: every invariant of one node, given where it sits in the tree (its key
//! bounds from the parent and whether it is the root). The tree's `verify()` walks the nodes
//! and calls this on each, checking between nodes what only it can see (children one level
//! down, leaves chained left to right).

use std::collections::HashSet;

use super::layout::{HEIGHT_MAX, NodeLayout};
use super::page::Node;

/// Where a node sits.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeContext<'a> {
    /// Inclusive low bound of the node's keys (the parent's separator to its left).
    pub low: Option<&'a [u8]>,
    /// Exclusive high bound (the parent's separator to its right).
    pub high: Option<&'a [u8]>,
    /// The root may be less than a quarter full (a leaf root may be empty).
    pub is_root: bool,
}

/// Checks `node` against every node invariant; the error says which failed.
pub fn verify_node(node: &Node, layout: &NodeLayout, at: &NodeContext<'_>) -> Result<(), String> {
    let payload = node.payload_bytes();
    if !node.fits(layout) {
        return Err(format!(
            "{payload} payload bytes over the capacity {}",
            layout.capacity_bytes()
        ));
    }
    if !at.is_root && node.is_underfull(layout) {
        return Err(format!(
            "non-root node of {payload} payload bytes is under a quarter full ({})",
            layout.underfull_bytes()
        ));
    }
    let in_bounds = |key: &[u8], low_inclusive: bool| {
        let above_low = at.low.is_none_or(|low| if low_inclusive { key >= low } else { key > low });
        above_low && at.high.is_none_or(|high| key < high)
    };
    match node {
        Node::Leaf(leaf) => {
            for (i, (key, value)) in leaf.iter().enumerate() {
                if key.len() > layout.key_bytes_max() {
                    return Err(format!("entry {i}: key of {} bytes", key.len()));
                }
                if value.len() > layout.value_bytes_max() {
                    return Err(format!("entry {i}: value of {} bytes", value.len()));
                }
                if i > 0 && leaf.key(i - 1) >= key {
                    return Err(format!("entry {i}: keys not strictly ascending"));
                }
                if !in_bounds(key, true) {
                    return Err(format!("entry {i}: key outside the node's bounds"));
                }
            }
        }
        Node::Inner(inner) => {
            if inner.level == 0 || inner.level >= HEIGHT_MAX {
                return Err(format!("inner node at level {}", inner.level));
            }
            if inner.children.len() != inner.separators.len() + 1 {
                return Err(format!(
                    "{} children with {} separators",
                    inner.children.len(),
                    inner.separators.len()
                ));
            }
            if at.is_root && inner.children.len() < 2 {
                return Err("inner root with a single child".to_owned());
            }
            for (i, separator) in inner.separators.iter().enumerate() {
                // The empty key as a separator would leave child 0 no keys at all.
                if separator.is_empty() || separator.len() > layout.key_bytes_max() {
                    return Err(format!("separator {i} of {} bytes", separator.len()));
                }
                if i > 0 && inner.separators[i - 1] >= *separator {
                    return Err(format!("separator {i}: not strictly ascending"));
                }
                // Strictly above the low bound: child 0's range must not be empty.
                if !in_bounds(separator, false) {
                    return Err(format!("separator {i} outside the node's bounds"));
                }
            }
            let distinct: HashSet<_> = inner.children.iter().collect();
            if distinct.len() != inner.children.len() {
                return Err("a child appears twice".to_owned());
            }
        }
    }
    Ok(())
}
