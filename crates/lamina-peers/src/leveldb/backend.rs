//! The LevelDB peer: `leveldb` (defaults) and `leveldb-tuned` (Bloom filter, 32 MiB write
//! buffer, NB-tree paper §6.1). Reads, writes, scans, batches and the striped-lock
//! read-modify-writes are [`LsmStore`]'s, shared with RocksDB; this module holds LevelDB's
//! options, its sync and its statistics.

use std::path::Path;
use std::ptr;

use lamina_core::{Result, Stats};

use super::ffi::{self, LevelDbC};
use crate::common::Peer;
use crate::lsm::{LsmCApi, LsmLibrary, LsmStore, OpenHandles};
use crate::{PeerName, PeerOptions};

/// Write buffer of `leveldb-tuned`: the NB-tree paper's best setting for LevelDB (§6.1).
const TUNED_WRITE_BUFFER_BYTES: usize = 32 << 20;
/// Bloom filter bits per key of `leveldb-tuned` (about 1% false positives).
const TUNED_BLOOM_BITS_PER_KEY: i32 = 10;

/// An open LevelDB database.
pub(crate) type LevelDb = LsmStore<LevelDbC>;

/// Opens a LevelDB configuration in `dir`.
pub(crate) fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Peer<LevelDb>> {
    let tuned = peer == PeerName::LevelDbTuned;
    let backend = LsmStore::open(peer, dir, options, |handles| configure(handles, tuned))?;
    Peer::new(peer.as_str(), dir, backend, options.durability)
}

/// Attaches the cache and, when `tuned`, the Bloom filter and the larger write buffer.
fn configure(handles: &OpenHandles<LevelDbC>, tuned: bool) -> LevelDbExtras {
    // SAFETY: creating write options has no preconditions; freed by `LevelDbExtras`.
    let sync_options = unsafe { LevelDbC::writeoptions_create() };
    // SAFETY: `sync_options` was just created.
    unsafe { LevelDbC::writeoptions_set_sync(sync_options, 1) };
    let mut extras = LevelDbExtras { filter: ptr::null_mut(), sync_options };
    // SAFETY: the options and the cache are live; the cache (freed by `OpenHandles`) and the
    // filter policy (freed by `LevelDbExtras`) outlive the database, which `LsmStore` closes
    // before dropping either.
    unsafe {
        ffi::leveldb_options_set_cache(handles.options, handles.cache);
        if tuned {
            extras.filter = ffi::leveldb_filterpolicy_create_bloom(TUNED_BLOOM_BITS_PER_KEY);
            ffi::leveldb_options_set_filter_policy(handles.options, extras.filter);
            LevelDbC::options_set_write_buffer_size(handles.options, TUNED_WRITE_BUFFER_BYTES);
        }
    }
    extras
}

/// LevelDB's objects beyond the shared ones, freed after the database is closed.
pub(crate) struct LevelDbExtras {
    /// Null for `leveldb` (no filter); outlives the database (LevelDB keeps a raw pointer).
    filter: *mut ffi::leveldb_filterpolicy_t,
    /// `sync = true`, for [`LsmLibrary::sync`]'s empty synced write.
    sync_options: *mut ffi::leveldb_writeoptions_t,
}

// SAFETY: the filter policy and the write options are only read (by LevelDB, from any
// thread) after `open`, and freed in `Drop` when no other reference exists.
unsafe impl Send for LevelDbExtras {}
// SAFETY: as above.
unsafe impl Sync for LevelDbExtras {}

impl Drop for LevelDbExtras {
    fn drop(&mut self) {
        // SAFETY: each object is freed once, after the database is closed (`LsmStore` drops
        // its `OpenedWith` after closing). A null filter (`leveldb`) is skipped.
        unsafe {
            LevelDbC::writeoptions_destroy(self.sync_options);
            if !self.filter.is_null() {
                ffi::leveldb_filterpolicy_destroy(self.filter);
            }
        }
    }
}

/// Property names of the files per level, and the statistics names they are reported as.
const LEVEL_FILE_PROPERTIES: [(&std::ffi::CStr, &str); 7] = [
    (c"leveldb.num-files-at-level0", "files_at_level0"),
    (c"leveldb.num-files-at-level1", "files_at_level1"),
    (c"leveldb.num-files-at-level2", "files_at_level2"),
    (c"leveldb.num-files-at-level3", "files_at_level3"),
    (c"leveldb.num-files-at-level4", "files_at_level4"),
    (c"leveldb.num-files-at-level5", "files_at_level5"),
    (c"leveldb.num-files-at-level6", "files_at_level6"),
];

/// A LevelDB property, or `None` when LevelDB does not know it.
fn property(store: &LevelDb, name: &std::ffi::CStr) -> Option<String> {
    // SAFETY: the database is open and `name` NUL-terminated.
    let raw = unsafe { ffi::leveldb_property_value(store.db(), name.as_ptr()) };
    // SAFETY: LevelDB returned null or a NUL-terminated `malloc`ed string it hands over.
    unsafe { crate::lsm::take_c_string::<LevelDbC>(raw) }
}

impl LsmLibrary for LevelDbC {
    type OpenedWith = LevelDbExtras;

    /// LevelDB has no call that syncs its log alone; an empty batch written with
    /// `sync = true` appends an empty record and syncs the log, and with it every earlier
    /// write.
    fn sync(store: &LevelDb) -> Result<()> {
        store.write_ops("sync", &[], store.opened_with().sync_options)
    }

    fn fill_stats(store: &LevelDb, stats: &mut Stats) {
        if let Some(usage) = property(store, c"leveldb.approximate-memory-usage") {
            stats.memory_bytes = usage.trim().parse().unwrap_or(0);
        }
        for (property_name, stat_name) in LEVEL_FILE_PROPERTIES {
            if let Some(files) = property(store, property_name).and_then(|v| v.trim().parse().ok())
            {
                stats.extra.push((stat_name, files));
            }
        }
    }
}
