//! A decoded node ([`Node`]) and its encoding into one `node_bytes` page
//! (`docs/format/latree-node.md`): the header of [`super::format`], then the payload.
//!
//! Leaf payload: `count` entries of `varint key_len, key, varint value_len, value`, keys
//! strictly ascending. Inner payload: the first child (u64), then `count - 1` times
//! `varint key_len, separator, child (u64)`, separators strictly ascending.

use lamina_core::codec::{DecodeError, Reader, put_bytes};

use super::format::{NodeHeader, NodeKind, open_node, put_header, seal_node};
use super::inner::InnerNode;
use super::layout::{BufferId, NODE_HEADER_BYTES, NodeId, NodeLayout};
use super::leaf::LeafNode;

/// A decoded node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A leaf.
    Leaf(LeafNode),
    /// An inner node.
    Inner(InnerNode),
}

impl Node {
    /// Leaf or inner.
    pub fn kind(&self) -> NodeKind {
        match self {
            Node::Leaf(_) => NodeKind::Leaf,
            Node::Inner(_) => NodeKind::Inner,
        }
    }

    /// 0 for a leaf, the inner node's level otherwise.
    pub fn level(&self) -> u8 {
        match self {
            Node::Leaf(_) => 0,
            Node::Inner(inner) => inner.level,
        }
    }

    /// Bytes of payload the node's encoding takes.
    pub fn payload_bytes(&self) -> usize {
        match self {
            Node::Leaf(leaf) => leaf.payload_bytes(),
            Node::Inner(inner) => inner.payload_bytes(),
        }
    }

    /// Whether the node fits one page of `layout` (else it must be split before it is
    /// written).
    pub fn fits(&self, layout: &NodeLayout) -> bool {
        self.payload_bytes() <= layout.capacity_bytes()
    }

    /// Whether a non-root node this full must be rebalanced (less than a quarter full).
    pub fn is_underfull(&self, layout: &NodeLayout) -> bool {
        self.payload_bytes() < layout.underfull_bytes()
    }

    /// Estimated heap bytes of the decoded node.
    pub fn memory_bytes(&self) -> usize {
        match self {
            Node::Leaf(leaf) => leaf.memory_bytes(),
            Node::Inner(inner) => inner.memory_bytes(),
        }
    }

    /// The leaf, if this is one.
    pub fn as_leaf(&self) -> Option<&LeafNode> {
        match self {
            Node::Leaf(leaf) => Some(leaf),
            Node::Inner(_) => None,
        }
    }

    /// The inner node, if this is one.
    pub fn as_inner(&self) -> Option<&InnerNode> {
        match self {
            Node::Inner(inner) => Some(inner),
            Node::Leaf(_) => None,
        }
    }
}

/// A node read back, with what its header says about this copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedNode {
    /// The node.
    pub node: Node,
    /// The id in its header.
    pub node_id: NodeId,
    /// The write sequence number of this copy.
    pub write_seq: u64,
}

/// The page of `node` as node `id`, copy `write_seq`: exactly `layout.node_bytes()` bytes.
/// The node must fit ([`Node::fits`]; split it first) and hold entries within the layout's
/// limits (the operations that add them check).
pub fn encode_node(node: &Node, id: NodeId, write_seq: u64, layout: &NodeLayout) -> Vec<u8> {
    let payload_bytes = node.payload_bytes();
    assert!(node.fits(layout), "{id}: {payload_bytes} payload bytes do not fit");
    let (count, link) = match node {
        Node::Leaf(leaf) => (leaf.len(), leaf.right_sibling.map(|s| s.0)),
        Node::Inner(inner) => (inner.children.len(), inner.buffer.map(|b| b.0)),
    };
    let header = NodeHeader {
        kind: node.kind(),
        level: node.level(),
        count: u32::try_from(count).expect("bounded by the node size"),
        payload_bytes: payload_bytes as u32,
        node_id: id,
        link,
        write_seq,
    };
    let mut out = Vec::with_capacity(layout.node_bytes() as usize);
    put_header(&mut out, &header);
    match node {
        Node::Leaf(leaf) => {
            for (key, value) in leaf.iter() {
                put_bytes(&mut out, key);
                put_bytes(&mut out, value);
            }
        }
        Node::Inner(inner) => {
            assert_eq!(inner.children.len(), inner.separators.len() + 1, "{id}: children");
            out.extend_from_slice(&inner.children[0].0.to_le_bytes());
            for (separator, child) in inner.separators.iter().zip(&inner.children[1..]) {
                put_bytes(&mut out, separator);
                out.extend_from_slice(&child.0.to_le_bytes());
            }
        }
    }
    assert_eq!(out.len(), NODE_HEADER_BYTES + payload_bytes, "payload_bytes agrees with encoding");
    seal_node(&mut out, payload_bytes);
    out.resize(layout.node_bytes() as usize, 0);
    out
}

/// Decodes a page written by [`encode_node`]; with `expected`, a page of another node is
/// refused. Errors are relative to the start of `bytes` (the caller adds the page's offset
/// in its file: [`DecodeError::at`]).
pub fn decode_node(
    bytes: &[u8],
    layout: &NodeLayout,
    expected: Option<NodeId>,
) -> Result<DecodedNode, DecodeError> {
    let (header, payload) = open_node(bytes, layout, expected)?;
    // Offsets below are within the payload; shift them to the page.
    let shift = |e: DecodeError| DecodeError::new(e.offset + NODE_HEADER_BYTES, e.reason);
    let count = header.count as usize;
    if count > payload.len().max(1) {
        return Err(DecodeError::new(12, format!("{count} records in {} bytes", payload.len())));
    }
    let mut r = Reader::new(payload);
    let node = match header.kind {
        NodeKind::Leaf => {
            // Keys and values take less than the payload (their lengths are in it too).
            let mut leaf = LeafNode::with_capacity(count, payload.len());
            for _ in 0..count {
                let at = r.position();
                let key = r.bytes_with_len(layout.key_bytes_max()).map_err(shift)?;
                let value = r.bytes_with_len(layout.value_bytes_max()).map_err(shift)?;
                if leaf.last_key().is_some_and(|last| last >= key) {
                    return Err(shift(DecodeError::new(at, "leaf keys not strictly ascending")));
                }
                leaf.push(key, value);
            }
            leaf.right_sibling = header.link.map(NodeId);
            Node::Leaf(leaf)
        }
        NodeKind::Inner => {
            if count == 0 {
                return Err(DecodeError::new(12, "inner node without children"));
            }
            let mut children = Vec::with_capacity(count);
            let mut separators: Vec<Vec<u8>> = Vec::with_capacity(count - 1);
            children.push(NodeId(r.u64().map_err(shift)?));
            for _ in 1..count {
                let at = r.position();
                let key = r.bytes_with_len(layout.key_bytes_max()).map_err(shift)?.to_vec();
                // No separator is the empty key: child 0 would hold nothing (keys below it).
                if key.is_empty() || separators.last().is_some_and(|last| *last >= key) {
                    return Err(shift(DecodeError::new(at, "separators not strictly ascending")));
                }
                separators.push(key);
                children.push(NodeId(r.u64().map_err(shift)?));
            }
            Node::Inner(InnerNode {
                level: header.level,
                separators,
                children,
                buffer: header.link.map(BufferId),
            })
        }
    };
    r.finish().map_err(shift)?;
    Ok(DecodedNode { node, node_id: header.node_id, write_seq: header.write_seq })
}
