//! Atomic write batches: `lamina_batch_*` build one, `lamina_write_batch` applies it.
//!
//! Each operation is checked as it is added (key and value limits, and the batch limits
//! `BATCH_OPS_MAX` / `BATCH_BYTES_MAX`), so a refused operation leaves the batch as it was
//! and a batch that was built always passes `WriteBatch::validate`.

use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use lamina_facade::limits::{BATCH_BYTES_MAX, BATCH_OPS_MAX};
use lamina_facade::{Error, InvalidArgument, WriteBatch};

use crate::args;
use crate::call::guarded;
use crate::db::{DbHandle, handle};
use crate::last_error::Scope;
use crate::status::{Failure, LAMINA_ERROR, LAMINA_OK};

/// `lamina_batch`. A mutex so that a batch shared by mistake stays memory-safe.
#[derive(Debug, Default)]
pub struct BatchHandle {
    batch: Mutex<WriteBatch>,
}

/// Borrows the batch behind `batch`.
///
/// # Safety
/// `batch`, if non-NULL, must come from `lamina_batch_create` and not have been destroyed.
unsafe fn batch_ref<'a>(batch: *const BatchHandle) -> Result<&'a BatchHandle, Failure> {
    // SAFETY: by the contract, a non-NULL `batch` points to a live `BatchHandle`.
    unsafe { batch.as_ref() }.ok_or_else(|| Failure::invalid("batch is NULL"))
}

impl BatchHandle {
    /// Adds an operation of `key_bytes + value_bytes` payload bytes if the batch limits allow.
    fn add(
        &self,
        payload_bytes: usize,
        add: impl FnOnce(&mut WriteBatch),
    ) -> Result<c_int, Failure> {
        let mut batch = self.batch.lock().map_err(|_| Failure {
            status: LAMINA_ERROR,
            message: "the batch is unusable after an internal error; destroy it".to_owned(),
        })?;
        let (ops, bytes) = (batch.len() + 1, batch.payload_bytes() + payload_bytes);
        if ops > BATCH_OPS_MAX || bytes > BATCH_BYTES_MAX {
            let error = InvalidArgument::BatchTooLarge {
                ops,
                bytes,
                ops_max: BATCH_OPS_MAX,
                bytes_max: BATCH_BYTES_MAX,
            };
            return Err(Error::from(error).into());
        }
        add(&mut batch);
        assert_eq!(batch.len(), ops);
        Ok(LAMINA_OK)
    }
}

/// `int lamina_batch_create(lamina_batch **out)`.
///
/// # Safety
/// `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_batch_create(out: *mut *mut BatchHandle) -> c_int {
    guarded(Scope::NONE, || {
        if out.is_null() {
            return Err(Failure::invalid("out is NULL"));
        }
        let batch = Box::into_raw(Box::new(BatchHandle::default()));
        // SAFETY: non-NULL and writable by the contract.
        unsafe { out.write(batch) };
        Ok(LAMINA_OK)
    })
}

/// `int lamina_batch_put(lamina_batch *batch, const void *key, size_t key_len,
/// const void *value, size_t value_len)`.
///
/// # Safety
/// `batch` NULL or live; `key`/`value` NULL or readable for their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_batch_put(
    batch: *const BatchHandle,
    key: *const c_void,
    key_len: usize,
    value: *const c_void,
    value_len: usize,
) -> c_int {
    guarded(Scope::NONE, || {
        // SAFETY: each pointer is covered by this function's contract.
        let (batch, key, value) = unsafe {
            (
                batch_ref(batch)?,
                args::key("key", key, key_len)?,
                args::value("value", value, value_len)?,
            )
        };
        batch.add(key.len() + value.len(), |b| {
            b.put(key, value);
        })
    })
}

/// `int lamina_batch_delete(lamina_batch *batch, const void *key, size_t key_len)`.
///
/// # Safety
/// `batch` NULL or live; `key` NULL or readable for `key_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_batch_delete(
    batch: *const BatchHandle,
    key: *const c_void,
    key_len: usize,
) -> c_int {
    guarded(Scope::NONE, || {
        // SAFETY: each pointer is covered by this function's contract.
        let (batch, key) = unsafe { (batch_ref(batch)?, args::key("key", key, key_len)?) };
        batch.add(key.len(), |b| {
            b.delete(key);
        })
    })
}

