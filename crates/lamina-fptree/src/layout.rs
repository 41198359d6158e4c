//! Where the FPTree keeps its persistent state in a [`PmemAllocator`]-managed region, and the
//! tree header (byte layout: `docs/format/fptree.md`).
//!
//! The allocator's root area (896 bytes at offset 128) holds, one cache line each (micro-logs
//! are cache-line aligned, FPTree section 5 "Recovery"): the tree header, the entry pointers
//! (head of the leaf list, head and tail of the leaf-group list), the split micro-logs
//! (Algorithm 3), the delete micro-logs (Algorithm 6), the leaf-group logs (Algorithms 10
//! and 12), and the engine's write-batch log pointer.
//!
//! [`PmemAllocator`]: lamina_storage::pmem::PmemAllocator

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, DecodeError, Encode, Reader};

/// Bytes of a cache line (micro-logs and the leaf's first line are aligned to it).
pub const LINE_BYTES: u64 = 64;
/// Allocation unit the tree formats its region with.
pub const CHUNK_BYTES: u64 = 64;

/// The tree header line.
pub const TREE_HEADER_OFFSET: u64 = 128;
/// The head of the leaf list (a persistent pointer; never changes once set: the first leaf
/// is never removed).
pub const HEAD_LEAF_PPTR: u64 = 192;
/// The head of the leaf-group list (Appendix B), null without leaf groups.
pub const GROUP_HEAD_PPTR: u64 = 208;
/// The tail of the leaf-group list (Algorithm 10's `PGroupsListTail`).
pub const GROUP_TAIL_PPTR: u64 = 224;
/// Split micro-logs (Algorithm 3): [`SPLIT_LOGS`] lines.
pub const SPLIT_LOGS_OFFSET: u64 = 256;
/// Number of split micro-logs: at most this many splits run at once.
pub const SPLIT_LOGS: usize = 4;
/// Delete micro-logs (Algorithm 6): [`DELETE_LOGS`] lines.
pub const DELETE_LOGS_OFFSET: u64 = SPLIT_LOGS_OFFSET + SPLIT_LOGS as u64 * LINE_BYTES;
/// Number of delete micro-logs: at most this many leaf removals run at once.
pub const DELETE_LOGS: usize = 4;
/// The `GetLeaf` micro-log (Algorithm 10): one persistent pointer.
pub const GET_LEAF_LOG_OFFSET: u64 = DELETE_LOGS_OFFSET + DELETE_LOGS as u64 * LINE_BYTES;
/// The `FreeLeaf` micro-log (Algorithm 12): two persistent pointers.
pub const FREE_LEAF_LOG_OFFSET: u64 = GET_LEAF_LOG_OFFSET + LINE_BYTES;
/// The engine's write-batch log (`crate::engine`): a persistent pointer to the batch being
/// applied, null when none is.
pub const BATCH_LOG_PPTR: u64 = FREE_LEAF_LOG_OFFSET + LINE_BYTES;
/// End of what the tree uses of the root area (the allocator's root area ends at 1024).
pub const ROOT_END: u64 = BATCH_LOG_PPTR + LINE_BYTES;

const _: () = assert!(ROOT_END <= 1024, "the tree's root lines fit in the allocator's root area");

/// Magic bytes of the tree header.
pub const TREE_MAGIC: [u8; 8] = *b"LAMFPTR\0";
/// The tree format version this build writes and reads.
pub const TREE_FORMAT_VERSION: u32 = 1;
/// Leaves per leaf group (Appendix B's `GROUP_SIZE`) when none is given.
pub const GROUP_LEAVES_DEFAULT: u32 = 8;
/// Largest leaf group accepted.
pub const GROUP_LEAVES_MAX: u32 = 1024;

/// How a tree allocates its leaves (fixed when the tree is created).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FpTreeConfig {
    /// Leaf groups (section 4.3, Appendix B): leaves come from blocks of `group_leaves`
    /// leaves, the paper's single-threaded configuration. `false`: one allocation per leaf,
    /// the paper's concurrent configuration.
    pub leaf_groups: bool,
    /// Leaves per group (1..=[`GROUP_LEAVES_MAX`]); ignored without leaf groups.
    pub group_leaves: u32,
    /// Fixed-size records in the leaf (section 4, the paper's base case and Figure 7's
    /// fixed-size runs): each slot holds an 8-byte key and an 8-byte value in place of a
    /// pointer to a record blob, so writes allocate nothing and recovery reads only leaves.
    /// Keys and values of any other length are refused. Such records carry no checksum
    /// (the paper's layout): a damaged value is not detected. `false` (the default, and
    /// what `lamina::Db` uses): every record is a checksummed blob (Appendix C).
    pub inline_records: bool,
}

impl Default for FpTreeConfig {
    fn default() -> Self {
        FpTreeConfig {
            leaf_groups: false,
            group_leaves: GROUP_LEAVES_DEFAULT,
            inline_records: false,
        }
    }
}

impl FpTreeConfig {
    /// The single-threaded configuration of the paper (leaf groups).
    pub fn with_leaf_groups() -> Self {
        FpTreeConfig { leaf_groups: true, ..Self::default() }
    }

