//! [`LsmStore`]: an open LevelDB or RocksDB database behind [`Backend`], written once over
//! [`LsmLibrary`]. Compare-and-swap and delete-with-existence use lamina's striped key locks
//! ([`KeyLocks`]) around a `Get` and a write: neither plain API has a read-modify-write, and
//! every write takes its key's stripe so none can slip between the read and the write.
//! Batches are the library's `WriteBatch`es, atomic by its own guarantee.

use std::ffi::{CString, c_char};
use std::path::{Path, PathBuf};
use std::ptr;

use lamina_core::{BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, Result, Stats};
use lamina_core::{WriteBatch, limits::KEY_BYTES_MAX};

use super::iter::Iter;
use super::{LsmCApi, LsmLibrary};
use crate::common::{Backend, KeyLocks, c_message, library_error};
use crate::{PeerName, PeerOptions};

/// The option objects every database is opened with, freed on drop.
pub(crate) struct OpenHandles<A: LsmCApi> {
    /// `create_if_missing` is set; the library adds its own settings before `open`.
    pub(crate) options: *mut A::Options,
    /// An LRU cache of `PeerOptions::cache_bytes`, which the library attaches where it goes.
    pub(crate) cache: *mut A::Cache,
    read_options: *mut A::ReadOptions,
    /// `sync` set from the durability mode.
    write_options: *mut A::WriteOptions,
}

impl<A: LsmCApi> OpenHandles<A> {
    fn create(cache_bytes: u64, durability: Durability) -> Self {
        let cache_bytes = usize::try_from(cache_bytes).unwrap_or(usize::MAX);
        // SAFETY: creating option objects has no preconditions; each is freed in Drop.
        let this = unsafe {
            OpenHandles {
                options: A::options_create(),
                cache: A::cache_create_lru(cache_bytes),
                read_options: A::readoptions_create(),
                write_options: A::writeoptions_create(),
            }
        };
        let sync = u8::from(durability == Durability::Sync);
        // SAFETY: both objects were just created and are live.
        unsafe {
            A::options_set_create_if_missing(this.options, 1);
            A::writeoptions_set_sync(this.write_options, sync);
        }
        this
    }
}

impl<A: LsmCApi> Drop for OpenHandles<A> {
    fn drop(&mut self) {
        // SAFETY: each object is freed once; the database using them (if any) is closed first
        // (`LsmStore::drop` runs before its fields are dropped).
        unsafe {
            A::writeoptions_destroy(self.write_options);
            A::readoptions_destroy(self.read_options);
            A::options_destroy(self.options);
            A::cache_destroy(self.cache);
        }
    }
}

/// An open database of library `L` and the objects it was opened with.
pub(crate) struct LsmStore<L: LsmLibrary> {
    name: &'static str,
    dir: PathBuf,
    /// Never null; closed in `Drop`, before the fields below are dropped (in this order).
    db: *mut L::Db,
    handles: OpenHandles<L>,
    opened_with: L::OpenedWith,
    locks: KeyLocks,
}

// SAFETY: a LevelDB or RocksDB `DB*` is safe for concurrent use from any thread (both
// libraries' documented guarantee); the option and cache objects are only read after `open`,
// and are freed after the database is closed, when no other reference exists.
// `L::OpenedWith` is itself `Send + Sync`.
unsafe impl<L: LsmLibrary> Send for LsmStore<L> {}
// SAFETY: as above.
unsafe impl<L: LsmLibrary> Sync for LsmStore<L> {}

/// Takes a `malloc`ed NUL-terminated string out of library `A` (an `errptr` message or a
/// property value), freeing it; `None` for null.
///
/// # Safety
/// `raw` is null or a NUL-terminated string allocated by library `A`, handed over to us.
pub(crate) unsafe fn take_c_string<A: LsmCApi>(raw: *mut c_char) -> Option<String> {
    if raw.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per this function's contract.
    let message = unsafe { c_message(raw) };
    // SAFETY: allocated by `A` and handed over; freed once, here.
    unsafe { A::free(raw.cast()) };
    Some(message)
}

