//! Node geometry: node and buffer ids, the fixed node size, the entry limits it must hold and
//! the byte sizes of entries (`docs/format/latree-node.md`, "Sizes").
//!
//! Nodes have one fixed size, `node_bytes` (LA-tree section 3: "nodes have a fixed size and do
//! not straddle page boundaries", so a_r and a_w are constants). Keys and values vary in
//! length, so the fanout F is "as many entries as fit". A node must be able to take what any
//! split or redistribution produces, so [`NodeLayout::new`] refuses a size that cannot hold
//! **two of the largest leaf entries and four of the largest separators** after the header
//! (the rule that makes the quarter-full a-b tree of section 3 provable with byte sizes, see
//! [`super::rebalance`]). Larger values are not stored out of line: with lamina's full limits
//! (1024-byte keys, 4096-byte values) the smallest node is therefore 16 KiB; a tree that wants
//! the paper's small NAND nodes or 4 KiB SSD pages opens with lower `key_bytes_max` and
//! `value_bytes_max`, and keys or values over them are refused as invalid arguments.

use lamina_core::codec::varint_len;
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_core::{Error, Result};
use lamina_storage::DeviceProfile;
use lamina_storage::device::CostModel;

/// A node's identity. With in-place placement it is also the node's slot in the file; with
/// out-of-place placement the node table maps it to the slot of the node's latest copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u64);

/// The buffer attached to an inner node (every K-th level, LA-tree section 2.1). The buffer
/// module owns buffers; a node only names its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BufferId(pub u64);

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "node {}", self.0)
    }
}

/// Bytes of the fixed header at the start of every node (`super::format`).
pub const NODE_HEADER_BYTES: usize = 48;
/// Smallest node size accepted.
pub const NODE_BYTES_MIN: u32 = 256;
/// Largest node size accepted.
pub const NODE_BYTES_MAX: u32 = 1 << 20;
/// Bytes of a child id in an inner node (a fixed u64, so separators alone decide the fill).
pub const CHILD_ID_BYTES: usize = 8;
/// Tallest tree: levels are `0 ..HEIGHT_MAX` (a leaf is level 0). Every non-root inner node
/// holds at least two children, so this is far more than any file can hold.
pub const HEIGHT_MAX: u8 = 32;
/// Largest leaf entries a node must hold (see the module docs).
pub const LEAF_ENTRIES_OF_MAX_SIZE_MIN: usize = 2;
/// Largest separators a node must hold (see the module docs).
pub const SEPARATORS_OF_MAX_SIZE_MIN: usize = 4;
/// Node size used on block devices (SSD profiles, `host`) when the entries allow it: the page.
pub const BLOCK_DEVICE_NODE_BYTES_DEFAULT: u32 = 4096;

/// Bytes a leaf entry with a `key_len`-byte key and a `value_len`-byte value takes in a node.
pub fn leaf_entry_bytes(key_len: usize, value_len: usize) -> usize {
    varint_len(key_len as u64) + key_len + varint_len(value_len as u64) + value_len
}

/// Bytes a separator of `key_len` bytes and the child to its right take in an inner node
/// (the first child has no separator and takes [`CHILD_ID_BYTES`]).
pub fn separator_bytes(key_len: usize) -> usize {
    varint_len(key_len as u64) + key_len + CHILD_ID_BYTES
}

/// The node size and the entry limits it is checked against. Invariant (checked by
/// [`NodeLayout::new`]): `node_bytes` is a power of two in `NODE_BYTES_MIN..=NODE_BYTES_MAX`
/// and its payload capacity holds [`LEAF_ENTRIES_OF_MAX_SIZE_MIN`] largest leaf entries and
/// [`SEPARATORS_OF_MAX_SIZE_MIN`] largest separators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLayout {
    node_bytes: u32,
    key_bytes_max: usize,
    value_bytes_max: usize,
}

