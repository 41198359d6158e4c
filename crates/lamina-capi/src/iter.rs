//! Range iterators: `lamina_iter_open` / `lamina_iter_open_hinted` / `lamina_iter_next` /
//! `lamina_iter_close`.
//!
//! An iterator fetches the range in pages with `Db::scan`, resuming after the last key of
//! each page. Without a hint every page is [`PAGE_ENTRIES`] entries; with a hint of `n`
//! entries the first page is `n` (so a 1-row scan reads one entry, not 128) and each later
//! page doubles, up to [`PAGE_ENTRIES`], so a wrong hint costs a few more scan calls, never
//! more memory. It has the scan guarantee of the Rust API (every pair
//! returned was current at some instant of the iteration; a key present and unmodified
//! throughout is returned) and bounded memory. The entry at the front of the page is removed
//! only once it has been copied out, which is what keeps the iterator in place when a buffer
//! is too small.

use std::collections::VecDeque;
use std::ffi::{c_int, c_void};
use std::ops::Bound;
use std::sync::{Arc, Mutex};

use lamina_facade::{Db, Entry, KeyRange};

use crate::args::{self, OutBuf};
use crate::call::guarded;
use crate::db::{DbHandle, handle};
use crate::last_error::Scope;
use crate::status::{
    Failure, LAMINA_ERROR, LAMINA_KEY_BUFFER_TOO_SMALL, LAMINA_NOT_FOUND, LAMINA_OK,
    LAMINA_VALUE_BUFFER_TOO_SMALL,
};

/// Most entries fetched per scan call (and the page size without a hint): at most
/// 128 x (1 KiB key + 4 KiB value) = 640 KiB held.
pub(crate) const PAGE_ENTRIES: usize = 128;

/// `lamina_iter`.
#[derive(Debug)]
pub struct IterHandle {
    db: Arc<Db>,
    /// Where the iterator's failures are recorded: the database handle it came from.
    scope: Scope,
    /// A mutex so that concurrent use from several threads is safe (if pointless).
    state: Mutex<IterState>,
}

#[derive(Debug)]
struct IterState {
    /// What is left to fetch after `page`; `None` once the last page has been fetched.
    rest: Option<KeyRange>,
    /// Fetched entries not yet returned; the front one is the next.
    page: VecDeque<Entry>,
    /// Entries the next fetch asks for: 1..=PAGE_ENTRIES, doubling after each fetch.
    page_entries: usize,
    /// Entries fetched so far (what the scans read), for tests of the hint.
    #[cfg(test)]
    fetched: u64,
}

impl IterState {
    /// The next entry, fetching a page if needed; `None` at the end of the range.
    fn peek(&mut self, db: &Db) -> Result<Option<&Entry>, Failure> {
        if self.page.is_empty()
            && let Some(range) = self.rest.take()
        {
            let limit = self.page_entries;
            assert!((1..=PAGE_ENTRIES).contains(&limit), "page of {limit} entries");
            let page = db.scan(&range, limit)?;
            assert!(page.len() <= limit, "scan returned more than its limit");
            if page.len() == limit {
                self.rest = Some(range.resume_after(&page[limit - 1].0));
            }
            #[cfg(test)]
            {
                self.fetched += page.len() as u64;
            }
            self.page_entries = (limit * 2).min(PAGE_ENTRIES);
            self.page = page.into();
        }
        Ok(self.page.front())
    }
}

/// `int lamina_iter_open(lamina_db *db, const void *start, size_t start_len, const void *end,
/// size_t end_len, lamina_iter **iter)`: keys in `[start, end)`; a NULL end is unbounded.
/// The same as `lamina_iter_open_hinted` with `entries_hint` 0.
///
/// # Safety
/// `db` NULL or live; `start`/`end` NULL or readable for their lengths; `iter` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_iter_open(
    db: *const DbHandle,
    start: *const c_void,
    start_len: usize,
    end: *const c_void,
    end_len: usize,
    iter: *mut *mut IterHandle,
) -> c_int {
    // SAFETY: the same contract.
    unsafe { lamina_iter_open_hinted(db, start, start_len, end, end_len, 0, iter) }
}

