//! The byte layout of a d-tree file (`docs/format/nbtree-dtree.md`): file names, the node
//! header and its checksum, and the footer. The payloads of nodes (entries of a leaf,
//! children of an internal node) are in [`super::node`].
//!
//! A file is a sequence of pages of `page_bytes`: the nodes (leaves in key order, each
//! internal node after its children), then the Bloom section, then the footer page, whose last
//! [`FOOTER_BYTES`] bytes are the footer. Page numbers address nodes (`byte = page *
//! page_bytes`).

use lamina_core::checksum::{crc32c, crc32c_append, mask, unmask};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};

use crate::options::{PAGE_BYTES_MAX, PAGE_BYTES_MIN};

/// File name of d-tree `id`.
pub fn file_name(id: u64) -> String {
    format!("nb-{id:016x}.dt")
}

/// The d-tree id of a file name made by [`file_name`].
pub fn parse_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("nb-")?.strip_suffix(".dt")?;
    if hex.len() != 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// How d-trees are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DTreeParams {
    /// Page size: every node is a whole number of pages.
    pub page_bytes: u32,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits_per_key: u32,
}

/// Bytes of a node header, at the start of the node's first page: masked CRC32C (u32),
/// kind (u8), level (u8), reserved (u16, zero), entries (u32), payload bytes (u32), the
/// node's first page (u64), the d-tree id (u64).
pub const NODE_HEADER_BYTES: usize = 32;
/// Offset of the first byte the node checksum covers (everything after the CRC field, up to
/// the end of the payload; the zero padding after the payload is not covered).
const NODE_CRC_START: usize = 4;
/// Most children of an internal node and entries of a leaf (a page of 64 KiB holds fewer
/// than 2^15 of the smallest entries).
pub const NODE_ENTRIES_MAX: u32 = 1 << 16;
/// Tallest tree accepted: every internal node has at least 2 children, so a tree of
/// `2^(HEIGHT_MAX - 1)` leaves fits, far more than any file holds.
pub const HEIGHT_MAX: u32 = 48;
/// Footer magic, `"NBDT"` (u32 LE).
const FOOTER_MAGIC: u32 = u32::from_le_bytes(*b"NBDT");
/// Version of the file format.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes of the footer: the last bytes of the file (of its last page).
pub const FOOTER_BYTES: usize = 120;
/// Largest encoded Bloom filter accepted (`lamina_storage::bloom`: a 10-byte head and at most
/// `BUCKETS_MAX` buckets of 64 bytes).
pub const BLOOM_BYTES_MAX: u64 = 10 + 64 * lamina_storage::bloom::BUCKETS_MAX;

/// What a node holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// Entries (level 0).
    Leaf,
    /// Children and their first keys (level >= 1).
    Internal,
}

impl NodeKind {
    fn to_byte(self) -> u8 {
        match self {
            NodeKind::Leaf => 1,
            NodeKind::Internal => 2,
        }
    }

    fn from_byte(byte: u8) -> Option<NodeKind> {
        match byte {
            1 => Some(NodeKind::Leaf),
            2 => Some(NodeKind::Internal),
            _ => None,
        }
    }
}

/// The fixed head of every node (the CRC is written by [`seal_node`], checked by
/// [`open_node`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeHeader {
    /// Leaf or internal.
    pub kind: NodeKind,
    /// 0 for a leaf; 1 + the level of the children for an internal node.
    pub level: u8,
    /// Entries of a leaf, children of an internal node (at least 1).
    pub entries: u32,
    /// Bytes of payload after the header.
    pub payload_bytes: u32,
    /// The node's first page in the file: a node read from anywhere else is refused.
    pub page: u64,
    /// The d-tree's id: a node of another d-tree is refused.
    pub dtree_id: u64,
}

impl NodeHeader {
    /// Pages the node occupies with `page_bytes` pages.
    pub fn pages(&self, page_bytes: u32) -> u64 {
        node_pages(self.payload_bytes as usize, page_bytes)
    }
}

