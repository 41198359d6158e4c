//! A d-tree entry: a key and either a value or a delete (a delta record, paper section
//! 3.2.2), and what it counts toward sigma.

/// The value side of an entry: `Some(value)` for a put, `None` for a delete.
pub type Slot = Option<Vec<u8>>;

/// Bytes an entry counts toward sigma and the sibling total `f(sigma + 1)` (paper section
/// 5.1, measured in bytes as the paper's experiments do): key, value and a fixed overhead,
/// so a delete is never free.
pub const ENTRY_OVERHEAD_BYTES: u64 = 8;

/// [`ENTRY_OVERHEAD_BYTES`] plus the key and value lengths (`None`: a delete).
pub fn entry_bytes(key_len: usize, value_len: Option<usize>) -> u64 {
    (key_len + value_len.unwrap_or(0)) as u64 + ENTRY_OVERHEAD_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletes_count_their_key_and_the_overhead() {
        assert_eq!(entry_bytes(8, Some(128)), 144);
        assert_eq!(entry_bytes(8, None), 16);
    }
}
