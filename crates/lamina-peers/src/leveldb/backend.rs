//! The LevelDB peer: `leveldb` (defaults) and `leveldb-tuned` (Bloom filter, 32 MiB write
//! buffer, NB-tree paper §6.1). Compare-and-swap and delete-with-existence use lamina's striped key locks
//! ([`KeyLocks`]) around a `Get` and a write: the plain LevelDB API has no read-modify-write,
//! and every write takes its key's stripe so none can slip between the read and the write.
//! Batches are LevelDB `WriteBatch`es, atomic by LevelDB's own guarantee.

use std::ffi::{CString, c_char};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::ptr;

use lamina_core::WriteBatch;
use lamina_core::{BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, Result, Stats};

use super::ffi;
use crate::common::{Backend, KeyLocks, Peer, c_message, library_error};
use crate::{PeerName, PeerOptions};

/// Write buffer of `leveldb-tuned`: the NB-tree paper's best setting for LevelDB (§6.1).
const TUNED_WRITE_BUFFER_BYTES: usize = 32 << 20;

/// Opens a LevelDB configuration in `dir`.
pub(crate) fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Peer<LevelDb>> {
    let backend = LevelDb::open(peer, dir, options)?;
    Peer::new(peer.as_str(), dir, backend, options.durability)
}

/// An open LevelDB database and the option objects it was opened with.
pub(crate) struct LevelDb {
    name: &'static str,
    dir: PathBuf,
    db: *mut ffi::leveldb_t,
    options: *mut ffi::leveldb_options_t,
    /// Null for `leveldb` (no filter); outlives the database (LevelDB keeps a raw pointer).
    filter: *mut ffi::leveldb_filterpolicy_t,
    cache: *mut ffi::leveldb_cache_t,
    read_options: *mut ffi::leveldb_readoptions_t,
    write_options: *mut ffi::leveldb_writeoptions_t,
    /// `sync = true`, for [`Backend::sync`]'s empty synced write.
    sync_options: *mut ffi::leveldb_writeoptions_t,
    locks: KeyLocks,
}

// SAFETY: a LevelDB `DB*` is safe for concurrent use from any thread (LevelDB's documented
// guarantee); the option, cache and filter objects are only read after `open`, and are freed in `Drop` after
// the database is closed, when no other reference exists.
unsafe impl Send for LevelDb {}
// SAFETY: as above.
unsafe impl Sync for LevelDb {}

/// Takes the message out of a LevelDB `errptr`, freeing it.
fn take_error(err: *mut c_char) -> Option<String> {
    if err.is_null() {
        return None;
    }
    // SAFETY: LevelDB sets `errptr` to a NUL-terminated `malloc`ed string it hands over.
    let message = unsafe { c_message(err) };
    // SAFETY: `err` came from LevelDB's allocator and is freed once, here.
    unsafe { ffi::leveldb_free(err.cast()) };
    Some(message)
}

impl LevelDb {
    fn open(peer: PeerName, dir: &Path, options: &PeerOptions) -> Result<Self> {
        let path = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::option("dir", "path contains a NUL byte"))?;
        // SAFETY: creating option objects has no preconditions; each is freed in Drop (or
        // below when opening fails, through the partially built `LevelDb`).
        let mut this = unsafe {
            LevelDb {
                name: peer.as_str(),
                dir: dir.to_path_buf(),
                db: ptr::null_mut(),
                options: ffi::leveldb_options_create(),
                filter: ptr::null_mut(),
                cache: ffi::leveldb_cache_create_lru(options.cache_bytes as usize),
                read_options: ffi::leveldb_readoptions_create(),
                write_options: ffi::leveldb_writeoptions_create(),
                sync_options: ffi::leveldb_writeoptions_create(),
                locks: KeyLocks::new(),
            }
        };
        let sync = u8::from(options.durability == Durability::Sync);
        // SAFETY: every pointer was just created and is valid; the cache and the filter
        // policy stay alive until after `leveldb_close` (freed in Drop).
        unsafe {
            ffi::leveldb_options_set_create_if_missing(this.options, 1);
            ffi::leveldb_options_set_cache(this.options, this.cache);
            if peer == PeerName::LevelDbTuned {
                this.filter = ffi::leveldb_filterpolicy_create_bloom(10);
                ffi::leveldb_options_set_filter_policy(this.options, this.filter);
                ffi::leveldb_options_set_write_buffer_size(this.options, TUNED_WRITE_BUFFER_BYTES);
            }
            ffi::leveldb_writeoptions_set_sync(this.sync_options, 1);
            ffi::leveldb_writeoptions_set_sync(this.write_options, sync);
            let mut err = ptr::null_mut();
            this.db = ffi::leveldb_open(this.options, path.as_ptr(), &raw mut err);
            if let Some(message) = take_error(err) {
                return Err(this.error("open", &message));
            }
        }
        if this.db.is_null() {
            return Err(this.error("open", "leveldb_open returned no handle"));
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
            ffi::leveldb_get(
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
        // SAFETY: LevelDB returned a `malloc`ed buffer of `len` bytes, which we copy and free.
        let copy = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), len) }.to_vec();
        // SAFETY: freed once, with LevelDB's allocator.
        unsafe { ffi::leveldb_free(value.cast()) };
        Ok(Some(copy))
    }

    fn raw_put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: handles are open; key and value are valid for their lengths.
        unsafe {
            ffi::leveldb_put(
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
            ffi::leveldb_delete(
                self.db,
                self.write_options,
                key.as_ptr().cast(),
                key.len(),
                &raw mut err,
            );
        }
        self.check("delete", err)
    }

    fn property(&self, name: &std::ffi::CStr) -> Option<String> {
        // SAFETY: `db` is open and `name` NUL-terminated.
        let raw = unsafe { ffi::leveldb_property_value(self.db, name.as_ptr()) };
        if raw.is_null() {
            return None;
        }
        // SAFETY: LevelDB returned a NUL-terminated `malloc`ed string; copied, then freed once.
        let value = unsafe { c_message(raw) };
        // SAFETY: as above.
        unsafe { ffi::leveldb_free(raw.cast()) };
        Some(value)
    }
}

