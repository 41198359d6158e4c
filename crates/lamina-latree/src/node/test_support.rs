//! Strategies and builders shared by the node tests.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::inner::InnerNode;
use super::layout::{BufferId, NodeId, NodeLayout};
use super::leaf::{LeafEntry, LeafNode};

/// Layouts with small limits, at their smallest node size or twice it.
pub fn layouts() -> impl Strategy<Value = NodeLayout> {
    (1usize..=48, 0usize..=160, 0u32..=1).prop_map(|(key_max, value_max, doubling)| {
        let node_bytes = NodeLayout::node_bytes_min_for(key_max, value_max) << doubling;
        NodeLayout::new(node_bytes, key_max, value_max).unwrap()
    })
}

/// Sorted distinct entries within the layout's limits, as many as `count` says.
pub fn entries(
    layout: NodeLayout,
    count: std::ops::RangeInclusive<usize>,
) -> impl Strategy<Value = Vec<LeafEntry>> {
    let key = proptest::collection::vec(any::<u8>(), 1..=layout.key_bytes_max());
    let value = proptest::collection::vec(any::<u8>(), 0..=layout.value_bytes_max());
    proptest::collection::btree_map(key, value, count).prop_map(|map: BTreeMap<_, _>| {
        map.into_iter().map(|(key, value)| LeafEntry { key, value }).collect()
    })
}

/// Keeps the longest prefix of `entries` that fits one node.
pub fn leaf_that_fits(layout: &NodeLayout, entries: Vec<LeafEntry>) -> LeafNode {
    let mut leaf = LeafNode::new();
    for entry in entries {
        if leaf.payload_bytes() + entry.encoded_bytes() > layout.capacity_bytes() {
            break;
        }
        leaf.push(&entry.key, &entry.value);
    }
    leaf
}

/// An inner node over the keys of `entries` as separators, children numbered from 1000.
pub fn inner_from(level: u8, entries: &[LeafEntry], buffer: Option<u64>) -> InnerNode {
    InnerNode {
        level,
        separators: entries.iter().map(|e| e.key.clone()).collect(),
        children: (0..=entries.len() as u64).map(|i| NodeId(1000 + i)).collect(),
        buffer: buffer.map(BufferId),
    }
}