impl NodeLayout {
    /// A layout of `node_bytes` nodes for keys of up to `key_bytes_max` bytes and values of up
    /// to `value_bytes_max` bytes; the error names the smallest node size that would do.
    pub fn new(node_bytes: u32, key_bytes_max: usize, value_bytes_max: usize) -> Result<Self> {
        if !(1..=KEY_BYTES_MAX).contains(&key_bytes_max) {
            return Err(Error::option(
                "key_bytes_max",
                format!("{key_bytes_max} is not in 1..={KEY_BYTES_MAX}"),
            ));
        }
        if value_bytes_max > VALUE_BYTES_MAX {
            return Err(Error::option(
                "value_bytes_max",
                format!("{value_bytes_max} is over the limit of {VALUE_BYTES_MAX}"),
            ));
        }
        if !node_bytes.is_power_of_two() || !(NODE_BYTES_MIN..=NODE_BYTES_MAX).contains(&node_bytes)
        {
            return Err(Error::option(
                "node_bytes",
                format!(
                    "{node_bytes} is not a power of two in {NODE_BYTES_MIN}..={NODE_BYTES_MAX}"
                ),
            ));
        }
        let needed = Self::payload_bytes_needed(key_bytes_max, value_bytes_max);
        let layout = NodeLayout { node_bytes, key_bytes_max, value_bytes_max };
        if layout.capacity_bytes() < needed {
            return Err(Error::option(
                "node_bytes",
                format!(
                    "a {node_bytes}-byte node holds {} bytes of entries; keys of up to \
                     {key_bytes_max} bytes with values of up to {value_bytes_max} bytes need \
                     {needed} ({LEAF_ENTRIES_OF_MAX_SIZE_MIN} largest leaf entries and \
                     {SEPARATORS_OF_MAX_SIZE_MIN} largest separators): use node_bytes of at \
                     least {} or lower the key and value limits",
                    layout.capacity_bytes(),
                    Self::node_bytes_min_for(key_bytes_max, value_bytes_max)
                ),
            ));
        }
        Ok(layout)
    }

    /// The layout LA-tree section 4.1 suggests for `device`: the smallest node (but at least
    /// the device's page) on raw NAND, where small nodes are cheap to read and write; a 4 KiB
    /// page on block devices (SSDs, `host`). Either way at least what the limits need.
    pub fn for_device(
        device: &DeviceProfile,
        key_bytes_max: usize,
        value_bytes_max: usize,
    ) -> Result<Self> {
        let preferred = match device.model {
            CostModel::Nand(nand) => u32::try_from(nand.page_bytes).unwrap_or(NODE_BYTES_MAX),
            CostModel::Paged(_) | CostModel::Free => BLOCK_DEVICE_NODE_BYTES_DEFAULT,
        };
        let needed = Self::node_bytes_min_for(key_bytes_max, value_bytes_max);
        Self::new(preferred.max(needed).min(NODE_BYTES_MAX), key_bytes_max, value_bytes_max)
    }

    fn payload_bytes_needed(key_bytes_max: usize, value_bytes_max: usize) -> usize {
        let leaf = LEAF_ENTRIES_OF_MAX_SIZE_MIN * leaf_entry_bytes(key_bytes_max, value_bytes_max);
        let inner = CHILD_ID_BYTES + SEPARATORS_OF_MAX_SIZE_MIN * separator_bytes(key_bytes_max);
        leaf.max(inner)
    }

    /// The smallest valid node size for these limits (a power of two).
    pub fn node_bytes_min_for(key_bytes_max: usize, value_bytes_max: usize) -> u32 {
        let needed = NODE_HEADER_BYTES + Self::payload_bytes_needed(key_bytes_max, value_bytes_max);
        (needed as u32).next_power_of_two().max(NODE_BYTES_MIN)
    }

    /// Bytes of every node on the medium.
    pub fn node_bytes(&self) -> u32 {
        self.node_bytes
    }

    /// Longest key accepted.
    pub fn key_bytes_max(&self) -> usize {
        self.key_bytes_max
    }

    /// Longest value accepted.
    pub fn value_bytes_max(&self) -> usize {
        self.value_bytes_max
    }

    /// Bytes of entries (payload) a node holds: the node size less the header.
    pub fn capacity_bytes(&self) -> usize {
        self.node_bytes as usize - NODE_HEADER_BYTES
    }