/// `int lamina_iter_open_hinted(lamina_db *db, const void *start, size_t start_len,
/// const void *end, size_t end_len, size_t entries_hint, lamina_iter **iter)`: keys in
/// `[start, end)` (a NULL end is unbounded), fetched in pages of `entries_hint` entries
/// first (0: no hint, pages of [`PAGE_ENTRIES`]; larger hints are capped at it), doubling.
///
/// # Safety
/// `db` NULL or live; `start`/`end` NULL or readable for their lengths; `iter` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_iter_open_hinted(
    db: *const DbHandle,
    start: *const c_void,
    start_len: usize,
    end: *const c_void,
    end_len: usize,
    entries_hint: usize,
    iter: *mut *mut IterHandle,
) -> c_int {
    guarded(Scope::of(db), || {
        if iter.is_null() {
            return Err(Failure::invalid("iter is NULL"));
        }
        // SAFETY: non-NULL and writable by the contract; cleared so failures leave NULL.
        unsafe { iter.write(std::ptr::null_mut()) };
        // SAFETY: each pointer is covered by this function's contract.
        let (handle, start, end) = unsafe {
            (
                handle(db)?,
                args::bound("start", start, start_len)?,
                args::bound("end", end, end_len)?,
            )
        };
        let range = KeyRange {
            start: start.map_or(Bound::Unbounded, |s| Bound::Included(s.to_vec())),
            end: end.map_or(Bound::Unbounded, |e| Bound::Excluded(e.to_vec())),
        };
        let page_entries =
            if entries_hint == 0 { PAGE_ENTRIES } else { entries_hint.min(PAGE_ENTRIES) };
        let state = IterState {
            rest: Some(range),
            page: VecDeque::new(),
            page_entries,
            #[cfg(test)]
            fetched: 0,
        };
        let it = IterHandle {
            db: Arc::clone(&handle.db),
            scope: Scope::of(db),
            state: Mutex::new(state),
        };
        // SAFETY: checked non-NULL and writable above.
        unsafe { iter.write(Box::into_raw(Box::new(it))) };
        Ok(LAMINA_OK)
    })
}

/// Entries the iterator's scans have fetched so far (tests of the page-size hint).
#[cfg(test)]
pub(crate) fn fetched(iter: &IterHandle) -> u64 {
    iter.state.lock().unwrap().fetched
}

/// `int lamina_iter_next(lamina_iter *iter, void *key_buf, size_t *key_len, void *value_buf,
/// size_t *value_len)`.
///
/// # Safety
/// `iter` NULL or live; `key_len`/`value_len` NULL or valid `size_t`s; each buffer NULL or
/// writable for the capacity its length slot holds.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_iter_next(
    iter: *const IterHandle,
    key_buf: *mut c_void,
    key_len: *mut usize,
    value_buf: *mut c_void,
    value_len: *mut usize,
) -> c_int {
    // SAFETY: `iter` is NULL or live by the contract; only `scope` is read here.
    let scope = unsafe { iter.as_ref() }.map_or(Scope::NONE, |it| it.scope);
    guarded(scope, || {
        // SAFETY: each pointer is covered by this function's contract.
        let (it, key_out, value_out) = unsafe {
            (
                iter.as_ref().ok_or_else(|| Failure::invalid("iter is NULL"))?,
                OutBuf::new("key_buf", key_buf, "key_len", key_len)?,
                OutBuf::new("value_buf", value_buf, "value_len", value_len)?,
            )
        };
        let mut state = it.state.lock().map_err(|_| Failure {
            status: LAMINA_ERROR,
            message: "the iterator is unusable after an internal error; close it".to_owned(),
        })?;
        let Some((key, value)) = state.peek(&it.db)? else {
            key_out.set_len(0);
            value_out.set_len(0);
            return Ok(LAMINA_NOT_FOUND);
        };
        if !key_out.fits(key) || !value_out.fits(value) {
            // Both lengths, so one retry with both buffers grown suffices; nothing copied and
            // the entry stays at the front.
            key_out.set_len(key.len());
            value_out.set_len(value.len());
            return Ok(if key_out.fits(key) {
                LAMINA_VALUE_BUFFER_TOO_SMALL
            } else {
                LAMINA_KEY_BUFFER_TOO_SMALL
            });
        }
        key_out.write(key);
        value_out.write(value);
        state.page.pop_front();
        Ok(LAMINA_OK)
    })
}

/// `void lamina_iter_close(lamina_iter *iter)`: frees the iterator; NULL is a no-op.
///
/// # Safety
/// `iter` must be NULL or a live iterator no other thread is using, and is dangling after.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lamina_iter_close(iter: *mut IterHandle) {
    if iter.is_null() {
        return;
    }
    // Dropping cannot fail; should a destructor panic, the panic is swallowed here.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: a live iterator from `lamina_iter_open` (`Box::into_raw`), given up by the
        // caller.
        drop(unsafe { Box::from_raw(iter) });
    }));
}