/// A LevelDB iterator, destroyed on drop.
struct Iter<'db> {
    db: &'db LevelDb,
    raw: *mut ffi::leveldb_iterator_t,
}

impl Iter<'_> {
    fn valid(&self) -> bool {
        // SAFETY: `raw` is a live iterator.
        unsafe { ffi::leveldb_iter_valid(self.raw) != 0 }
    }

    /// The current pair, copied.
    fn entry(&self) -> Entry {
        let (mut klen, mut vlen) = (0usize, 0usize);
        // SAFETY: the iterator is valid (checked by the caller); LevelDB returns pointers to
        // `klen`/`vlen` bytes that stay valid until the iterator moves, and we copy them now.
        unsafe {
            let k = ffi::leveldb_iter_key(self.raw, &raw mut klen);
            let v = ffi::leveldb_iter_value(self.raw, &raw mut vlen);
            (
                std::slice::from_raw_parts(k.cast::<u8>(), klen).to_vec(),
                std::slice::from_raw_parts(v.cast::<u8>(), vlen).to_vec(),
            )
        }
    }

    fn status(&self) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: `raw` is a live iterator.
        unsafe { ffi::leveldb_iter_get_error(self.raw, &raw mut err) };
        self.db.check("scan", err)
    }
}

impl Drop for Iter<'_> {
    fn drop(&mut self) {
        // SAFETY: destroyed once; the database outlives the iterator (borrow).
        unsafe { ffi::leveldb_iter_destroy(self.raw) };
    }
}

impl Backend for LevelDb {
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
        let raw = unsafe { ffi::leveldb_create_iterator(self.db, self.read_options) };
        let iter = Iter { db: self, raw };
        match &range.start {
            // SAFETY: the iterator is live; the key is valid for its length.
            Bound::Included(k) | Bound::Excluded(k) => unsafe {
                ffi::leveldb_iter_seek(iter.raw, k.as_ptr().cast(), k.len());
            },
            // SAFETY: the iterator is live.
            Bound::Unbounded => unsafe { ffi::leveldb_iter_seek_to_first(iter.raw) },
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
            unsafe { ffi::leveldb_iter_next(iter.raw) };
        }
        iter.status()?;
        Ok(out)
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        let _stripes = self.locks.lock_all(batch.ops().iter().map(BatchOp::key));
        // SAFETY: creating a batch has no preconditions; destroyed below.
        let raw = unsafe { ffi::leveldb_writebatch_create() };
        for op in batch.ops() {
            // SAFETY: `raw` is live; keys and values are valid for their lengths and copied.
            unsafe {
                match op {
                    BatchOp::Put { key, value } => ffi::leveldb_writebatch_put(
                        raw,
                        key.as_ptr().cast(),
                        key.len(),
                        value.as_ptr().cast(),
                        value.len(),
                    ),
                    BatchOp::Delete { key } => {
                        ffi::leveldb_writebatch_delete(raw, key.as_ptr().cast(), key.len());
                    }
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: handles are open; the batch is destroyed once after the write.
        unsafe {
            ffi::leveldb_write(self.db, self.write_options, raw, &raw mut err);
            ffi::leveldb_writebatch_destroy(raw);
        }
        self.check("write batch", err)
    }

    /// LevelDB has no call that syncs its log alone; an empty batch written with
    /// `sync = true` appends an empty record and syncs the log, and with it every earlier
    /// write.
    fn sync(&self) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: `db` is open; the empty batch is destroyed once after the write.
        unsafe {
            let raw = ffi::leveldb_writebatch_create();
            ffi::leveldb_write(self.db, self.sync_options, raw, &raw mut err);
            ffi::leveldb_writebatch_destroy(raw);
        }
        self.check("sync", err)
    }

    fn fill_stats(&self, stats: &mut Stats) {
        if let Some(usage) = self.property(c"leveldb.approximate-memory-usage") {
            stats.memory_bytes = usage.trim().parse().unwrap_or(0);
        }
        for level in 0..7u8 {
            let name = std::ffi::CString::new(format!("leveldb.num-files-at-level{level}"))
                .expect("no NUL in a property name");
            if let Some(files) = self.property(&name).and_then(|v| v.trim().parse().ok()) {
                const NAMES: [&str; 7] = [
                    "files_at_level0",
                    "files_at_level1",
                    "files_at_level2",
                    "files_at_level3",
                    "files_at_level4",
                    "files_at_level5",
                    "files_at_level6",
                ];
                stats.extra.push((NAMES[usize::from(level)], files));
            }
        }
    }

    fn close(self) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for LevelDb {
    fn drop(&mut self) {
        // SAFETY: each handle is freed once; the database is closed before the objects it
        // was opened with. Null handles (failed open) are skipped.
        unsafe {
            if !self.db.is_null() {
                ffi::leveldb_close(self.db);
            }
            ffi::leveldb_writeoptions_destroy(self.write_options);
            ffi::leveldb_writeoptions_destroy(self.sync_options);
            ffi::leveldb_readoptions_destroy(self.read_options);
            ffi::leveldb_options_destroy(self.options);
            ffi::leveldb_cache_destroy(self.cache);
            if !self.filter.is_null() {
                ffi::leveldb_filterpolicy_destroy(self.filter);
            }
        }
    }
}
