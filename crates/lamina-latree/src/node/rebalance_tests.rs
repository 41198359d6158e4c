//! Splits, borrows and merges keep every entry, in order, in pieces that fit and are at least
//! a quarter full; `verify_node` catches each broken invariant.

use proptest::prelude::*;

use super::inner::InnerNode;
use super::layout::{BufferId, NodeId, NodeLayout};
use super::leaf::{LeafEntry, LeafNode};
use super::page::Node;
use super::rebalance::{Rebalanced, rebalance, split};
use super::test_support::{entries, inner_from, layouts};
use super::verify::{NodeContext, verify_node};

fn non_root<'a>(low: Option<&'a [u8]>, high: Option<&'a [u8]>) -> NodeContext<'a> {
    NodeContext { low, high, is_root: false }
}

fn leaf_of(entries: &[LeafEntry], right_sibling: Option<u64>) -> LeafNode {
    LeafNode::from_entries(entries, right_sibling.map(NodeId))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn split_leaves_keep_every_entry_in_quarter_full_pieces(
        (layout, entries) in layouts().prop_flat_map(|l| (Just(l), entries(l, 20..=300))),
        sibling: u64,
    ) {
        let original = leaf_of(&entries, Some(sibling));
        prop_assume!(original.payload_bytes() > layout.capacity_bytes());
        let mut split = split(Node::Leaf(original), &layout);
        let new_ids: Vec<NodeId> = (1..split.pieces.len() as u64).map(NodeId).collect();
        split.link_leaves(&new_ids);
        prop_assert_eq!(split.separators.len() + 1, split.pieces.len());
        let mut all = Vec::new();
        for (i, piece) in split.pieces.iter().enumerate() {
            let low = i.checked_sub(1).map(|j| split.separators[j].as_slice());
            let high = split.separators.get(i).map(Vec::as_slice);
            verify_node(piece, &layout, &non_root(low, high)).unwrap();
            let leaf = piece.as_leaf().unwrap();
            if i > 0 {
                prop_assert_eq!(leaf.first_key(), low);
            }
            let expected_link = new_ids.get(i).copied().or(Some(NodeId(sibling)));
            prop_assert_eq!(leaf.right_sibling, expected_link);
            all.extend(leaf.to_entries());
        }
        prop_assert_eq!(all, entries);
    }

    #[test]
    fn split_inner_nodes_keep_every_child_and_push_up_separators(
        (layout, entries) in layouts().prop_flat_map(|l| (Just(l), entries(l, 20..=300))),
    ) {
        let original = inner_from(2, &entries, Some(7));
        prop_assume!(original.payload_bytes() > layout.capacity_bytes());
        let split = split(Node::Inner(original.clone()), &layout);
        let mut children = Vec::new();
        let mut separators = Vec::new();
        for (i, piece) in split.pieces.iter().enumerate() {
            let low = i.checked_sub(1).map(|j| split.separators[j].as_slice());
            let high = split.separators.get(i).map(Vec::as_slice);
            verify_node(piece, &layout, &non_root(low, high)).unwrap();
            let inner = piece.as_inner().unwrap();
            prop_assert_eq!(inner.buffer, (i == 0).then_some(BufferId(7)));
            if i > 0 {
                separators.push(split.separators[i - 1].clone());
            }
            separators.extend(inner.separators.iter().cloned());
            children.extend(inner.children.iter().copied());
        }
        prop_assert_eq!(children, original.children);
        prop_assert_eq!(separators, original.separators);
    }

    #[test]
    fn an_underfull_leaf_merges_or_borrows(
        (layout, entries) in layouts().prop_flat_map(|l| (Just(l), entries(l, 2..=120))),
        cut_seed: usize,
    ) {
        // Two adjacent leaves, each as much of its share as fits a node.
        let fitting = |from: usize, to: usize| {
            let mut bytes = 0;
            (from..to).take_while(|&i| {
                bytes += entries[i].encoded_bytes();
                bytes <= layout.capacity_bytes()
            }).count()
        };
        // The left one underfull: a prefix of fewer than `underfull_bytes`.
        let mut bytes = 0;
        let underfull_prefix = entries[..entries.len() - 1].iter().take_while(|e| {
            bytes += e.encoded_bytes();
            bytes < layout.underfull_bytes()
        }).count();
        prop_assume!(underfull_prefix > 0);
        let cut = 1 + cut_seed % underfull_prefix;
        let entries = &entries[..cut + fitting(cut, entries.len())];
        let mut left = Node::Leaf(leaf_of(&entries[..cut], Some(2)));
        let mut right = Node::Leaf(leaf_of(&entries[cut..], Some(3)));
        prop_assert!(left.is_underfull(&layout) && right.fits(&layout));
        let separator = entries[cut].key.clone();
        let outcome = rebalance(&mut left, &separator, &mut right, &layout);
        let mut all = left.as_leaf().unwrap().to_entries();
        match outcome {
            Rebalanced::Merged { absorbed_buffer } => {
                prop_assert_eq!(absorbed_buffer, None);
                prop_assert_eq!(left.as_leaf().unwrap().right_sibling, Some(NodeId(3)));
                // Two underfull nodes may merge into one still under a quarter: the tree
                // then rebalances it again; only the structure is checked here.
                let anywhere = NodeContext { is_root: true, ..NodeContext::default() };
                verify_node(&left, &layout, &anywhere).unwrap();
            }
            Rebalanced::Redistributed { separator } => {
                verify_node(&left, &layout, &non_root(None, Some(&separator))).unwrap();
                verify_node(&right, &layout, &non_root(Some(&separator), None)).unwrap();
                prop_assert_eq!(left.as_leaf().unwrap().right_sibling, Some(NodeId(2)));
                prop_assert_eq!(right.as_leaf().unwrap().right_sibling, Some(NodeId(3)));
                all.extend(right.as_leaf().unwrap().to_entries());
            }
        }
        prop_assert_eq!(all, entries);
    }

    #[test]
    fn an_underfull_inner_node_merges_or_borrows(
        (layout, entries) in layouts().prop_flat_map(|l| (Just(l), entries(l, 3..=120))),
        cut_seed: usize,
    ) {
        // Separators `entries[..cut]`, `entries[cut]` in the parent, `entries[cut + 1..]`.
        let cut = cut_seed % (entries.len() - 1);
        let all = inner_from(1, &entries, None);
        let left_inner = InnerNode {
            level: 1,
            separators: all.separators[..cut].to_vec(),
            children: all.children[..=cut].to_vec(),
            buffer: Some(BufferId(10)),
        };
        let right_inner = InnerNode {
            level: 1,
            separators: all.separators[cut + 1..].to_vec(),
            children: all.children[cut + 1..].to_vec(),
            buffer: Some(BufferId(11)),
        };
        let (mut left, mut right) = (Node::Inner(left_inner), Node::Inner(right_inner));
        prop_assume!(left.fits(&layout) && right.fits(&layout));
        prop_assume!(left.is_underfull(&layout) || right.is_underfull(&layout));
        let outcome = rebalance(&mut left, &entries[cut].key, &mut right, &layout);
        let l = left.as_inner().unwrap().clone();
        prop_assert_eq!(l.buffer, Some(BufferId(10)));
        match outcome {
            Rebalanced::Merged { absorbed_buffer } => {
                prop_assert_eq!(absorbed_buffer, Some(BufferId(11)));
                prop_assert_eq!(&l.children, &all.children);
                prop_assert_eq!(&l.separators, &all.separators);
            }
            Rebalanced::Redistributed { separator } => {
                verify_node(&left, &layout, &non_root(None, Some(&separator))).unwrap();
                verify_node(&right, &layout, &non_root(Some(&separator), None)).unwrap();
                let r = right.as_inner().unwrap();
                prop_assert_eq!(r.buffer, Some(BufferId(11)));
                let mut separators = l.separators.clone();
                separators.push(separator);
                separators.extend(r.separators.iter().cloned());
                prop_assert_eq!(separators, all.separators.clone());
                let children: Vec<NodeId> = l.children.iter().chain(&r.children).copied().collect();
                prop_assert_eq!(children, all.children.clone());
            }
        }
    }
}

