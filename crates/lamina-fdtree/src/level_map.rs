//! A finished level file mapped read-only for lookups (`lamina_storage::read_map`): a lookup
//! parses its segment in place in the OS page cache, with no `pread`, no copy and no frame
//! of the segment cache (the profile of issue 22: the `pread` copy and the cache's
//! bookkeeping were half of a lookup's time).
//!
//! Only a level that is finished is mapped: its file has all its blocks, is never written
//! or resized again, and lives until the level is dropped (FD+FC punches its blocks as a
//! merge passes them, which only zeroes them, under the block latches that lookups hold,
//! `latches.rs`). A level being written (FD+FC's `L_0^new` and new levels) has no map and
//! reads through the segment cache. The map is made at the first lookup that reads the
//! level; a backend without maps (memory, fault injection) or a map that fails leaves the
//! level on the cache path for good, so the map is a speed-up, never a requirement.
//!
//! Each segment is checked in full (checksum, place) the first time a lookup reads it
//! through the map, and only its header's count and length afterwards, as the segment
//! cache checks a segment once when it loads it: with the checksum computed on every read,
//! CRC32C was a quarter of a lookup's time. One bit per segment remembers it.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_storage::{ReadMap, StorageFile};

/// The lazily made map of one finished level file.
#[derive(Debug, Default)]
pub struct LevelMap {
    map: OnceLock<Option<Mapped>>,
}

/// A mapped level and which of its segments were checked in full.
#[derive(Debug)]
pub struct Mapped {
    /// The file's blocks.
    pub bytes: ReadMap,
    /// Bit `i`: segment `i` of the level (`LevelIndex` order) passed `parse_segment`.
    checked: Box<[AtomicU64]>,
}

impl Mapped {
    /// Whether segment `number` was checked in full.
    pub fn is_checked(&self, number: usize) -> bool {
        self.checked
            .get(number / 64)
            .is_some_and(|w| w.load(Ordering::Acquire) & (1 << (number % 64)) != 0)
    }

    /// Records that segment `number` passed the full check.
    pub fn set_checked(&self, number: usize) {
        if let Some(w) = self.checked.get(number / 64) {
            w.fetch_or(1 << (number % 64), Ordering::AcqRel);
        }
    }
}

impl LevelMap {
    /// The map of `file`'s first `len` bytes, a level of `segments` segments, made on first
    /// use; `None` when the backend offers none or mapping failed (then the caller reads
    /// with `pread`, which reports whatever the failure was).
    pub fn get(&self, file: &dyn StorageFile, len: u64, segments: usize) -> Option<&Mapped> {
        self.map
            .get_or_init(|| {
                let bytes = file.map_read(len).ok().flatten()?;
                let checked = (0..segments.div_ceil(64)).map(|_| AtomicU64::new(0)).collect();
                Some(Mapped { bytes, checked })
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
        mapped.set_checked(10_000); // beyond the level: ignored
        assert!(!mapped.is_checked(10_000));
        // Made once: a second call returns the same map whatever it is given.
        assert!(std::ptr::eq(map.get(&*file, 1, 1).unwrap(), mapped));
    }
}
