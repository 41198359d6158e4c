//! The RocksDB peer: `rocksdb` (defaults) and `rocksdb-tuned` (Bloom filter, large write
//! buffer). Compare-and-swap and delete-with-existence use lamina's striped key locks
//! ([`KeyLocks`]) around a `Get` and a write: the plain RocksDB API has no read-modify-write,
//! and every write takes its key's stripe so none can slip between the read and the write.
//! Batches are RocksDB `WriteBatch`es, atomic by RocksDB's own guarantee.

use std::ffi::{CString, c_char};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::ptr;

use lamina_core::WriteBatch;
use lamina_core::{BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, Result, Stats};

use super::ffi;
use crate::common::{Backend, KeyLocks, Peer, c_message, library_error};
use crate::{PeerName, PeerOptions};

/// Write buffer of `rocksdb-tuned` at most: the NB-tree paper's best setting (§6.1).
const TUNED_WRITE_BUFFER_BYTES_MAX: u64 = 2 << 30;
/// Write buffer of `rocksdb-tuned` at least: RocksDB's default, so tuning never shrinks it.
const TUNED_WRITE_BUFFER_BYTES_MIN: u64 = 64 << 20;

/// Opens a RocksDB configuration in `dir`.
pub(crate) fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Peer<RocksDb>> {
    let backend = RocksDb::open(peer, dir, options)?;
    Peer::new(peer.as_str(), dir, backend, options.durability)
}

/// An open RocksDB database and the option objects it was opened with.
pub(crate) struct RocksDb {
    name: &'static str,
    dir: PathBuf,
    db: *mut ffi::rocksdb_t,
    options: *mut ffi::rocksdb_options_t,
    table_options: *mut ffi::rocksdb_block_based_table_options_t,
    cache: *mut ffi::rocksdb_cache_t,
    read_options: *mut ffi::rocksdb_readoptions_t,
    write_options: *mut ffi::rocksdb_writeoptions_t,
    locks: KeyLocks,
}

// SAFETY: a RocksDB `DB*` is safe for concurrent use from any thread (RocksDB's documented
// guarantee); the option objects are only read after `open`, and are freed in `Drop` after
// the database is closed, when no other reference exists.
unsafe impl Send for RocksDb {}
// SAFETY: as above.
unsafe impl Sync for RocksDb {}

/// Takes the message out of a RocksDB `errptr`, freeing it.
fn take_error(err: *mut c_char) -> Option<String> {
    if err.is_null() {
        return None;
    }
    // SAFETY: RocksDB sets `errptr` to a NUL-terminated `malloc`ed string it hands over.
    let message = unsafe { c_message(err) };
    // SAFETY: `err` came from RocksDB's allocator and is freed once, here.
    unsafe { ffi::rocksdb_free(err.cast()) };
    Some(message)
}

