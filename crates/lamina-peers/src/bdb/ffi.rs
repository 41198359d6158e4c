//! Declarations of `csrc/bdb_shim.c`, the plain-function shim over Berkeley DB's
//! function-pointer handle methods, and the `db.h` constants the wrapper needs.

use std::ffi::{c_char, c_int, c_void};

use crate::common::opaque;

opaque!(DbEnv, Db, DbTxn, Dbc);

pub(crate) const DB_NOTFOUND: c_int = -30988;
pub(crate) const DB_LOCK_DEADLOCK: c_int = -30993;
pub(crate) const DB_LOCK_NOTGRANTED: c_int = -30992;
/// `DB->get` flag: take a write lock on read (for read-modify-write in a transaction).
pub(crate) const DB_RMW: u32 = 0x0000_2000;
/// Cursor flag: release read locks as the cursor moves (degree 2 isolation).
pub(crate) const DB_READ_COMMITTED: u32 = 0x0000_0400;
/// Cursor operations.
pub(crate) const DB_FIRST: u32 = 7;
pub(crate) const DB_NEXT: u32 = 16;
pub(crate) const DB_SET_RANGE: u32 = 27;

unsafe extern "C" {
    pub(crate) fn lp_bdb_open(
        dir: *const c_char,
        cache_bytes: u64,
        txn_nosync: c_int,
        env: *mut *mut DbEnv,
        db: *mut *mut Db,
    ) -> c_int;
    /// Checkpoints, then closes the database and the environment (both freed whatever the
    /// result).
    pub(crate) fn lp_bdb_close(env: *mut DbEnv, db: *mut Db) -> c_int;
    pub(crate) fn lp_bdb_get(
        db: *mut Db,
        txn: *mut DbTxn,
        k: *const c_void,
        klen: usize,
        v: *mut *mut c_void,
        vlen: *mut usize,
        flags: u32,
    ) -> c_int;
    pub(crate) fn lp_bdb_put(
        db: *mut Db,
        txn: *mut DbTxn,
        k: *const c_void,
        klen: usize,
        v: *const c_void,
        vlen: usize,
    ) -> c_int;
    pub(crate) fn lp_bdb_del(db: *mut Db, txn: *mut DbTxn, k: *const c_void, klen: usize) -> c_int;
    pub(crate) fn lp_bdb_txn_begin(env: *mut DbEnv, txn: *mut *mut DbTxn) -> c_int;
    /// Frees the transaction whatever the result.
    pub(crate) fn lp_bdb_txn_commit(txn: *mut DbTxn) -> c_int;
    /// Frees the transaction whatever the result.
    pub(crate) fn lp_bdb_txn_abort(txn: *mut DbTxn) -> c_int;
    pub(crate) fn lp_bdb_cursor_open(
        db: *mut Db,
        txn: *mut DbTxn,
        cursor: *mut *mut Dbc,
        flags: u32,
    ) -> c_int;
    pub(crate) fn lp_bdb_cursor_get(
        cursor: *mut Dbc,
        seek: *const c_void,
        seeklen: usize,
        k: *mut *mut c_void,
        klen: *mut usize,
        v: *mut *mut c_void,
        vlen: *mut usize,
        op: u32,
    ) -> c_int;
    pub(crate) fn lp_bdb_cursor_close(cursor: *mut Dbc) -> c_int;
    pub(crate) fn lp_bdb_log_flush(env: *mut DbEnv) -> c_int;
    pub(crate) fn lp_bdb_stats(env: *mut DbEnv, db: *mut Db, out: *mut u64) -> c_int;
    pub(crate) fn lp_bdb_strerror(rc: c_int) -> *const c_char;
    /// Copies (NUL-terminated) and clears the calling thread's last detailed error message.
    pub(crate) fn lp_bdb_take_error(out: *mut c_char, len: usize);
}