#[test]
fn one_insert_into_a_full_leaf_splits_it_in_two() {
    let layout = NodeLayout::new(512, 16, 16).unwrap();
    let mut leaf = LeafNode::new();
    let mut i = 0u8;
    while leaf.payload_bytes() <= layout.capacity_bytes() {
        leaf.upsert(&layout, &[b'k', i], &[i; 16]).unwrap();
        i += 1;
    }
    let split = split(Node::Leaf(leaf), &layout);
    assert_eq!(split.pieces.len(), 2);
    assert_eq!(split.separators, [vec![b'k', i / 2]]);
}

#[test]
fn verify_names_each_broken_invariant() {
    let layout = NodeLayout::new(512, 16, 16).unwrap();
    let entry = |k: &[u8]| LeafEntry { key: k.to_vec(), value: vec![0; 16] };
    let root = NodeContext { is_root: true, ..NodeContext::default() };
    let leaf = |keys: &[&[u8]]| {
        Node::Leaf(leaf_of(&keys.iter().map(|k| entry(k)).collect::<Vec<_>>(), None))
    };
    verify_node(&leaf(&[]), &layout, &root).unwrap();
    let check = |node: &Node, at: &NodeContext<'_>, needle: &str| {
        let err = verify_node(node, &layout, at).unwrap_err();
        assert!(err.contains(needle), "{err} lacks {needle}");
    };
    check(&leaf(&[b"b", b"a"]), &root, "ascending");
    check(&leaf(&[b"a"]), &non_root(None, None), "quarter");
    check(&leaf(&[b"a", b"m"]), &NodeContext { high: Some(b"m"), ..root }, "bounds");
    check(&leaf(&[b"a"]), &NodeContext { low: Some(b"b"), ..root }, "bounds");
    check(&leaf(&[&[1; 17]]), &root, "key of 17");
    let mut inner = InnerNode::new_root(1, NodeId(1), b"m".to_vec(), NodeId(2));
    verify_node(&Node::Inner(inner.clone()), &layout, &root).unwrap();
    check(&Node::Inner(inner.clone()), &NodeContext { low: Some(b"m"), ..root }, "bounds");
    inner.children[1] = NodeId(1);
    check(&Node::Inner(inner.clone()), &root, "twice");
    inner.children.pop();
    check(&Node::Inner(inner.clone()), &root, "1 children with 1 separators");
    inner.separators.clear();
    check(&Node::Inner(inner.clone()), &root, "single child");
    inner.level = 0;
    check(&Node::Inner(inner), &root, "level 0");
    let mut huge = LeafNode::new();
    for i in 0..40u8 {
        let e = entry(&[i; 16]);
        huge.push(&e.key, &e.value);
    }
    check(&Node::Leaf(huge), &root, "over the capacity");
}
