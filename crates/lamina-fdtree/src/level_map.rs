//! A level file mapped read-only for lookups (`lamina_storage::read_map`): a lookup parses
//! its segment in place in the OS page cache, with no `pread`, no copy and no frame of the
//! segment cache (the profile of issue 22: the `pread` copy and the cache's bookkeeping were
//! half of a lookup's time).
//!
//! - A **finished** level is mapped at its length: its file has all its blocks, is never
//!   written or resized again, and lives until the level is dropped (FD+FC punches its
//!   blocks as a merge passes them, which only zeroes them, under the block latches that
//!   lookups hold, `level/latches.rs`).
//! - A level **being written** by a merge (FD+FC's new levels, which lookups behind the
//!   wavefront read for the whole of a long merge) is mapped once, past the file's current
//!   end, at a bound on its final size ([`LevelMap::ahead`], `StorageFile::map_read_ahead`).
//!   Lookups read only blocks the level's index holds, and the writer indexes a block after
//!   writing it (`level/writer.rs` `write_pending`), so no page past the end is touched; the
//!   finished level keeps the same map and its checked bits. Without it, every lookup behind
//!   the wavefront went through `pread` and the segment cache: a third of the lookups at 10M
//!   keys, and most of their time, while the last merge into the bottom level ran.
//!
//! The map is made at the first lookup that reads the level; a backend without maps
//! (memory, fault injection) or a map that fails leaves the level on the cache path for good,
//! so the map is a speed-up, never a requirement.
//!
//! Each segment of a level this process opened is checked in full (checksum, place) the
//! first time a lookup reads it through the map, and only its header's count and length
//! afterwards, as the segment cache checks a segment once when it loads it: with the
//! checksum computed on every read, CRC32C was a quarter of a lookup's time. One bit per
//! segment remembers it, in chunks allocated as segments are first checked (a level being
//! written has no segment count yet).
//!
//! A level **this process wrote** (a merge's or a flush's, [`LevelMap::written_here`]) is
//! not checked again at its first read: its bytes were encoded and checksummed here, and
//! the map reads them from the page cache that write left them in. Checking them read
//! nothing from the device; it was a CRC of memory just written, and right after a merge,
//! when every lookup reads a segment for the first time, it was 12% of a lookup's time
//! (with the first parse; lookups 7-11% faster without it, `docs/results/scale.md`,
//! session 17). What this gives up is the same as for a segment checked once: a page evicted
//! and read back from a device that damaged it meanwhile is not seen by lookups (the
//! process's first read of a level written by an earlier one is always checked, and
//! `verify` reads every level in full).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_storage::{ReadMap, StorageFile};

use crate::format::segment::SEGMENT_HEADER_BYTES;

/// Bits of one chunk of the checked bits (8 KiB).
const CHUNK_BITS: usize = 1 << 16;

/// The fewest bytes a segment takes: its header and one entry of at least 3 bytes (kind,
/// key length, value length). Bounds the segments of a level being written.
const SEGMENT_BYTES_MIN: u64 = SEGMENT_HEADER_BYTES as u64 + 3;

/// The lazily made map of one level file.
#[derive(Debug, Default)]
pub struct LevelMap {
    /// For a level being written: the bytes to map (its size bound). `None`: a finished
    /// level, mapped at the length its first lookup gives.
    ahead_bytes: Option<u64>,
    /// Written by this process: its segments count as checked (module documentation).
    written_here: bool,
    map: OnceLock<Option<Mapped>>,
}

/// A mapped level and which of its segments were checked in full.
#[derive(Debug)]
pub struct Mapped {
    /// The file's blocks.
    pub bytes: ReadMap,
    /// Every segment counts as checked ([`LevelMap::written_here`]).
    written_here: bool,
    /// Bit `i`: segment `i` of the level (`LevelIndex` order) passed `parse_segment`.
    checked: CheckedBits,
}

/// One bit per segment, in chunks made when a bit in them is first set.
#[derive(Debug)]
struct CheckedBits {
    chunks: Box<[OnceLock<Box<[AtomicU64]>>]>,
}

impl CheckedBits {
    fn new(segments: u64) -> Self {
        let chunks = usize::try_from(segments).unwrap_or(usize::MAX).div_ceil(CHUNK_BITS);
        CheckedBits { chunks: (0..chunks).map(|_| OnceLock::new()).collect() }
    }

    fn get(&self, number: usize) -> bool {
        self.chunks.get(number / CHUNK_BITS).and_then(OnceLock::get).is_some_and(|words| {
            let bit = number % CHUNK_BITS;
            words[bit / 64].load(Ordering::Acquire) & (1 << (bit % 64)) != 0
        })
    }

    fn set(&self, number: usize) {
        if let Some(chunk) = self.chunks.get(number / CHUNK_BITS) {
            let words =
                chunk.get_or_init(|| (0..CHUNK_BITS / 64).map(|_| AtomicU64::new(0)).collect());
            let bit = number % CHUNK_BITS;
            words[bit / 64].fetch_or(1 << (bit % 64), Ordering::AcqRel);
        }
    }
}

impl Mapped {
    /// Whether segment `number` was checked in full.
    pub fn is_checked(&self, number: usize) -> bool {
        self.written_here || self.checked.get(number)
    }

