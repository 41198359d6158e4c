//! The byte layout of a node (`docs/format/latree-node.md`): the fixed header, its checksum,
//! and the checks a node passes before its payload is read. The payloads (leaf entries,
//! inner separators and children) are encoded by [`super::page`].
//!
//! A node is exactly `node_bytes` long: the header, the payload, zeros to the end. The
//! checksum covers the header after the CRC field and the payload, not the padding.

use lamina_core::checksum::{crc32c, mask, unmask};
use lamina_core::codec::{DecodeError, Reader};

use super::layout::{HEIGHT_MAX, NODE_HEADER_BYTES, NodeId, NodeLayout};

/// Magic at byte 0 of every node, `"LATN"` (u32 LE).
pub const NODE_MAGIC: u32 = u32::from_le_bytes(*b"LATN");
/// Version of the node format.
pub const NODE_FORMAT_VERSION: u8 = 1;
/// Offset of the CRC field.
const CRC_AT: usize = 4;
/// First byte the CRC covers.
const CRC_FROM: usize = 8;
/// Flag: the link field holds a right sibling (leaf) or a buffer id (inner).
const FLAG_LINK: u8 = 1;

/// What a node holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Keys and values (level 0).
    Leaf,
    /// Separators and children (level >= 1).
    Inner,
}

impl NodeKind {
    fn to_byte(self) -> u8 {
        match self {
            NodeKind::Leaf => 1,
            NodeKind::Inner => 2,
        }
    }

    fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(NodeKind::Leaf),
            2 => Some(NodeKind::Inner),
            _ => None,
        }
    }
}

/// The fixed head of a node (the magic and CRC are written by [`put_header`] and
/// [`seal_node`], checked by [`open_node`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeHeader {
    /// Leaf or inner.
    pub kind: NodeKind,
    /// 0 for a leaf, `1..HEIGHT_MAX` for an inner node.
    pub level: u8,
    /// Entries of a leaf, children of an inner node.
    pub count: u32,
    /// Bytes of payload after the header.
    pub payload_bytes: u32,
    /// The node's id: a node read for another id is refused.
    pub node_id: NodeId,
    /// A leaf's right sibling or an inner node's buffer id.
    pub link: Option<u64>,
    /// The store's write sequence number of this copy: the highest wins when the node table
    /// is rebuilt by scanning (out-of-place placement).
    pub write_seq: u64,
}

/// Appends the header (CRC zero until [`seal_node`]).
pub fn put_header(out: &mut Vec<u8>, header: &NodeHeader) {
    let start = out.len();
    out.extend_from_slice(&NODE_MAGIC.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.push(NODE_FORMAT_VERSION);
    out.push(header.kind.to_byte());
    out.push(header.level);
    out.push(if header.link.is_some() { FLAG_LINK } else { 0 });
    out.extend_from_slice(&header.count.to_le_bytes());
    out.extend_from_slice(&header.payload_bytes.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&header.node_id.0.to_le_bytes());
    out.extend_from_slice(&header.link.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&header.write_seq.to_le_bytes());
    assert_eq!(out.len() - start, NODE_HEADER_BYTES, "header layout");
}

/// Fills in the CRC of `node` (header then payload; the padding after the payload, if
/// present, is not covered).
pub fn seal_node(node: &mut [u8], payload_bytes: usize) {
    let end = NODE_HEADER_BYTES + payload_bytes;
    assert!(node.len() >= end, "a node holds its header and payload");
    let crc = mask(crc32c(&node[CRC_FROM..end]));
    node[CRC_AT..CRC_FROM].copy_from_slice(&crc.to_le_bytes());
}

/// Checks the node in `bytes` (exactly `layout.node_bytes()`): magic, checksum, version,
/// kind and level, flags and reserved bytes, the payload within the capacity, and the id if
/// `expected` is given. Returns the header and the payload; errors are relative to the start
/// of `bytes`.
pub fn open_node<'a>(
    bytes: &'a [u8],
    layout: &NodeLayout,
    expected: Option<NodeId>,
) -> Result<(NodeHeader, &'a [u8]), DecodeError> {
    if bytes.len() != layout.node_bytes() as usize {
        return Err(DecodeError::new(0, format!("node of {} bytes", bytes.len())));
    }
    let mut r = Reader::new(&bytes[..NODE_HEADER_BYTES]);
    let magic = r.u32()?;
    if magic != NODE_MAGIC {
        let what =
            if bytes.iter().all(|&b| b == 0) { "never written (zeros)" } else { "bad magic" };
        return Err(DecodeError::new(0, format!("not a node: {what} ({magic:#010x})")));
    }
    let stored = unmask(r.u32()?);
    // The payload length is only trusted once the CRC over it matches, so bound it first.
    let payload_field = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes")) as usize;
    if payload_field > layout.capacity_bytes() {
        return Err(DecodeError::new(16, format!("payload of {payload_field} bytes")));
    }
    let end = NODE_HEADER_BYTES + payload_field;
    let computed = crc32c(&bytes[CRC_FROM..end]);
    if stored != computed {
        return Err(DecodeError::new(
            CRC_AT,
            format!("node checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"),
        ));
    }
    let version = r.u8()?;
    if version != NODE_FORMAT_VERSION {
        return Err(DecodeError::new(8, format!("node format version {version}")));
    }
    let kind_byte = r.u8()?;
    let kind = NodeKind::from_byte(kind_byte)
        .ok_or_else(|| DecodeError::new(9, format!("node kind {kind_byte}")))?;
    let level = r.u8()?;
    if (kind == NodeKind::Leaf) != (level == 0) || level >= HEIGHT_MAX {
        return Err(DecodeError::new(10, format!("{kind:?} node at level {level}")));
    }
    let flags = r.u8()?;
    if flags & !FLAG_LINK != 0 {
        return Err(DecodeError::new(11, format!("unknown node flags {flags:#04x}")));
    }
    let count = r.u32()?;
    let payload_bytes = r.u32()?;
    if r.u32()? != 0 {
        return Err(DecodeError::new(20, "reserved node header bytes are not zero"));
    }
    let node_id = NodeId(r.u64()?);
    if expected.is_some_and(|id| id != node_id) {
        return Err(DecodeError::new(
            24,
            format!("{node_id} found where {} was expected", expected.expect("checked").0),
        ));
    }
    let link_value = r.u64()?;
    let link = if flags & FLAG_LINK != 0 {
        Some(link_value)
    } else if link_value != 0 {
        return Err(DecodeError::new(32, "link set without its flag"));
    } else {
        None
    };
    let write_seq = r.u64()?;
    r.finish()?;
    let header = NodeHeader { kind, level, count, payload_bytes, node_id, link, write_seq };
    Ok((header, &bytes[NODE_HEADER_BYTES..end]))
}