/// `size_t lamina_batch_count(const lamina_batch *batch)`: operations in the batch (0 for
/// NULL).
///
/// # Safety
/// `batch` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_batch_count(batch: *const BatchHandle) -> usize {
    let count = std::panic::catch_unwind(|| {
        // SAFETY: covered by this function's contract.
        let batch = unsafe { batch.as_ref() }?;
        batch.batch.lock().ok().map(|b| b.len())
    });
    count.ok().flatten().unwrap_or(0)
}

/// `void lamina_batch_clear(lamina_batch *batch)`: removes every operation; NULL is a no-op.
///
/// # Safety
/// `batch` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_batch_clear(batch: *const BatchHandle) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: covered by this function's contract.
        if let Some(batch) = unsafe { batch.as_ref() } {
            // A poisoned batch is replaced too: clearing makes it consistent again.
            let mut guard = batch.batch.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *guard = WriteBatch::new();
            batch.batch.clear_poison();
        }
    });
}

/// `void lamina_batch_destroy(lamina_batch *batch)`: frees the batch; NULL is a no-op.
///
/// # Safety
/// `batch` NULL or live and unused by other threads; dangling after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_batch_destroy(batch: *mut BatchHandle) {
    if batch.is_null() {
        return;
    }
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: a live batch from `lamina_batch_create` (`Box::into_raw`), given up by the
        // caller.
        drop(unsafe { Box::from_raw(batch) });
    }));
}

/// `int lamina_write_batch(lamina_db *db, const lamina_batch *batch)`: applies every
/// operation, in order, atomically. The batch is left as it was (clear or destroy it).
///
/// # Safety
/// `db` NULL or live; `batch` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_write_batch(
    db: *const DbHandle,
    batch: *const BatchHandle,
) -> c_int {
    guarded(Scope::of(db), || {
        // SAFETY: each pointer is covered by this function's contract.
        let (handle, batch) = unsafe { (handle(db)?, batch_ref(batch)?) };
        let batch = batch.batch.lock().map_err(|_| Failure {
            status: LAMINA_ERROR,
            message: "the batch is unusable after an internal error; clear or destroy it"
                .to_owned(),
        })?;
        handle.db.write_batch(&batch)?;
        Ok(LAMINA_OK)
    })
}

#[cfg(test)]
mod tests {
    use std::ptr::null_mut;

    use super::*;
    use crate::status::LAMINA_INVALID_ARGUMENT;

    #[test]
    fn operations_over_the_batch_limits_are_refused_and_change_nothing() {
        let mut batch = null_mut();
        // SAFETY: `batch` is writable; the batch is live until destroyed at the end.
        unsafe {
            assert_eq!(lamina_batch_create(&raw mut batch), LAMINA_OK);
            let value = vec![0u8; 4096];
            let key = [b'k'; 1024];
            let per_op = key.len() + value.len();
            for _ in 0..BATCH_BYTES_MAX / per_op {
                let status =
                    lamina_batch_put(batch, key.as_ptr().cast(), 1024, value.as_ptr().cast(), 4096);
                assert_eq!(status, LAMINA_OK);
            }
            let count = lamina_batch_count(batch);
            let status =
                lamina_batch_put(batch, key.as_ptr().cast(), 1024, value.as_ptr().cast(), 4096);
            assert_eq!(status, LAMINA_INVALID_ARGUMENT);
            assert_eq!(lamina_batch_count(batch), count);
            lamina_batch_clear(batch);
            assert_eq!(lamina_batch_count(batch), 0);
            assert_eq!(lamina_batch_delete(batch, b"k".as_ptr().cast(), 1), LAMINA_OK);
            assert_eq!(lamina_batch_count(batch), 1);
            // The empty key is a key.
            assert_eq!(lamina_batch_delete(batch, b"".as_ptr().cast(), 0), LAMINA_OK);
            assert_eq!(lamina_batch_count(batch), 2);
            lamina_batch_destroy(batch);
            assert_eq!(lamina_batch_count(std::ptr::null()), 0);
        }
    }
}
