//! The memtable arena of fdtree's and nbtree's in-memory levels (LevelDB's memtable
//! `Arena`): entries written front to back into shared chunks, each entry a
//! reference-counted slice of one ([`Bytes`]), and the key prefix their ordered sets compare
//! first.
//!
//! Why: with one allocation per entry, the writer allocates and the background thread that
//! writes a frozen memtable out frees, entry by entry, on the allocator's shared lock. At
//! 10M inserts fdtree's writer slept on that lock (held by the flush thread's frees) in
//! 13,818 of its 14,405 futex waits, for up to 11 ms each, and the frees were a third of the
//! flush thread's time; nbtree's flush thread slept there 4,174 times in 4M inserts (`perf
//! record -e sched:sched_switch --call-graph dwarf`). With the arena an insert allocates only
//! when a chunk is used up, and dropping a memtable frees whole chunks.

use bytes::{Bytes, BytesMut};

/// Largest chunk; a memtable's chunks are a 64th of its budget up to this (and at least
/// [`ARENA_CHUNK_BYTES_MIN`]), so a chunk's unused tail stays a small share of the budget.
pub const ARENA_CHUNK_BYTES_MAX: usize = 1 << 20;
/// Smallest chunk.
pub const ARENA_CHUNK_BYTES_MIN: usize = 4 << 10;
/// How many entries ahead of the one it reads an iteration in key order prefetches
/// ([`prefetch_entry`]).
pub const ENTRY_PREFETCH_DISTANCE: usize = 8;
/// Cache lines of an entry [`prefetch_entry`] requests (a long value's copy streams on its
/// own once started).
const ENTRY_LINES_PREFETCHED: usize = 4;

/// Requests the first lines of an arena entry. A memtable's entries lie in its arena in
/// arrival order, so a flush reading them in key order takes a cache miss per entry unless
/// it prefetches [`ENTRY_PREFETCH_DISTANCE`] entries ahead (fdtree's flush thread spent 30%
/// of its time on those misses at 10M inserts, `docs/results/scale.md`).
pub fn prefetch_entry(entry: &[u8]) {
    crate::prefetch::prefetch_lines(entry, ENTRY_LINES_PREFETCHED);
}

/// Chunks of one memtable (module documentation).
#[derive(Debug)]
pub struct Arena {
    /// The unused rest of the current chunk (empty: none yet).
    chunk: BytesMut,
    chunk_bytes: usize,
}

impl Arena {
    /// An arena for a memtable of at most `memtable_bytes_max` bytes.
    pub fn new(memtable_bytes_max: u64) -> Arena {
        let share = usize::try_from(memtable_bytes_max / 64).unwrap_or(usize::MAX);
        Arena {
            chunk: BytesMut::new(),
            chunk_bytes: share.clamp(ARENA_CHUNK_BYTES_MIN, ARENA_CHUNK_BYTES_MAX),
        }
    }

    /// Bytes of each chunk (an entry longer than that gets a chunk of its own length).
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    /// `len` bytes written by `fill` (which must append exactly `len`), as a slice of the
    /// current chunk, or of a new one if it has less room left.
    ///
    /// # Panics
    /// If `fill` appends other than `len` bytes (a caller's bug: the entry would have moved
    /// its chunk or overlapped the next entry).
    pub fn alloc(&mut self, len: usize, fill: impl FnOnce(&mut BytesMut)) -> Bytes {
        debug_assert!(self.chunk.is_empty(), "every entry is split off its chunk");
        if self.chunk.capacity() < len {
            self.chunk = BytesMut::with_capacity(self.chunk_bytes.max(len));
        }
        let capacity = self.chunk.capacity();
        fill(&mut self.chunk);
        assert_eq!(self.chunk.len(), len, "an entry is as long as it was announced");
        assert_eq!(self.chunk.capacity(), capacity, "an entry never moves its chunk");
        self.chunk.split_to(len).freeze()
    }
}

/// A key's first 8 bytes as a big-endian integer, zero-padded. Keys whose prefixes differ
/// are ordered as their prefixes are; equal prefixes need the bytes (a zero-padded key may
/// equal a longer one's prefix). An insert compares its key with tens of entries on its way
/// down an ordered set, and reading each entry's bytes for its key was a fifth of fdtree's
/// writer time at 10M inserts: the prefix, kept beside each entry, decides almost every
/// comparison without them. Compare as `a_prefix.cmp(&b_prefix).then_with(|| a.cmp(b))`,
/// so the keys are read only on a tie.
pub fn key_prefix(key: &[u8]) -> u64 {
    let mut first = [0u8; 8];
    let n = key.len().min(8);
    first[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Keys compared by prefix first are ordered as their bytes are.
        #[test]
        fn prefixed_order_is_the_bytes_order(
            a in proptest::collection::vec(0u8..3, 0..12),
            b in proptest::collection::vec(0u8..3, 0..12),
        ) {
            let ordered = key_prefix(&a).cmp(&key_prefix(&b)).then_with(|| a.cmp(&b));
            proptest::prop_assert_eq!(ordered, a.cmp(&b));
        }
    }

    #[test]
    fn entries_share_chunks_and_a_large_one_gets_its_own() {
        let mut arena = Arena::new(64 * ARENA_CHUNK_BYTES_MIN as u64);
        assert_eq!(arena.chunk_bytes(), ARENA_CHUNK_BYTES_MIN);
        let entries: Vec<Bytes> =
            (0..100u8).map(|i| arena.alloc(107, |out| out.extend_from_slice(&[i; 107]))).collect();
        // 107 bytes each: 38 to a 4 KiB chunk, so entries 0 and 37 share one, 38 does not.
        let start = |b: &Bytes| b.as_ptr() as usize;
        assert_eq!(start(&entries[37]) - start(&entries[0]), 37 * 107);
        assert_ne!(start(&entries[38]), start(&entries[37]) + 107);
        for (i, e) in (0u8..).zip(&entries) {
            assert_eq!(&e[..], &[i; 107][..]);
        }
        let big = vec![1u8; 3 * ARENA_CHUNK_BYTES_MIN];
        let large = arena.alloc(big.len(), |out| out.extend_from_slice(&big));
        assert_eq!(&large[..], &big[..]);
        let after = arena.alloc(3, |out| out.extend_from_slice(b"xyz"));
        assert_eq!(&after[..], b"xyz");
        // Chunks scale with the memtable's budget, within bounds.
        assert_eq!(Arena::new(1 << 40).chunk_bytes(), ARENA_CHUNK_BYTES_MAX);
        assert_eq!(Arena::new(16 << 20).chunk_bytes(), 256 << 10);
    }

    #[test]
    #[should_panic(expected = "as long as it was announced")]
    fn an_entry_of_another_length_than_announced_is_refused() {
        Arena::new(0).alloc(4, |out| out.extend_from_slice(b"abc"));
    }
}