    /// This configuration with fixed-size records in the leaves.
    #[must_use]
    pub fn with_inline_records(self) -> Self {
        FpTreeConfig { inline_records: true, ..self }
    }
}

/// The tree header (one line at [`TREE_HEADER_OFFSET`]). Written last when a tree is
/// initialized, so its absence is Algorithm 9's `Tree.Status == NotInitialized`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeHeader {
    /// Slots per leaf (checked against this build's [`crate::leaf::LEAF_SLOTS`]).
    pub leaf_slots: u32,
    /// Bytes per leaf (checked against [`crate::leaf::LEAF_BYTES`]).
    pub leaf_bytes: u32,
    /// The allocation configuration.
    pub config: FpTreeConfig,
    /// The tree's writes record their pending slots in the leaves' bitmap words
    /// (`crate::leaf::Pending`), so recovery frees a stray blob only in a pending slot.
    /// Set for blob trees created since 2026-11-29; older trees (0) keep freeing every stray.
    pub pending_slots: bool,
}

/// Offset of the checksum within the header.
const HEADER_CRC_AT: usize = 56;

impl Encode for TreeHeader {
    fn encoded_len(&self) -> usize {
        LINE_BYTES as usize
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&TREE_MAGIC);
        out.extend_from_slice(&TREE_FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&self.leaf_slots.to_le_bytes());
        out.extend_from_slice(&self.leaf_bytes.to_le_bytes());
        out.extend_from_slice(&u32::from(self.config.leaf_groups).to_le_bytes());
        out.extend_from_slice(&self.config.group_leaves.to_le_bytes());
        out.extend_from_slice(&u32::from(self.config.inline_records).to_le_bytes());
        out.extend_from_slice(&u32::from(self.pending_slots).to_le_bytes());
        out.resize(start + HEADER_CRC_AT, 0);
        let crc = masked_crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
    }
}

impl Decode for TreeHeader {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        if r.array::<8>()? != TREE_MAGIC {
            return Err(DecodeError::new(0, "not an FPTree (bad magic)"));
        }
        let version = r.u32()?;
        if version != TREE_FORMAT_VERSION {
            return Err(DecodeError::new(8, format!("unsupported tree format version {version}")));
        }
        let leaf_slots = r.u32()?;
        let leaf_bytes = r.u32()?;
        let leaf_groups = match r.u32()? {
            0 => false,
            1 => true,
            other => return Err(DecodeError::new(20, format!("bad leaf-groups flag {other}"))),
        };
        let group_leaves = r.u32()?;
        let inline_records = match r.u32()? {
            0 => false,
            1 => true,
            other => return Err(DecodeError::new(28, format!("bad inline-records flag {other}"))),
        };
        let pending_slots = match r.u32()? {
            0 => false,
            1 => true,
            other => return Err(DecodeError::new(32, format!("bad pending-slots flag {other}"))),
        };
        if r.bytes(HEADER_CRC_AT - 36)?.iter().any(|&b| b != 0) {
            return Err(DecodeError::new(36, "reserved bytes are not zero"));
        }
        let stored = r.u32()?;
        if r.u32()? != 0 {
            return Err(DecodeError::new(HEADER_CRC_AT + 4, "reserved bytes are not zero"));
        }
        r.finish()?;
        if stored != masked_crc32c(&input[..HEADER_CRC_AT]) {
            return Err(DecodeError::new(HEADER_CRC_AT, "tree header checksum mismatch"));
        }
        if !(1..=GROUP_LEAVES_MAX).contains(&group_leaves) {
            return Err(DecodeError::new(24, format!("group of {group_leaves} leaves")));
        }
        Ok(TreeHeader {
            leaf_slots,
            leaf_bytes,
            config: FpTreeConfig { leaf_groups, group_leaves, inline_records },
            pending_slots,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> TreeHeader {
        TreeHeader {
            leaf_slots: 48,
            leaf_bytes: 896,
            config: FpTreeConfig::with_leaf_groups(),
            pending_slots: true,
        }
    }

    #[test]
    fn tree_header_roundtrips() {
        let bytes = header().encode();
        assert_eq!(bytes.len(), LINE_BYTES as usize);
        assert_eq!(TreeHeader::decode(&bytes).unwrap(), header());
        let inline =
            TreeHeader { config: FpTreeConfig::default().with_inline_records(), ..header() };
        assert_eq!(TreeHeader::decode(&inline.encode()).unwrap(), inline);
    }

    #[test]
    fn a_header_of_before_inline_records_reads_as_blob_records() {
        // Bytes 28..36 were reserved (zero) before the flags existed.
        let old = TreeHeader { pending_slots: false, ..header() };
        let bytes = old.encode();
        assert_eq!(&bytes[28..36], &[0; 8]);
        let decoded = TreeHeader::decode(&bytes).unwrap();
        assert!(!decoded.config.inline_records && !decoded.pending_slots);
    }

    #[test]
    fn a_damaged_tree_header_is_refused() {
        let bytes = header().encode();
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x10;
            assert!(TreeHeader::decode(&damaged).is_err(), "flip at byte {i} went unnoticed");
        }
    }
}
