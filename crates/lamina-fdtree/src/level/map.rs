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

use std::sync::OnceLock;

use lamina_storage::{ReadMap, StorageFile};

/// The lazily made map of one finished level file.
#[derive(Debug, Default)]
pub struct LevelMap {
    map: OnceLock<Option<ReadMap>>,
}

impl LevelMap {
    /// The map of `file`'s first `len` bytes, made on first use; `None` when the backend
    /// offers none or mapping failed (then the caller reads with `pread`, which reports
    /// whatever the failure was).
    pub fn get(&self, file: &dyn StorageFile, len: u64) -> Option<&ReadMap> {
        self.map.get_or_init(|| file.map_read(len).ok().flatten()).as_ref()
    }
}