/// Pages of a node with `payload_bytes` of payload.
pub fn node_pages(payload_bytes: usize, page_bytes: u32) -> u64 {
    ((NODE_HEADER_BYTES + payload_bytes) as u64).div_ceil(u64::from(page_bytes))
}

impl Encode for NodeHeader {
    fn encoded_len(&self) -> usize {
        NODE_HEADER_BYTES
    }

    /// Writes the header with a zero CRC; [`seal_node`] fills it in.
    fn encode_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&0u32.to_le_bytes());
        out.push(self.kind.to_byte());
        out.push(self.level);
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&self.entries.to_le_bytes());
        out.extend_from_slice(&self.payload_bytes.to_le_bytes());
        out.extend_from_slice(&self.page.to_le_bytes());
        out.extend_from_slice(&self.dtree_id.to_le_bytes());
    }
}

impl Decode for NodeHeader {
    /// Decodes the header's fields (the CRC field is skipped: [`open_node`] checks it).
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let _crc = r.u32()?;
        let kind_byte = r.u8()?;
        let kind = NodeKind::from_byte(kind_byte)
            .ok_or_else(|| DecodeError::new(4, format!("node kind {kind_byte}")))?;
        let level = r.u8()?;
        if (kind == NodeKind::Leaf) != (level == 0) || u32::from(level) >= HEIGHT_MAX {
            return Err(DecodeError::new(5, format!("{kind:?} node at level {level}")));
        }
        if r.u16()? != 0 {
            return Err(DecodeError::new(6, "reserved node header bytes are not zero"));
        }
        let entries = r.u32()?;
        if entries == 0 || entries > NODE_ENTRIES_MAX {
            return Err(DecodeError::new(8, format!("node of {entries} entries")));
        }
        let payload_bytes = r.u32()?;
        let page = r.u64()?;
        let dtree_id = r.u64()?;
        r.finish()?;
        Ok(NodeHeader { kind, level, entries, payload_bytes, page, dtree_id })
    }
}

/// Fills in the CRC of a node whose header and payload are `node` (no padding).
pub fn seal_node(node: &mut [u8]) {
    assert!(node.len() >= NODE_HEADER_BYTES, "a node starts with its header");
    let crc = mask(crc32c(&node[NODE_CRC_START..]));
    node[..NODE_CRC_START].copy_from_slice(&crc.to_le_bytes());
}

/// Checks the node at the start of `bytes` (which may run on past it): its header decodes, it
/// is at `page` of d-tree `dtree_id`, its payload fits in `bytes`, and its CRC matches.
/// Returns the header and the payload. Errors are relative to the start of `bytes`.
pub fn open_node(
    bytes: &[u8],
    page: u64,
    dtree_id: u64,
) -> Result<(NodeHeader, &[u8]), DecodeError> {
    if bytes.len() < NODE_HEADER_BYTES {
        return Err(DecodeError::new(0, "node shorter than its header"));
    }
    let header = NodeHeader::decode(&bytes[..NODE_HEADER_BYTES])?;
    let end = NODE_HEADER_BYTES + header.payload_bytes as usize;
    if end > bytes.len() {
        return Err(DecodeError::new(
            12,
            format!("node payload of {} bytes past its pages", header.payload_bytes),
        ));
    }
    let stored = unmask(u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")));
    let computed = crc32c_append(
        crc32c(&bytes[NODE_CRC_START..NODE_HEADER_BYTES]),
        &bytes[NODE_HEADER_BYTES..end],
    );
    if stored != computed {
        return Err(DecodeError::new(
            0,
            format!("node checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"),
        ));
    }
    if header.page != page || header.dtree_id != dtree_id {
        return Err(DecodeError::new(
            16,
            format!(
                "node of d-tree {:016x} page {} found at d-tree {dtree_id:016x} page {page}",
                header.dtree_id, header.page
            ),
        ));
    }
    Ok((header, &bytes[NODE_HEADER_BYTES..end]))
}

/// The footer: where everything is and what the d-tree holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The d-tree's id (as in its file name).
    pub dtree_id: u64,
    /// Page size of the file.
    pub page_bytes: u32,
    /// Levels of nodes: 0 for an empty d-tree, 1 when the root is a leaf.
    pub height: u32,
    /// Entries (puts and deletes).
    pub entries: u64,
    /// Delete entries among them.
    pub deletes: u64,
    /// Sum of the entries' `entry_bytes`.
    pub entry_bytes: u64,
    /// Leaves.
    pub leaves: u64,
    /// Internal nodes.
    pub internal_nodes: u64,
    /// Pages of the node section (pages `0..node_pages`).
    pub node_pages: u64,
    /// First page of the root (the last node written).
    pub root_page: u64,
    /// Pages of the root.
    pub root_pages: u64,
    /// First page of the Bloom section (right after the nodes).
    pub bloom_page: u64,
    /// Bytes of the encoded Bloom filter.
    pub bloom_bytes: u64,
    /// Masked CRC32C of the encoded Bloom filter.
    pub bloom_crc: u32,
    /// Pages of the file, the footer page included.
    pub file_pages: u64,
}

