//! Encode/decode of node pages: roundtrips, every damaged byte detected, malformed nodes with
//! valid checksums refused.

use std::path::Path;

use lamina_core::Error;
use lamina_core::codec::put_bytes;
use proptest::prelude::*;

use super::format::{NodeHeader, NodeKind, put_header, seal_node};
use super::layout::{HEIGHT_MAX, NODE_HEADER_BYTES, NodeId, NodeLayout};
use super::leaf::LeafNode;
use super::page::{Node, decode_node, encode_node};
use super::test_support::{entries, inner_from, layouts, leaf_that_fits};

fn small_layout() -> NodeLayout {
    NodeLayout::new(512, 16, 16).unwrap()
}

fn sample_leaf() -> Node {
    let mut leaf = LeafNode::new();
    for i in 0..10u8 {
        leaf.upsert(&small_layout(), &[b'k', i], &[i; 5]).unwrap();
    }
    leaf.right_sibling = Some(NodeId(77));
    Node::Leaf(leaf)
}

proptest! {
    #[test]
    fn leaves_roundtrip(
        (layout, entries) in layouts().prop_flat_map(|l| (Just(l), entries(l, 0..=64))),
        sibling in proptest::option::of(any::<u64>()),
        id: u64,
        seq: u64,
    ) {
        let mut leaf = leaf_that_fits(&layout, entries);
        leaf.right_sibling = sibling.map(NodeId);
        let node = Node::Leaf(leaf);
        let page = encode_node(&node, NodeId(id), seq, &layout);
        prop_assert_eq!(page.len(), layout.node_bytes() as usize);
        let decoded = decode_node(&page, &layout, Some(NodeId(id))).unwrap();
        prop_assert_eq!(decoded.node, node);
        prop_assert_eq!(decoded.node_id, NodeId(id));
        prop_assert_eq!(decoded.write_seq, seq);
    }

    #[test]
    fn inner_nodes_roundtrip(
        (layout, entries) in layouts().prop_flat_map(|l| (Just(l), entries(l, 0..=64))),
        level in 1..HEIGHT_MAX,
        buffer in proptest::option::of(any::<u64>()),
    ) {
        let mut inner = inner_from(level, &entries, buffer);
        while inner.payload_bytes() > layout.capacity_bytes() {
            inner.separators.pop();
            inner.children.pop();
        }
        let node = Node::Inner(inner);
        let page = encode_node(&node, NodeId(3), 9, &layout);
        prop_assert_eq!(decode_node(&page, &layout, Some(NodeId(3))).unwrap().node, node);
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 512)) {
        let _ = decode_node(&bytes, &small_layout(), None);
    }
}

#[test]
fn every_damaged_byte_is_detected_and_named() {
    let layout = small_layout();
    let node = sample_leaf();
    let page = encode_node(&node, NodeId(5), 1, &layout);
    let covered = NODE_HEADER_BYTES + node.payload_bytes();
    for at in 0..covered {
        for flip in [0x01u8, 0x80] {
            let mut bad = page.clone();
            bad[at] ^= flip;
            let err = decode_node(&bad, &layout, Some(NodeId(5))).unwrap_err();
            let err = err.at(Path::new("nodes.lat"), 4096);
            assert!(
                matches!(&err, Error::Corruption { file, offset, .. }
                    if file == Path::new("nodes.lat") && (4096..4096 + 512).contains(offset)),
                "byte {at}: {err}"
            );
        }
    }
    // The zero padding is not covered: damage there is harmless and not detected.
    let mut padded = page.clone();
    padded[covered] = 0xff;
    assert_eq!(decode_node(&padded, &layout, Some(NodeId(5))).unwrap().node, node);
}