    /// A non-root node with less payload than this is underfull: the "at least a quarter
    /// full" rule of the a-b trees of LA-tree section 3.
    pub fn underfull_bytes(&self) -> usize {
        self.capacity_bytes() / 4
    }

    /// The fanout F for the cost model (section 3) when keys are `key_len` bytes and values
    /// `value_len` bytes: (leaf entries per full leaf, children per full inner node).
    pub fn fanout_for(&self, key_len: usize, value_len: usize) -> (usize, usize) {
        let leaf = self.capacity_bytes() / leaf_entry_bytes(key_len, value_len);
        let inner = 1 + (self.capacity_bytes() - CHILD_ID_BYTES) / separator_bytes(key_len);
        (leaf, inner)
    }

    /// Whether a key and a value are within this layout's limits (an `InvalidArgument` names
    /// the limit otherwise).
    pub fn check_entry(&self, key: &[u8], value: &[u8]) -> Result<()> {
        use lamina_core::InvalidArgument;
        lamina_core::limits::check_key(key)?;
        if key.len() > self.key_bytes_max {
            return Err(Error::InvalidArgument(InvalidArgument::KeyTooLong {
                len: key.len(),
                max: self.key_bytes_max,
            }));
        }
        if value.len() > self.value_bytes_max {
            return Err(Error::InvalidArgument(InvalidArgument::ValueTooLong {
                len: value.len(),
                max: self.value_bytes_max,
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_limits_need_sixteen_kib_and_the_error_says_so() {
        assert_eq!(NodeLayout::node_bytes_min_for(KEY_BYTES_MAX, VALUE_BYTES_MAX), 16 << 10);
        let err = NodeLayout::new(4096, KEY_BYTES_MAX, VALUE_BYTES_MAX).unwrap_err().to_string();
        assert!(err.contains("at least 16384"), "{err}");
        NodeLayout::new(16 << 10, KEY_BYTES_MAX, VALUE_BYTES_MAX).unwrap();
        // Long keys alone: four separators of 1034 bytes do not fit 4 KiB.
        assert!(NodeLayout::new(4096, KEY_BYTES_MAX, 0).is_err());
        assert_eq!(NodeLayout::node_bytes_min_for(KEY_BYTES_MAX, 0), 8192);
    }

    #[test]
    fn bad_sizes_and_limits_are_refused() {
        for bad in [0, 100, 255, 3000, NODE_BYTES_MAX * 2] {
            assert!(NodeLayout::new(bad, 8, 8).is_err(), "{bad}");
        }
        assert!(NodeLayout::new(4096, 0, 8).is_err());
        assert!(NodeLayout::new(4096, KEY_BYTES_MAX + 1, 8).is_err());
        assert!(NodeLayout::new(1 << 20, 8, VALUE_BYTES_MAX + 1).is_err());
    }

    #[test]
    fn device_defaults_follow_section_4_1() {
        let nand = NodeLayout::for_device(&DeviceProfile::nand_toshiba(), 16, 16).unwrap();
        assert_eq!(nand.node_bytes(), 512);
        let ssd = NodeLayout::for_device(&DeviceProfile::ssd_msp7525(), 16, 16).unwrap();
        assert_eq!(ssd.node_bytes(), 4096);
        let full =
            NodeLayout::for_device(&DeviceProfile::host(), KEY_BYTES_MAX, VALUE_BYTES_MAX).unwrap();
        assert_eq!(full.node_bytes(), 16 << 10);
        // 16-byte keys and values: 34-byte entries, 464 payload bytes in 512.
        assert_eq!(nand.fanout_for(16, 16), (13, 19));
    }

    #[test]
    fn entries_are_checked_against_the_layout() {
        let layout = NodeLayout::new(512, 16, 16).unwrap();
        layout.check_entry(b"k", &[0; 16]).unwrap();
        layout.check_entry(b"", b"").unwrap(); // the empty key is a key
        assert!(layout.check_entry(&[1; 17], b"").unwrap_err().to_string().contains("16"));
        assert!(layout.check_entry(b"k", &[0; 17]).is_err());
    }
}
