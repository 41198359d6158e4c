//! The database handle: open, close and the single-key operations.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::path::PathBuf;
use std::sync::Arc;

use lamina_facade::{CasOutcome, Db};

use crate::args::{self, OutBuf};
use crate::call::guarded;
use crate::last_error::{self, Scope};
use crate::options::LaminaOptions;
use crate::status::{
    Failure, LAMINA_COMPARE_FAILED, LAMINA_NOT_FOUND, LAMINA_OK, LAMINA_VALUE_BUFFER_TOO_SMALL,
};

/// `lamina_db`: an open database. Shared by reference between threads (`Db` is
/// `Send + Sync`); the `Arc` lets iterators keep the engine alive past `lamina_close`, so an
/// iterator left open cannot touch freed memory.
#[derive(Debug)]
pub struct DbHandle {
    pub(crate) db: Arc<Db>,
}

/// Borrows the handle behind `db`.
///
/// # Safety
/// `db`, if non-NULL, must come from `lamina_open` and not have been passed to
/// `lamina_close`.
pub(crate) unsafe fn handle<'a>(db: *const DbHandle) -> Result<&'a DbHandle, Failure> {
    // SAFETY: by the contract, a non-NULL `db` points to a live `DbHandle`.
    unsafe { db.as_ref() }.ok_or_else(|| Failure::invalid("db is NULL"))
}

#[cfg(unix)]
#[allow(clippy::unnecessary_wraps, reason = "the same signature as the non-Unix version")]
fn path_of(dir: &CStr) -> Result<PathBuf, Failure> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())))
}

#[cfg(not(unix))]
fn path_of(dir: &CStr) -> Result<PathBuf, Failure> {
    dir.to_str().map(PathBuf::from).map_err(|_| Failure::invalid("dir is not UTF-8"))
}

/// `int lamina_open(const char *dir, const lamina_options *opts, lamina_db **out)`.
///
/// # Safety
/// `dir` must be NULL or NUL-terminated; `opts` NULL or a valid `lamina_options` (its
/// `engine` NULL or NUL-terminated); `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_open(
    dir: *const c_char,
    opts: *const LaminaOptions,
    out: *mut *mut DbHandle,
) -> c_int {
    guarded(Scope::NONE, || {
        if out.is_null() {
            return Err(Failure::invalid("out is NULL"));
        }
        // SAFETY: non-NULL and writable by the contract. Cleared first so that every failure
        // leaves NULL behind.
        unsafe { out.write(std::ptr::null_mut()) };
        if dir.is_null() {
            return Err(Failure::invalid("dir is NULL"));
        }
        // SAFETY: non-NULL and NUL-terminated by the contract.
        let path = path_of(unsafe { CStr::from_ptr(dir) })?;
        if path.as_os_str().is_empty() {
            return Err(Failure::invalid("dir is the empty string"));
        }
        // SAFETY: `opts` is NULL or valid by the contract.
        let opts = unsafe { opts.as_ref() }.copied().unwrap_or_else(LaminaOptions::defaults);
        // SAFETY: `opts.engine` is NULL or NUL-terminated by the contract.
        let options = unsafe { opts.to_rust() }?;
        let db = Db::open(&path, options)?;
        let handle = Box::into_raw(Box::new(DbHandle { db: Arc::new(db) }));
        // A message a previous handle at this address left on this thread is not this one's.
        last_error::forget(Scope::of(handle));
        // SAFETY: checked non-NULL and writable above.
        unsafe { out.write(handle) };
        Ok(LAMINA_OK)
    })
}

/// `int lamina_close(lamina_db *db)`: flushes and frees the handle; NULL is a no-op. The
/// handle is freed even when the flush fails (its message then under NULL).
///
/// # Safety
/// `db` must be NULL or a live handle that no other thread is using, and is dangling after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_close(db: *mut DbHandle) -> c_int {
    guarded(Scope::NONE, || {
        if db.is_null() {
            return Ok(LAMINA_OK);
        }
        // SAFETY: a live handle from `lamina_open` (`Box::into_raw`), given up by the caller.
        let handle = unsafe { Box::from_raw(db) };
        let result = handle.db.close();
        // Dropping the last `Arc` releases the directory lock (iterators still open keep it).
        drop(handle);
        result?;
        Ok(LAMINA_OK)
    })
}

/// `int lamina_verify(const char *dir, const lamina_options *opts, uint64_t *entries)`:
/// checks the closed database in `dir` without changing it (`Db::verify`); on success stores
/// the number of entries in `*entries` (when not NULL). Failures are described by
/// `lamina_last_error_message(NULL)`.
///
/// # Safety
/// `dir` must be NULL or NUL-terminated; `opts` NULL or a valid `lamina_options`; `entries`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_verify(
    dir: *const c_char,
    opts: *const LaminaOptions,
    entries: *mut u64,
) -> c_int {
    guarded(Scope::NONE, || {
        if dir.is_null() {
            return Err(Failure::invalid("dir is NULL"));
        }
        // SAFETY: non-NULL and NUL-terminated by the contract.
        let path = path_of(unsafe { CStr::from_ptr(dir) })?;
        if path.as_os_str().is_empty() {
            return Err(Failure::invalid("dir is the empty string"));
        }
        // SAFETY: `opts` is NULL or valid by the contract.
        let opts = unsafe { opts.as_ref() }.copied().unwrap_or_else(LaminaOptions::defaults);
        // SAFETY: `opts.engine` is NULL or NUL-terminated by the contract.
        let mut options = unsafe { opts.to_rust() }?;
        options.create_if_missing = false;
        let report = Db::verify(&path, options)?;
        if !entries.is_null() {
            // SAFETY: non-NULL and writable by the contract.
            unsafe { entries.write(report.entries) };
        }
        Ok(LAMINA_OK)
    })
}

