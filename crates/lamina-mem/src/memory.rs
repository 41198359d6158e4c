//! What an entry of the map costs in memory, for `Stats::memory_bytes` and the memory limit.
//!
//! The map is a `BTreeMap<Vec<u8>, Versioned>`: per entry, the key's and the value's heap
//! blocks (glibc malloc: the request plus an 8-byte header, rounded up to 16, at least 32
//! bytes; an empty vector allocates nothing) and a share of a B-tree node. A leaf node holds
//! up to 11 entries of 24 + 32 bytes (640 bytes with its header); nodes are between half
//! and completely full, and a node split in the middle leaves them half full under
//! sequential inserts, so a share of 640 / 6 bytes per entry is counted, plus the inner
//! nodes' share. `tests/memory_bytes.rs` checks the estimate against a counting allocator.

/// Bytes of B-tree node per entry (leaf share at about half full, plus inner nodes).
pub const BTREE_BYTES_PER_ENTRY: u64 = 112;

/// Heap bytes a block of `len` bytes takes (0 for an empty vector).
fn heap_block_bytes(len: usize) -> u64 {
    if len == 0 { 0 } else { ((len as u64 + 8).next_multiple_of(16)).max(32) }
}

/// Memory one entry of a `key_len`-byte key and a `value_len`-byte value takes.
pub fn entry_memory_bytes(key_len: usize, value_len: usize) -> u64 {
    heap_block_bytes(key_len) + heap_block_bytes(value_len) + BTREE_BYTES_PER_ENTRY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_round_like_malloc() {
        assert_eq!(heap_block_bytes(0), 0);
        assert_eq!(heap_block_bytes(1), 32);
        assert_eq!(heap_block_bytes(24), 32);
        assert_eq!(heap_block_bytes(25), 48);
        assert_eq!(entry_memory_bytes(8, 128), 32 + 144 + BTREE_BYTES_PER_ENTRY);
    }
}