impl Footer {
    /// Bytes of the file it describes.
    pub fn file_bytes(&self) -> u64 {
        self.file_pages * u64::from(self.page_bytes)
    }

    /// Pages of the Bloom section.
    pub fn bloom_pages(&self) -> u64 {
        self.bloom_bytes.div_ceil(u64::from(self.page_bytes))
    }

    /// Every relation between the fields (called by `decode`; the reasons name the field).
    fn check(&self) -> Result<(), String> {
        let p = self.page_bytes;
        if !(PAGE_BYTES_MIN..=PAGE_BYTES_MAX).contains(&p) || !p.is_power_of_two() {
            return Err(format!("page size {p}"));
        }
        if self.height > HEIGHT_MAX {
            return Err(format!("height {}", self.height));
        }
        let empty = self.entries == 0;
        if empty != (self.leaves == 0) || empty != (self.height == 0) {
            return Err(format!(
                "{} entries in {} leaves of height {}",
                self.entries, self.leaves, self.height
            ));
        }
        if self.leaves > self.entries || self.deletes > self.entries {
            return Err(format!(
                "{} leaves and {} deletes for {} entries",
                self.leaves, self.deletes, self.entries
            ));
        }
        let entry_min = crate::entry::entry_bytes(1, None);
        if self.entries.checked_mul(entry_min).is_none_or(|min| self.entry_bytes < min) {
            return Err(format!("{} entry bytes for {} entries", self.entry_bytes, self.entries));
        }
        let nodes_ok = match self.height {
            0 => self.internal_nodes == 0 && self.node_pages == 0 && self.root_pages == 0,
            1 => self.leaves == 1 && self.internal_nodes == 0,
            h => self.leaves >= 2 && self.internal_nodes >= u64::from(h - 1),
        };
        if !nodes_ok {
            return Err(format!(
                "height {} with {} leaves and {} internal nodes",
                self.height, self.leaves, self.internal_nodes
            ));
        }
        let node_count = self.leaves + self.internal_nodes;
        if node_count > self.node_pages {
            return Err(format!("{node_count} nodes in {} pages", self.node_pages));
        }
        if self.root_page.checked_add(self.root_pages) != Some(self.node_pages)
            || (self.height > 0 && self.root_pages == 0)
        {
            return Err(format!(
                "root at page {} of {} pages does not end the {} node pages",
                self.root_page, self.root_pages, self.node_pages
            ));
        }
        if self.bloom_page != self.node_pages {
            return Err(format!("Bloom section at page {}", self.bloom_page));
        }
        if !(10..=BLOOM_BYTES_MAX).contains(&self.bloom_bytes) {
            return Err(format!("Bloom filter of {} bytes", self.bloom_bytes));
        }
        let end = self.bloom_page.checked_add(self.bloom_pages()).and_then(|e| e.checked_add(1));
        if end != Some(self.file_pages) {
            return Err(format!(
                "{} pages, but the Bloom section ends at page {:?}",
                self.file_pages,
                self.bloom_page.checked_add(self.bloom_pages())
            ));
        }
        if self
            .file_pages
            .checked_mul(u64::from(p))
            .is_none_or(|b| b > lamina_storage::backend::FILE_BYTES_MAX)
        {
            return Err(format!("{} pages of {p} bytes", self.file_pages));
        }
        Ok(())
    }
}

