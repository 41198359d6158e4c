//! The RocksDB peer: `rocksdb` (defaults) and `rocksdb-tuned` (Bloom filter, large write
//! buffer). Reads, writes, scans, batches and the striped-lock read-modify-writes are
//! [`LsmStore`]'s, shared with LevelDB; this module holds RocksDB's block-based table
//! options, its sync and its statistics.

use std::path::Path;
use std::ptr;

use lamina_core::{Result, Stats};

use super::ffi::{self, RocksDbC};
use crate::common::Peer;
use crate::lsm::{LsmCApi, LsmLibrary, LsmStore, OpenHandles};
use crate::{PeerName, PeerOptions};

/// Write buffer of `rocksdb-tuned` at most: the NB-tree paper's best setting (§6.1).
const TUNED_WRITE_BUFFER_BYTES_MAX: u64 = 2 << 30;
/// Write buffer of `rocksdb-tuned` at least: RocksDB's default, so tuning never shrinks it.
const TUNED_WRITE_BUFFER_BYTES_MIN: u64 = 64 << 20;
/// Bloom filter bits per key of `rocksdb-tuned` (about 1% false positives).
const TUNED_BLOOM_BITS_PER_KEY: f64 = 10.0;

/// An open RocksDB database.
pub(crate) type RocksDb = LsmStore<RocksDbC>;

/// Opens a RocksDB configuration in `dir`.
pub(crate) fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Peer<RocksDb>> {
    // The in-memory budget of the run, within [default, paper's 2 GiB].
    let tuned_buffer_bytes = (peer == PeerName::RocksDbTuned).then(|| {
        options
            .memory_budget_bytes
            .clamp(TUNED_WRITE_BUFFER_BYTES_MIN, TUNED_WRITE_BUFFER_BYTES_MAX)
    });
    let backend =
        LsmStore::open(peer, dir, options, |handles| configure(handles, tuned_buffer_bytes))?;
    Peer::new(peer.as_str(), dir, backend, options.durability)
}

/// Builds the block-based table options around the cache and, when tuned (with a write
/// buffer size), adds the Bloom filter and the larger write buffer.
fn configure(handles: &OpenHandles<RocksDbC>, tuned_buffer_bytes: Option<u64>) -> TableOptions {
    // SAFETY: creating table options has no preconditions; freed by `TableOptions`.
    let table = TableOptions(unsafe { ffi::rocksdb_block_based_options_create() });
    // SAFETY: every pointer is live; the filter policy's ownership passes to the table
    // options (RocksDB's contract), the cache is shared by reference count, and the table
    // factory copies the table options.
    unsafe {
        ffi::rocksdb_block_based_options_set_block_cache(table.0, handles.cache);
        if let Some(buffer_bytes) = tuned_buffer_bytes {
            let policy = ffi::rocksdb_filterpolicy_create_bloom(TUNED_BLOOM_BITS_PER_KEY);
            ffi::rocksdb_block_based_options_set_filter_policy(table.0, policy);
            let buffer_bytes = usize::try_from(buffer_bytes).unwrap_or(usize::MAX);
            RocksDbC::options_set_write_buffer_size(handles.options, buffer_bytes);
        }
        ffi::rocksdb_options_set_block_based_table_factory(handles.options, table.0);
    }
    table
}

/// RocksDB's block-based table options, freed after the database is closed.
pub(crate) struct TableOptions(*mut ffi::rocksdb_block_based_table_options_t);

// SAFETY: the table options are only read after `open` and freed in `Drop` when no other
// reference exists.
unsafe impl Send for TableOptions {}
// SAFETY: as above.
unsafe impl Sync for TableOptions {}

impl Drop for TableOptions {
    fn drop(&mut self) {
        // SAFETY: freed once, after the database is closed (`LsmStore` drops its
        // `OpenedWith` after closing).
        unsafe { ffi::rocksdb_block_based_options_destroy(self.0) };
    }
}

/// A RocksDB integer property, or `None` when RocksDB does not know it.
fn property(store: &RocksDb, name: &std::ffi::CStr) -> Option<u64> {
    let mut value = 0u64;
    // SAFETY: the database is open and `name` NUL-terminated.
    let rc = unsafe { ffi::rocksdb_property_int(store.db(), name.as_ptr(), &raw mut value) };
    (rc == 0).then_some(value)
}

impl LsmLibrary for RocksDbC {
    type OpenedWith = TableOptions;

    /// Syncs the write-ahead log, and with it every acknowledged write.
    fn sync(store: &RocksDb) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: the database is open.
        unsafe { ffi::rocksdb_flush_wal(store.db(), 1, &raw mut err) };
        store.check("sync", err)
    }

    fn fill_stats(store: &RocksDb, stats: &mut Stats) {
        if let Some(keys) = property(store, c"rocksdb.estimate-num-keys") {
            stats.extra.push(("estimate_num_keys", keys));
        }
        let memtables = property(store, c"rocksdb.cur-size-all-mem-tables").unwrap_or(0);
        let cache = property(store, c"rocksdb.block-cache-usage").unwrap_or(0);
        stats.memory_bytes = memtables + cache;
        if let Some(sst) = property(store, c"rocksdb.live-sst-files-size") {
            stats.extra.push(("live_sst_files_bytes", sst));
        }
        if let Some(n) = property(store, c"rocksdb.num-running-compactions") {
            stats.extra.push(("running_compactions", n));
        }
    }
}
