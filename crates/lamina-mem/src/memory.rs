//! What an entry of the map costs in memory, for `Stats::memory_bytes` and the memory limit.
//!
//! The map is a `BTreeMap<Vec<u8>, Versioned>`: per entry, the key's and the value's heap
//! blocks (glibc malloc: the request plus an 8-byte header, rounded up to 16, at least 32
//! bytes; an empty vector allocates nothing) and a share of a B-tree node. A leaf node holds
//! up to 11 entries of 24 + 32 bytes (640 bytes with its header); measured with a counting
//! allocator (`tests/memory_bytes.rs`), nodes cost 101 bytes per entry under sequential
//! inserts (splits leave them half full) and 79 under random ones, so 90 is counted: within
//! 10% either way of the heap the map takes.

/// Bytes of B-tree node per entry (between the sequential and the random fill).
pub const BTREE_BYTES_PER_ENTRY: u64 = 90;

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