impl Encode for Footer {
    fn encoded_len(&self) -> usize {
        FOOTER_BYTES
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&FOOTER_MAGIC.to_le_bytes());
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.dtree_id.to_le_bytes());
        out.extend_from_slice(&self.page_bytes.to_le_bytes());
        out.extend_from_slice(&self.height.to_le_bytes());
        for field in [
            self.entries,
            self.deletes,
            self.entry_bytes,
            self.leaves,
            self.internal_nodes,
            self.node_pages,
            self.root_page,
            self.root_pages,
            self.bloom_page,
            self.bloom_bytes,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        out.extend_from_slice(&self.bloom_crc.to_le_bytes());
        out.extend_from_slice(&self.file_pages.to_le_bytes());
        let crc = mask(crc32c(&out[start..]));
        out.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(out.len() - start, FOOTER_BYTES);
    }
}

impl Decode for Footer {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        if input.len() != FOOTER_BYTES {
            return Err(DecodeError::new(0, format!("footer of {} bytes", input.len())));
        }
        let (body, crc) = input.split_at(FOOTER_BYTES - 4);
        let stored = unmask(u32::from_le_bytes(crc.try_into().expect("4 bytes")));
        if stored != crc32c(body) {
            return Err(DecodeError::new(body.len(), "footer checksum mismatch"));
        }
        let mut r = Reader::new(body);
        if r.u32()? != FOOTER_MAGIC {
            return Err(DecodeError::new(0, "not a d-tree footer (bad magic)"));
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(DecodeError::new(4, format!("d-tree format version {version}")));
        }
        let footer = Footer {
            dtree_id: r.u64()?,
            page_bytes: r.u32()?,
            height: r.u32()?,
            entries: r.u64()?,
            deletes: r.u64()?,
            entry_bytes: r.u64()?,
            leaves: r.u64()?,
            internal_nodes: r.u64()?,
            node_pages: r.u64()?,
            root_page: r.u64()?,
            root_pages: r.u64()?,
            bloom_page: r.u64()?,
            bloom_bytes: r.u64()?,
            bloom_crc: r.u32()?,
            file_pages: r.u64()?,
        };
        r.finish()?;
        footer.check().map_err(|reason| DecodeError::new(0, format!("footer: {reason}")))?;
        Ok(footer)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn file_names_roundtrip_and_strangers_are_refused() {
        assert_eq!(file_name(0x2a), "nb-000000000000002a.dt");
        assert_eq!(parse_file_name(&file_name(u64::MAX)), Some(u64::MAX));
        for bad in ["nb-2a.dt", "nb-000000000000002a.dtx", "nb-+00000000000002a.dt", "x.dt"] {
            assert_eq!(parse_file_name(bad), None, "{bad}");
        }
    }

    fn sample_node() -> Vec<u8> {
        let header = NodeHeader {
            kind: NodeKind::Internal,
            level: 2,
            entries: 3,
            payload_bytes: 5,
            page: 77,
            dtree_id: 9,
        };
        let mut node = header.encode();
        node.extend_from_slice(b"abcde");
        seal_node(&mut node);
        node
    }