/// `int lamina_get(lamina_db *db, const void *key, size_t key_len, void *value_buf,
/// size_t *value_len)`.
///
/// # Safety
/// `db` NULL or live; `key` NULL or `key_len` readable bytes; `value_len` NULL or a valid
/// `size_t`; `value_buf` NULL or `*value_len` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_get(
    db: *const DbHandle,
    key: *const c_void,
    key_len: usize,
    value_buf: *mut c_void,
    value_len: *mut usize,
) -> c_int {
    guarded(Scope::of(db), || {
        // SAFETY: each pointer is covered by this function's contract.
        let (handle, key, out) = unsafe {
            (
                handle(db)?,
                args::key("key", key, key_len)?,
                OutBuf::new("value_buf", value_buf, "value_len", value_len)?,
            )
        };
        match handle.db.get(key)? {
            None => {
                out.set_len(0);
                Ok(LAMINA_NOT_FOUND)
            }
            Some(value) if !out.fits(&value) => {
                out.set_len(value.len());
                Ok(LAMINA_VALUE_BUFFER_TOO_SMALL)
            }
            Some(value) => {
                out.write(&value);
                Ok(LAMINA_OK)
            }
        }
    })
}

/// `int lamina_put(lamina_db *db, const void *key, size_t key_len, const void *value,
/// size_t value_len)`.
///
/// # Safety
/// `db` NULL or live; `key`/`value` NULL or readable for their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_put(
    db: *const DbHandle,
    key: *const c_void,
    key_len: usize,
    value: *const c_void,
    value_len: usize,
) -> c_int {
    guarded(Scope::of(db), || {
        // SAFETY: each pointer is covered by this function's contract.
        let (handle, key, value) = unsafe {
            (handle(db)?, args::key("key", key, key_len)?, args::value("value", value, value_len)?)
        };
        handle.db.put(key, value)?;
        Ok(LAMINA_OK)
    })
}

/// `int lamina_delete(lamina_db *db, const void *key, size_t key_len)`: `LAMINA_NOT_FOUND`
/// if the key did not exist.
///
/// # Safety
/// `db` NULL or live; `key` NULL or readable for `key_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_delete(
    db: *const DbHandle,
    key: *const c_void,
    key_len: usize,
) -> c_int {
    guarded(Scope::of(db), || {
        // SAFETY: each pointer is covered by this function's contract.
        let (handle, key) = unsafe { (handle(db)?, args::key("key", key, key_len)?) };
        Ok(if handle.db.delete(key)? { LAMINA_OK } else { LAMINA_NOT_FOUND })
    })
}

/// `int lamina_compare_and_swap(lamina_db *db, const void *key, size_t key_len,
/// const void *expected, size_t expected_len, const void *new_value, size_t new_len)`.
/// `expected` NULL (length 0): the key must be absent. `new_value` NULL (length 0): delete.
/// A failed swap answers `LAMINA_NOT_FOUND` when the key was absent (so the caller needs no
/// second, non-atomic get to tell) and `LAMINA_COMPARE_FAILED` when it held another value.
///
/// # Safety
/// `db` NULL or live; each buffer NULL or readable for its length.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_compare_and_swap(
    db: *const DbHandle,
    key: *const c_void,
    key_len: usize,
    expected: *const c_void,
    expected_len: usize,
    new_value: *const c_void,
    new_len: usize,
) -> c_int {
    guarded(Scope::of(db), || {
        // SAFETY: each pointer is covered by this function's contract.
        let (handle, key, expected, new) = unsafe {
            (
                handle(db)?,
                args::key("key", key, key_len)?,
                args::optional_value("expected", expected, expected_len)?,
                args::optional_value("new_value", new_value, new_len)?,
            )
        };
        Ok(match handle.db.compare_and_swap(key, expected, new)? {
            CasOutcome::Swapped => LAMINA_OK,
            CasOutcome::Mismatch { current: None } => LAMINA_NOT_FOUND,
            CasOutcome::Mismatch { current: Some(_) } => LAMINA_COMPARE_FAILED,
        })
    })
}

/// `int lamina_sync(lamina_db *db)`: makes every acknowledged write durable.
///
/// # Safety
/// `db` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_sync(db: *const DbHandle) -> c_int {
    guarded(Scope::of(db), || {
        // SAFETY: covered by this function's contract.
        unsafe { handle(db) }?.db.sync()?;
        Ok(LAMINA_OK)
    })
}
