//! Declarations of `csrc/wt_shim.c`, the plain-function shim over WiredTiger's
//! function-pointer handles and variadic cursor accessors, and the `wiredtiger.h` return
//! codes the wrapper needs.

use std::ffi::{c_char, c_int, c_void};

use crate::common::opaque;

opaque!(WtConnection, WtSession, WtCursor);

/// The transaction lost a write-write conflict (or must give way); roll back and retry.
pub(crate) const WT_ROLLBACK: c_int = -31800;
pub(crate) const WT_NOTFOUND: c_int = -31803;
pub(crate) const WT_PREPARE_CONFLICT: c_int = -31808;

unsafe extern "C" {
    pub(crate) fn lp_wt_open(
        home: *const c_char,
        config: *const c_char,
        conn: *mut *mut WtConnection,
    ) -> c_int;
    /// Closes every session of the connection too (with a final checkpoint).
    pub(crate) fn lp_wt_conn_close(conn: *mut WtConnection, config: *const c_char) -> c_int;
    pub(crate) fn lp_wt_open_session(
        conn: *mut WtConnection,
        session: *mut *mut WtSession,
    ) -> c_int;
    pub(crate) fn lp_wt_session_close(session: *mut WtSession) -> c_int;
    pub(crate) fn lp_wt_create(
        session: *mut WtSession,
        uri: *const c_char,
        config: *const c_char,
    ) -> c_int;
    pub(crate) fn lp_wt_open_cursor(
        session: *mut WtSession,
        uri: *const c_char,
        config: *const c_char,
        cursor: *mut *mut WtCursor,
    ) -> c_int;
    pub(crate) fn lp_wt_begin(session: *mut WtSession, config: *const c_char) -> c_int;
    pub(crate) fn lp_wt_commit(session: *mut WtSession, config: *const c_char) -> c_int;
    pub(crate) fn lp_wt_rollback(session: *mut WtSession) -> c_int;
    pub(crate) fn lp_wt_log_flush(session: *mut WtSession, config: *const c_char) -> c_int;
    pub(crate) fn lp_wt_search(
        cursor: *mut WtCursor,
        k: *const c_void,
        klen: usize,
        v: *mut *const c_void,
        vlen: *mut usize,
    ) -> c_int;
    pub(crate) fn lp_wt_insert(
        cursor: *mut WtCursor,
        k: *const c_void,
        klen: usize,
        v: *const c_void,
        vlen: usize,
    ) -> c_int;
    pub(crate) fn lp_wt_remove(cursor: *mut WtCursor, k: *const c_void, klen: usize) -> c_int;
    pub(crate) fn lp_wt_search_near(
        cursor: *mut WtCursor,
        k: *const c_void,
        klen: usize,
        exact: *mut c_int,
    ) -> c_int;
    pub(crate) fn lp_wt_next(cursor: *mut WtCursor) -> c_int;
    pub(crate) fn lp_wt_current(
        cursor: *mut WtCursor,
        k: *mut *const c_void,
        klen: *mut usize,
        v: *mut *const c_void,
        vlen: *mut usize,
    ) -> c_int;
    pub(crate) fn lp_wt_reset(cursor: *mut WtCursor) -> c_int;
    pub(crate) fn lp_wt_strerror(rc: c_int) -> *const c_char;
    /// Copies (NUL-terminated) and clears the calling thread's last detailed error message.
    pub(crate) fn lp_wt_take_error(out: *mut c_char, len: usize);
}