#[test]
fn wrong_id_size_and_zeros_are_refused() {
    let layout = small_layout();
    let page = encode_node(&sample_leaf(), NodeId(5), 1, &layout);
    let err = decode_node(&page, &layout, Some(NodeId(6))).unwrap_err();
    assert!(err.reason.contains("node 5 found"), "{err}");
    assert!(decode_node(&page[..511], &layout, None).is_err());
    let err = decode_node(&[0; 512], &layout, None).unwrap_err();
    assert!(err.reason.contains("never written"), "{err}");
    let bigger = NodeLayout::new(1024, 16, 16).unwrap();
    assert!(decode_node(&page, &bigger, None).is_err(), "a page of another node size");
}

/// A page with a valid checksum around `payload` and the header fields given.
fn sealed(kind: NodeKind, level: u8, count: u32, payload: &[u8], link: Option<u64>) -> Vec<u8> {
    let header = NodeHeader {
        kind,
        level,
        count,
        payload_bytes: payload.len() as u32,
        node_id: NodeId(1),
        link,
        write_seq: 1,
    };
    let mut page = Vec::new();
    put_header(&mut page, &header);
    page.extend_from_slice(payload);
    seal_node(&mut page, payload.len());
    page.resize(512, 0);
    page
}

#[test]
fn malformed_nodes_with_valid_checksums_are_refused() {
    let layout = small_layout();
    let entry = |out: &mut Vec<u8>, key: &[u8]| {
        put_bytes(out, key);
        put_bytes(out, b"v");
    };
    let mut unsorted = Vec::new();
    entry(&mut unsorted, b"b");
    entry(&mut unsorted, b"a");
    let mut duplicate = Vec::new();
    entry(&mut duplicate, b"a");
    entry(&mut duplicate, b"a");
    let mut long_key = Vec::new();
    entry(&mut long_key, &[1; 17]);
    let mut good = Vec::new();
    entry(&mut good, b"a");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("unsorted", sealed(NodeKind::Leaf, 0, 2, &unsorted, None)),
        ("duplicate", sealed(NodeKind::Leaf, 0, 2, &duplicate, None)),
        ("key over the layout's limit", sealed(NodeKind::Leaf, 0, 1, &long_key, None)),
        ("count beyond the payload", sealed(NodeKind::Leaf, 0, 2, &good, None)),
        ("trailing bytes", sealed(NodeKind::Leaf, 0, 0, &good, None)),
        ("leaf above level 0", sealed(NodeKind::Leaf, 1, 1, &good, None)),
        ("inner at level 0", sealed(NodeKind::Inner, 0, 1, &[0; 8], None)),
        ("inner too tall", sealed(NodeKind::Inner, HEIGHT_MAX, 1, &[0; 8], None)),
        ("inner without children", sealed(NodeKind::Inner, 1, 0, &[], None)),
    ];
    for (what, page) in cases {
        assert!(decode_node(&page, &layout, None).is_err(), "{what} accepted");
    }
    let ok = sealed(NodeKind::Leaf, 0, 1, &good, Some(4));
    assert!(decode_node(&ok, &layout, None).is_ok());
    // Flags and reserved bytes, with the checksum recomputed.
    for (at, value) in [(11, 0x02u8), (20, 1), (8, 2)] {
        let mut bad = ok.clone();
        bad[at] = value;
        seal_node(&mut bad, good.len());
        assert!(decode_node(&bad, &layout, None).is_err(), "byte {at} = {value}");
    }
    let mut link_without_flag = sealed(NodeKind::Leaf, 0, 1, &good, None);
    link_without_flag[32] = 1;
    seal_node(&mut link_without_flag, good.len());
    assert!(decode_node(&link_without_flag, &layout, None).is_err());
    let mut past_capacity = ok.clone();
    past_capacity[16..20].copy_from_slice(&500u32.to_le_bytes());
    assert!(decode_node(&past_capacity, &layout, None).unwrap_err().reason.contains("payload"));
}

#[test]
#[should_panic(expected = "do not fit")]
fn an_overfull_node_is_never_encoded() {
    let layout = small_layout();
    let mut leaf = LeafNode::new();
    for i in 0..40u8 {
        leaf.upsert(&layout, &[i; 16], &[i; 16]).unwrap();
    }
    encode_node(&Node::Leaf(leaf), NodeId(1), 1, &layout);
}