impl RocksDb {
    fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Self> {
        let path = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::option("dir", "path contains a NUL byte"))?;
        // SAFETY: creating option objects has no preconditions; each is freed in Drop (or
        // below when opening fails, through the partially built `RocksDb`).
        let mut this = unsafe {
            RocksDb {
                name: peer.as_str(),
                dir: dir.to_path_buf(),
                db: ptr::null_mut(),
                options: ffi::rocksdb_options_create(),
                table_options: ffi::rocksdb_block_based_options_create(),
                cache: ffi::rocksdb_cache_create_lru(options.cache_bytes as usize),
                read_options: ffi::rocksdb_readoptions_create(),
                write_options: ffi::rocksdb_writeoptions_create(),
                locks: KeyLocks::new(),
            }
        };
        let sync = u8::from(options.durability == Durability::Sync);
        // SAFETY: every pointer was just created and is valid; the filter policy's ownership
        // passes to the table options (RocksDB's contract), the cache is shared by reference
        // count, and the table factory copies the table options.
        unsafe {
            ffi::rocksdb_options_set_create_if_missing(this.options, 1);
            ffi::rocksdb_block_based_options_set_block_cache(this.table_options, this.cache);
            if peer == PeerName::RocksDbTuned {
                let policy = ffi::rocksdb_filterpolicy_create_bloom(10.0);
                ffi::rocksdb_block_based_options_set_filter_policy(this.table_options, policy);
                // The in-memory budget of the run, within [default, paper's 2 GiB].
                let buffer = options
                    .memory_budget_bytes
                    .clamp(TUNED_WRITE_BUFFER_BYTES_MIN, TUNED_WRITE_BUFFER_BYTES_MAX);
                ffi::rocksdb_options_set_write_buffer_size(this.options, buffer as usize);
            }
            ffi::rocksdb_options_set_block_based_table_factory(this.options, this.table_options);
            ffi::rocksdb_writeoptions_set_sync(this.write_options, sync);
            let mut err = ptr::null_mut();
            this.db = ffi::rocksdb_open(this.options, path.as_ptr(), &raw mut err);
            if let Some(message) = take_error(err) {
                return Err(this.error("open", &message));
            }
        }
        if this.db.is_null() {
            return Err(this.error("open", "rocksdb_open returned no handle"));
        }
        Ok(this)
    }

    fn error(&self, operation: &str, message: &str) -> Error {
        library_error(self.name, operation, &self.dir, message)
    }

    fn check(&self, operation: &str, err: *mut c_char) -> Result<()> {
        match take_error(err) {
            Some(message) => Err(self.error(operation, &message)),
            None => Ok(()),
        }
    }

    fn raw_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut len = 0usize;
        let mut err = ptr::null_mut();
        // SAFETY: `db` and `read_options` are open; `key` is valid for `key.len()` bytes.
        let value = unsafe {
            ffi::rocksdb_get(
                self.db,
                self.read_options,
                key.as_ptr().cast(),
                key.len(),
                &raw mut len,
                &raw mut err,
            )
        };
        self.check("get", err)?;
        if value.is_null() {
            return Ok(None);
        }
        // SAFETY: RocksDB returned a `malloc`ed buffer of `len` bytes, which we copy and free.
        let copy = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), len) }.to_vec();
        // SAFETY: freed once, with RocksDB's allocator.
        unsafe { ffi::rocksdb_free(value.cast()) };
        Ok(Some(copy))
    }

    fn raw_put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: handles are open; key and value are valid for their lengths.
        unsafe {
            ffi::rocksdb_put(
                self.db,
                self.write_options,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &raw mut err,
            );
        }
        self.check("put", err)
    }

    fn raw_delete(&self, key: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: handles are open; key is valid for its length.
        unsafe {
            ffi::rocksdb_delete(
                self.db,
                self.write_options,
                key.as_ptr().cast(),
                key.len(),
                &raw mut err,
            );
        }
        self.check("delete", err)
    }

    fn property(&self, name: &std::ffi::CStr) -> Option<u64> {
        let mut value = 0u64;
        // SAFETY: `db` is open and `name` NUL-terminated.
        let rc = unsafe { ffi::rocksdb_property_int(self.db, name.as_ptr(), &raw mut value) };
        (rc == 0).then_some(value)
    }
}

/// A RocksDB iterator, destroyed on drop.
struct Iter<'db> {
    db: &'db RocksDb,
    raw: *mut ffi::rocksdb_iterator_t,
}

impl Iter<'_> {
    fn valid(&self) -> bool {
        // SAFETY: `raw` is a live iterator.
        unsafe { ffi::rocksdb_iter_valid(self.raw) != 0 }
    }

    /// The current pair, copied.
    fn entry(&self) -> Entry {
        let (mut klen, mut vlen) = (0usize, 0usize);
        // SAFETY: the iterator is valid (checked by the caller); RocksDB returns pointers to
        // `klen`/`vlen` bytes that stay valid until the iterator moves, and we copy them now.
        unsafe {
            let k = ffi::rocksdb_iter_key(self.raw, &raw mut klen);
            let v = ffi::rocksdb_iter_value(self.raw, &raw mut vlen);
            (
                std::slice::from_raw_parts(k.cast::<u8>(), klen).to_vec(),
                std::slice::from_raw_parts(v.cast::<u8>(), vlen).to_vec(),
            )
        }
    }

    fn status(&self) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: `raw` is a live iterator.
        unsafe { ffi::rocksdb_iter_get_error(self.raw, &raw mut err) };
        self.db.check("scan", err)
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: destroyed once; the database outlives the iterator (borrow).
        unsafe { ffi::rocksdb_iter_destroy(self.raw) };
    }
}

