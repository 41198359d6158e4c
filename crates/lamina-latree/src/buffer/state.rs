//! What the pool knows of one buffer: its in-memory tail, the chain of its fragments on flash,
//! and the X/Y split of section 2.3.
//!
//! Entries have positions `0..entries()` in append order. Invariants:
//! - the chain (oldest first) holds positions `0..flash_entries` and the tail the rest, so
//!   the tail is always the newest part of the buffer;
//! - `tail_bytes` is the encoded size of the tail; `pages_spanned` the sum of the chain's unit
//!   lengths (one fragment per buffer per unit, so the pages a full read touches);
//! - `y` is a range of positions within `0..entries()`: the entries the parent's last emptying
//!   distributed, sorted by (key, seq); everything else is X. `y` is empty when there is none.

use std::ops::Range;

use lamina_core::codec::Encode;

use super::entry::BufferEntry;
use super::fragment::FragmentAddr;

/// One fragment of a buffer's chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChainLink {
    /// Where it is.
    pub addr: FragmentAddr,
    /// Its entries.
    pub entries: u64,
    /// Its encoded bytes, header included (what forgetting it releases).
    pub bytes: u64,
    /// Pages of its unit.
    pub pages: u64,
}

/// Per-buffer statistics (section 3's online statistics: B, and the pages spanned that give
/// the fragmentation overhead f).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Entries in the buffer (B), in memory and on flash.
    pub entries: u64,
    /// Entries still in the pool's memory.
    pub entries_in_memory: u64,
    /// Encoded bytes of those.
    pub bytes_in_memory: u64,
    /// Fragments on flash.
    pub fragments: u64,
    /// Pages those fragments occupy: what reading the buffer touches. A buffer of `entries`
    /// on flash needs at least `ceil(bytes / page)` pages; pages beyond that are the
    /// fragmentation the cost model charges as f (extra page accesses per entry).
    pub pages_spanned: u64,
    /// Entries of the Y batch (section 2.3).
    pub y_entries: u64,
}

/// The state of one buffer (module docs list the invariants).
#[derive(Debug, Default)]
pub(crate) struct BufferState {
    pub tail: Vec<BufferEntry>,
    /// [`key_fingerprint`] of each tail entry's key, by position: a lookup compares these
    /// before any key, so a miss costs a scan of a `u32` vector, not a key comparison per
    /// entry (the tail may hold thousands of entries).
    pub tail_fingerprints: Vec<u32>,
    pub tail_bytes: u64,
    pub chain: Vec<ChainLink>,
    pub flash_entries: u64,
    pub pages_spanned: u64,
    pub y: Range<u64>,
}

impl BufferState {
    /// All entries, memory and flash.
    pub fn entries(&self) -> u64 {
        self.flash_entries + self.tail.len() as u64
    }

    /// The newest fragment on flash.
    pub fn head(&self) -> Option<FragmentAddr> {
        self.chain.last().map(|link| link.addr)
    }

    /// Appends to the tail.
    pub fn push(&mut self, entry: BufferEntry) {
        self.tail_bytes += entry.encoded_len() as u64;
        self.tail_fingerprints.push(key_fingerprint(entry.key()));
        self.tail.push(entry);
    }

    /// The newest tail entry of `key` (entries of one key are in sequence order by
    /// position), if any.
    pub fn find_in_tail(&self, key: &[u8]) -> Option<&BufferEntry> {
        let fingerprint = key_fingerprint(key);
        let mut end = self.tail_fingerprints.len();
        while let Some(i) = self.tail_fingerprints[..end].iter().rposition(|&f| f == fingerprint) {
            if self.tail[i].key() == key {
                return Some(&self.tail[i]);
            }
            end = i; // another key with the same fingerprint
        }
        None
    }

    /// Moves the oldest `count` tail entries to a fragment written at `addr`.
    pub fn move_to_flash(&mut self, count: usize, addr: FragmentAddr, bytes: u64, pages: u64) {
        assert!((1..=self.tail.len()).contains(&count));
        assert!(self.head().is_none_or(|head| head.page < addr.page), "chains go forward");
        let moved: u64 = self.tail.drain(..count).map(|e| e.encoded_len() as u64).sum();
        self.tail_fingerprints.drain(..count);
        self.tail_bytes -= moved;
        self.flash_entries += count as u64;
        self.pages_spanned += pages;
        self.chain.push(ChainLink { addr, entries: count as u64, bytes, pages });
    }

    /// The statistics.
    pub fn stats(&self) -> BufferStats {
        BufferStats {
            entries: self.entries(),
            entries_in_memory: self.tail.len() as u64,
            bytes_in_memory: self.tail_bytes,
            fragments: self.chain.len() as u64,
            pages_spanned: self.pages_spanned,
            y_entries: self.y.end - self.y.start,
        }
    }

    /// Checks the invariants (expensive: walks the tail and chain).
    pub fn check(&self) {
        let chain_entries: u64 = self.chain.iter().map(|l| l.entries).sum();
        assert_eq!(chain_entries, self.flash_entries);
        let tail_bytes: u64 = self.tail.iter().map(|e| e.encoded_len() as u64).sum();
        assert_eq!(tail_bytes, self.tail_bytes);
        assert!(
            self.tail
                .iter()
                .map(|e| key_fingerprint(e.key()))
                .eq(self.tail_fingerprints.iter().copied())
        );
        assert_eq!(self.chain.iter().map(|l| l.pages).sum::<u64>(), self.pages_spanned);
        assert!(self.chain.windows(2).all(|w| w[0].addr.page < w[1].addr.page));
        assert!(self.y.start <= self.y.end && self.y.end <= self.entries());
    }
}

/// A 32-bit hash of `key` (FxHash-style over 8-byte words): equal keys have equal
/// fingerprints; unequal ones rarely do.
pub(crate) fn key_fingerprint(key: &[u8]) -> u32 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut hash = key.len() as u64;
    let mut words = key.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        hash = (hash.rotate_left(5) ^ word).wrapping_mul(K);
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    hash = (hash.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    (hash >> 32) as u32
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn the_tail_answers_the_newest_entry_of_a_key_even_past_a_fingerprint_collision() {
        // Two keys with one fingerprint (a birthday search over 2^18 keys finds some).
        let mut seen: HashMap<u32, Vec<u8>> = HashMap::new();
        let (a, b) = (0u64..1 << 18)
            .find_map(|i| {
                let key = format!("key {i} of the search").into_bytes();
                seen.insert(key_fingerprint(&key), key.clone()).map(|other| (other, key))
            })
            .expect("a 32-bit collision among 2^18 keys");
        assert_ne!(a, b);
        let mut state = BufferState::default();
        state.push(BufferEntry::put(&a, b"old", 1).unwrap());
        state.push(BufferEntry::put(&a, b"new", 2).unwrap());
        state.push(BufferEntry::put(&b, b"other", 3).unwrap());
        state.push(BufferEntry::put(b"zz", b"z", 4).unwrap());
        state.check();
        assert_eq!(state.find_in_tail(&a).unwrap().seq(), 2);
        assert_eq!(state.find_in_tail(&b).unwrap().seq(), 3);
        assert!(state.find_in_tail(b"absent").is_none());
        state.move_to_flash(2, FragmentAddr { page: 0, slot: 0 }, 10, 1);
        state.check();
        assert!(state.find_in_tail(&a).is_none(), "moved to flash");
        assert_eq!(state.find_in_tail(b"zz").unwrap().seq(), 4);
    }
}