    #[test]
    fn node_header_roundtrips_and_every_damage_is_refused() {
        let node = sample_node();
        let (header, payload) = open_node(&node, 77, 9).unwrap();
        assert_eq!(header.pages(512), 1);
        assert_eq!((header.level, header.entries, payload), (2, 3, &b"abcde"[..]));
        let mut padded = node.clone();
        padded.resize(512, 0);
        assert!(open_node(&padded, 77, 9).is_ok(), "padding is not covered");
        for i in 0..node.len() {
            let mut bad = node.clone();
            bad[i] ^= 0x10;
            assert!(open_node(&bad, 77, 9).is_err(), "byte {i}");
        }
        for len in 0..node.len() {
            assert!(open_node(&node[..len], 77, 9).is_err(), "{len}");
        }
        assert!(open_node(&node, 78, 9).is_err(), "misplaced node");
        assert!(open_node(&node, 77, 8).is_err(), "another d-tree's node");
    }

    #[test]
    fn a_header_with_bad_fields_is_refused_even_under_a_good_checksum() {
        let good = sample_node();
        for (at, byte) in [(4, 3), (5, 0), (6, 1), (8, 0)] {
            let mut bad = good.clone();
            if at == 8 {
                bad[8..12].copy_from_slice(&0u32.to_le_bytes());
            } else {
                bad[at] = byte;
            }
            seal_node(&mut bad);
            assert!(open_node(&bad, 77, 9).is_err(), "field at {at}");
        }
    }

    fn sample_footer() -> Footer {
        Footer {
            dtree_id: 9,
            page_bytes: 4096,
            height: 2,
            entries: 100,
            deletes: 10,
            entry_bytes: 5000,
            leaves: 3,
            internal_nodes: 1,
            node_pages: 4,
            root_page: 3,
            root_pages: 1,
            bloom_page: 4,
            bloom_bytes: 138,
            bloom_crc: 0x1234_5678,
            file_pages: 6,
        }
    }

    #[test]
    fn footer_roundtrips_and_every_damage_is_refused() {
        let footer = sample_footer();
        let bytes = footer.encode();
        assert_eq!(bytes.len(), FOOTER_BYTES);
        assert_eq!(Footer::decode(&bytes).unwrap(), footer);
        assert_eq!(footer.file_bytes(), 6 * 4096);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 1;
            assert!(Footer::decode(&bad).is_err(), "byte {i}");
        }
        assert!(Footer::decode(&bytes[1..]).is_err());
    }

    #[test]
    fn inconsistent_footers_are_refused() {
        let good = sample_footer();
        let empty = Footer {
            height: 0,
            entries: 0,
            deletes: 0,
            entry_bytes: 0,
            leaves: 0,
            internal_nodes: 0,
            node_pages: 0,
            root_page: 0,
            root_pages: 0,
            bloom_page: 0,
            file_pages: 2,
            ..good
        };
        assert!(Footer::decode(&empty.encode()).is_ok());
        let bad = [
            Footer { page_bytes: 3000, ..good },
            Footer { page_bytes: 256, ..good },
            Footer { height: HEIGHT_MAX + 1, ..good },
            Footer { height: 0, ..good },
            Footer { leaves: 0, ..good },
            Footer { leaves: 101, ..good },
            Footer { deletes: 101, ..good },
            Footer { entry_bytes: 10, ..good },
            Footer { height: 1, ..good },
            Footer { internal_nodes: 0, ..good },
            Footer { node_pages: 3, ..good },
            Footer { root_page: 2, ..good },
            Footer { root_pages: 0, root_page: 4, ..good },
            Footer { bloom_page: 5, ..good },
            Footer { bloom_bytes: 9, ..good },
            Footer { bloom_bytes: 5000, ..good },
            Footer { file_pages: 7, ..good },
            Footer { file_pages: u64::MAX, ..good },
            Footer { leaves: 6, internal_nodes: 1, ..good },
        ];
        for footer in bad {
            assert!(Footer::decode(&footer.encode()).is_err(), "{footer:?}");
        }
    }

    proptest! {
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300),
                                page in any::<u64>(), id in any::<u64>()) {
            let _ = open_node(&bytes, page, id);
            let _ = NodeHeader::decode(&bytes);
            let _ = Footer::decode(&bytes);
            if bytes.len() >= FOOTER_BYTES {
                let _ = Footer::decode(&bytes[..FOOTER_BYTES]);
            }
        }
    }
}