impl Backend for RocksDb {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.raw_get(key)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let _stripe = self.locks.lock(key);
        self.raw_put(key, value)
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        let _stripe = self.locks.lock(key);
        if self.raw_get(key)?.is_none() {
            return Ok(false);
        }
        self.raw_delete(key)?;
        Ok(true)
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        let _stripe = self.locks.lock(key);
        let current = self.raw_get(key)?;
        if current.as_deref() != expected {
            return Ok(CasOutcome::Mismatch { current });
        }
        match new {
            Some(value) => self.raw_put(key, value)?,
            None if current.is_some() => self.raw_delete(key)?,
            None => {}
        }
        Ok(CasOutcome::Swapped)
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        // SAFETY: `db` and `read_options` are open; the iterator is destroyed by `Iter`.
        let raw = unsafe { ffi::rocksdb_create_iterator(self.db, self.read_options) };
        let iter = Iter { db: self, raw };
        match &range.start {
            // SAFETY: the iterator is live; the key is valid for its length.
            Bound::Included(k) | Bound::Excluded(k) => unsafe {
                ffi::rocksdb_iter_seek(iter.raw, k.as_ptr().cast(), k.len());
            },
            // SAFETY: the iterator is live.
            Bound::Unbounded => unsafe { ffi::rocksdb_iter_seek_to_first(iter.raw) },
        }
        let mut out = Vec::new();
        while out.len() < limit && iter.valid() {
            let (k, v) = iter.entry();
            if range.is_past_end(&k) {
                break;
            }
            if range.contains(&k) {
                out.push((k, v));
            }
            // SAFETY: the iterator is live and valid.
            unsafe { ffi::rocksdb_iter_next(iter.raw) };
        }
        iter.status()?;
        Ok(out)
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        let _stripes = self.locks.lock_all(batch.ops().iter().map(BatchOp::key));
        // SAFETY: creating a batch has no preconditions; destroyed below.
        let raw = unsafe { ffi::rocksdb_writebatch_create() };
        for op in batch.ops() {
            // SAFETY: `raw` is live; keys and values are valid for their lengths and copied.
            unsafe {
                match op {
                    BatchOp::Put { key, value } => ffi::rocksdb_writebatch_put(
                        raw,
                        key.as_ptr().cast(),
                        key.len(),
                        value.as_ptr().cast(),
                        value.len(),
                    ),
                    BatchOp::Delete { key } => {
                        ffi::rocksdb_writebatch_delete(raw, key.as_ptr().cast(), key.len());
                    }
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: handles are open; the batch is destroyed once after the write.
        unsafe {
            ffi::rocksdb_write(self.db, self.write_options, raw, &raw mut err);
            ffi::rocksdb_writebatch_destroy(raw);
        }
        self.check("write batch", err)
    }

    fn sync(&self) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: `db` is open.
        unsafe { ffi::rocksdb_flush_wal(self.db, 1, &raw mut err) };
        self.check("sync", err)
    }

    fn fill_stats(&self, stats: &mut Stats) {
        if let Some(keys) = self.property(c"rocksdb.estimate-num-keys") {
            stats.extra.push(("estimate_num_keys", keys));
        }
        let memtables = self.property(c"rocksdb.cur-size-all-mem-tables").unwrap_or(0);
        let cache = self.property(c"rocksdb.block-cache-usage").unwrap_or(0);
        stats.memory_bytes = memtables + cache;
        if let Some(sst) = self.property(c"rocksdb.live-sst-files-size") {
            stats.extra.push(("live_sst_files_bytes", sst));
        }
        if let Some(n) = self.property(c"rocksdb.num-running-compactions") {
            stats.extra.push(("running_compactions", n));
        }
    }

    fn close(self) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for RocksDb {
    fn drop(&mut self) {
        // SAFETY: each handle is freed once; the database is closed before the objects it
        // was opened with. Null handles (failed open) are skipped.
        unsafe {
            if !self.db.is_null() {
                ffi::rocksdb_close(self.db);
            }
            ffi::rocksdb_writeoptions_destroy(self.write_options);
            ffi::rocksdb_readoptions_destroy(self.read_options);
            ffi::rocksdb_block_based_options_destroy(self.table_options);
            ffi::rocksdb_options_destroy(self.options);
            ffi::rocksdb_cache_destroy(self.cache);
        }
    }
}