impl<L: LsmLibrary> LsmStore<L> {
    /// Opens configuration `peer` in `dir`: creates the shared option objects, lets
    /// `configure` add the library's settings (returning what must outlive the database),
    /// then opens.
    pub(crate) fn open(
        peer: PeerName,
        dir: &Path,
        options: &PeerOptions,
        configure: impl FnOnce(&OpenHandles<L>) -> L::OpenedWith,
    ) -> Result<Self> {
        let name = peer.as_str();
        let path = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::option("dir", "path contains a NUL byte"))?;
        let handles = OpenHandles::<L>::create(options.cache_bytes, options.durability);
        let opened_with = configure(&handles);
        let mut err = ptr::null_mut();
        // SAFETY: `options` is live and `path` NUL-terminated; on failure everything created
        // is freed by the drops of `handles` and `opened_with`.
        let db = unsafe { L::open(handles.options, path.as_ptr(), &raw mut err) };
        // SAFETY: `err` is null or a message the library handed over.
        let failure = unsafe { take_c_string::<L>(err) };
        if db.is_null() {
            let message =
                failure.unwrap_or_else(|| format!("{}_open returned no handle", L::PREFIX));
            return Err(library_error(name, "open", dir, &message));
        }
        let store = LsmStore {
            name,
            dir: dir.to_path_buf(),
            db,
            handles,
            opened_with,
            locks: KeyLocks::new(),
        };
        // A handle returned with an error is closed by dropping `store`.
        match failure {
            Some(message) => Err(store.error("open", &message)),
            None => Ok(store),
        }
    }

    /// The open database handle, for the library's own calls.
    pub(crate) fn db(&self) -> *mut L::Db {
        self.db
    }

    pub(super) fn read_options(&self) -> *const L::ReadOptions {
        self.handles.read_options
    }

    /// What the library kept from `open`.
    pub(crate) fn opened_with(&self) -> &L::OpenedWith {
        &self.opened_with
    }

    pub(crate) fn error(&self, operation: &str, message: &str) -> Error {
        library_error(self.name, operation, &self.dir, message)
    }

    /// `Err` with the message of a failed call's `errptr`, which it frees.
    pub(crate) fn check(&self, operation: &str, err: *mut c_char) -> Result<()> {
        // SAFETY: `err` is an `errptr` the library set to null or a message it handed over.
        match unsafe { take_c_string::<L>(err) } {
            Some(message) => Err(self.error(operation, &message)),
            None => Ok(()),
        }
    }

    /// Writes `ops` as one batch with `write_options` (an empty batch is a log record).
    pub(crate) fn write_ops(
        &self,
        operation: &str,
        ops: &[BatchOp],
        write_options: *const L::WriteOptions,
    ) -> Result<()> {
        // SAFETY: creating a batch has no preconditions; destroyed below.
        let raw = unsafe { L::writebatch_create() };
        for op in ops {
            // SAFETY: `raw` is live; keys and values are valid for their lengths and copied.
            unsafe {
                match op {
                    BatchOp::Put { key, value } => L::writebatch_put(
                        raw,
                        key.as_ptr().cast(),
                        key.len(),
                        value.as_ptr().cast(),
                        value.len(),
                    ),
                    BatchOp::Delete { key } => {
                        L::writebatch_delete(raw, key.as_ptr().cast(), key.len());
                    }
                }
            }
        }
        let mut err = ptr::null_mut();
        // SAFETY: `db` and `write_options` are live; the batch is destroyed once after the
        // write.
        unsafe {
            L::write(self.db, write_options, raw, &raw mut err);
            L::writebatch_destroy(raw);
        }
        self.check(operation, err)
    }

    fn raw_get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        debug_assert!(key.len() <= KEY_BYTES_MAX);
        let mut len = 0usize;
        let mut err = ptr::null_mut();
        // SAFETY: `db` and `read_options` are live; `key` is valid for `key.len()` bytes.
        let value = unsafe {
            L::get(
                self.db,
                self.handles.read_options,
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
        // SAFETY: the library returned a `malloc`ed buffer of `len` bytes, which we copy.
        let copy = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), len) }.to_vec();
        // SAFETY: freed once, with the library's allocator.
        unsafe { L::free(value.cast()) };
        Ok(Some(copy))
    }

    fn raw_put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: handles are live; key and value are valid for their lengths.
        unsafe {
            L::put(
                self.db,
                self.handles.write_options,
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
        // SAFETY: handles are live; key is valid for its length.
        unsafe {
            L::delete(
                self.db,
                self.handles.write_options,
                key.as_ptr().cast(),
                key.len(),
                &raw mut err,
            );
        }
        self.check("delete", err)
    }
}

impl<L: LsmLibrary> Backend for LsmStore<L> {
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
        let mut iter = Iter::seek(self, range);
        let mut out = Vec::new();
        while out.len() < limit && iter.valid() {
            let (k, v) = iter.entry();
            if range.is_past_end(&k) {
                break;
            }
            if range.contains(&k) {
                out.push((k, v));
            }
            iter.next();
        }
        iter.status()?;
        Ok(out)
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        let _stripes = self.locks.lock_all(batch.ops().iter().map(BatchOp::key));
        self.write_ops("write batch", batch.ops(), self.handles.write_options)
    }

    fn sync(&self) -> Result<()> {
        L::sync(self)
    }

    fn fill_stats(&self, stats: &mut Stats) {
        L::fill_stats(self, stats);
    }

    fn close(self) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl<L: LsmLibrary> Drop for LsmStore<L> {
    fn drop(&mut self) {
        // SAFETY: `db` is live (non-null since `open`) and closed once; the objects it was
        // opened with are freed afterwards, when the fields are dropped.
        unsafe { L::close(self.db) };
    }
}