    /// Records that segment `number` passed the full check (beyond the level's bound:
    /// ignored, so that segment is checked at every read).
    pub fn set_checked(&self, number: usize) {
        self.checked.set(number);
    }
}

impl LevelMap {
    /// The map of a level this process is writing, at most `bytes_bound` bytes long when
    /// finished (blocks past the bound are read through the segment cache); its segments
    /// count as checked, as [`LevelMap::written_here`]'s.
    pub fn ahead(bytes_bound: u64) -> Self {
        LevelMap { ahead_bytes: Some(bytes_bound), written_here: true, map: OnceLock::new() }
    }

    /// [`LevelMap::ahead`] for a level whose first blocks an earlier process wrote and this
    /// one did not read (a level continued from an index saved at a pause,
    /// `level/writer/resume.rs`): every segment is checked at its first read.
    pub fn ahead_unchecked(bytes_bound: u64) -> Self {
        LevelMap { ahead_bytes: Some(bytes_bound), written_here: false, map: OnceLock::new() }
    }

    /// The map of a finished level this process wrote: its segments count as checked
    /// (module documentation). A level opened from disk takes [`LevelMap::default`].
    pub fn written_here() -> Self {
        LevelMap { ahead_bytes: None, written_here: true, map: OnceLock::new() }
    }

    /// The map of `file`, made on first use: a finished level's first `len` bytes, which
    /// hold `segments` segments, or a level being written at its bound (`len` and
    /// `segments` unused); `None` when the backend offers none or mapping failed (then the
    /// caller reads with `pread`, which reports whatever the failure was).
    pub fn get(&self, file: &dyn StorageFile, len: u64, segments: usize) -> Option<&Mapped> {
        self.map
            .get_or_init(|| match self.ahead_bytes {
                Some(bound) => {
                    let bytes = file.map_read_ahead(bound).ok().flatten()?;
                    let checked = CheckedBits::new(bound / SEGMENT_BYTES_MIN);
                    Some(Mapped { bytes, written_here: self.written_here, checked })
                }
                None => {
                    let bytes = file.map_read(len).ok().flatten()?;
                    let checked = CheckedBits::new(segments as u64);
                    Some(Mapped { bytes, written_here: self.written_here, checked })
                }
            })
            .as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lamina_storage::{FileOptions, FileStorage, OpenMode, Storage};

    #[test]
    fn each_segment_has_its_own_bit() {
        let dir = tempfile::tempdir().unwrap();
        let storage = FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap();
        let file = storage.open("f", OpenMode::CreateNew).unwrap();
        file.write_all_at(0, &[1u8; 4096]).unwrap();
        let map = LevelMap::default();
        let mapped = map.get(&*file, 4096, 130).expect("the file backend maps");
        for n in [0, 63, 64, 129] {
            assert!(!mapped.is_checked(n));
            mapped.set_checked(n);
            assert!(mapped.is_checked(n));
        }
        assert!(!mapped.is_checked(1) && !mapped.is_checked(65) && !mapped.is_checked(128));
        mapped.set_checked(CHUNK_BITS * 7); // beyond the level: ignored
        assert!(!mapped.is_checked(CHUNK_BITS * 7));
        // Made once: a second call returns the same map whatever it is given.
        assert!(std::ptr::eq(map.get(&*file, 1, 1).unwrap(), mapped));
    }

    #[test]
    fn only_a_level_written_here_counts_its_segments_as_checked() {
        let dir = tempfile::tempdir().unwrap();
        let storage = FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap();
        let file = storage.open("f", OpenMode::CreateNew).unwrap();
        file.write_all_at(0, &[1u8; 4096]).unwrap();
        let opened = LevelMap::default();
        assert!(!opened.get(&*file, 4096, 4).unwrap().is_checked(0), "read from disk: checked");
        for written in [LevelMap::written_here(), LevelMap::ahead(1 << 20)] {
            let mapped = written.get(&*file, 4096, 4).unwrap();
            assert!((0..4).all(|n| mapped.is_checked(n)));
        }
    }

    #[test]
    fn a_level_being_written_is_mapped_past_its_end_and_shows_later_writes() {
        let dir = tempfile::tempdir().unwrap();
        let storage = FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap();
        let file = storage.open("f", OpenMode::CreateNew).unwrap();
        file.write_all_at(0, &[1u8; 4096]).unwrap();
        let map = LevelMap::ahead(1 << 30);
        let mapped = map.get(&*file, 0, 0).expect("the file backend maps");
        assert_eq!(mapped.bytes.len(), 1 << 30, "the bound, past the file's 4 KiB");
        assert_eq!(mapped.bytes.get(0, 4096), Some(&[1u8; 4096][..]));
        // Appended after the map was made: seen through it (one page cache).
        file.write_all_at(4096, &[2u8; 8192]).unwrap();
        assert_eq!(mapped.bytes.get(4096, 8192), Some(&[2u8; 8192][..]));
        // Bits far into the bound are kept in their own chunk.
        let far = usize::try_from((1u64 << 30) / SEGMENT_BYTES_MIN).unwrap() - 1;
        mapped.set_checked(far);
        let bits = &mapped.checked;
        assert!(bits.get(far) && !bits.get(far - 1) && !bits.get(0));
    }
}
