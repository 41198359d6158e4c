#![allow(non_camel_case_types)] // the C names, so each declaration greps to its header
//! Hand-written declarations of the part of `lmdb.h` (LMDB 0.9.24) the wrapper uses.

use std::ffi::{c_char, c_int, c_uint, c_void};

#[repr(C)]
pub(crate) struct MDB_env {
    _private: [u8; 0],
}

#[repr(C)]
pub(crate) struct MDB_txn {
    _private: [u8; 0],
}

#[repr(C)]
pub(crate) struct MDB_cursor {
    _private: [u8; 0],
}

pub(crate) type MDB_dbi = c_uint;

/// A byte string passed to or returned by LMDB. Returned data points into the map and stays
/// valid until the transaction ends.
#[repr(C)]
pub(crate) struct MDB_val {
    pub(crate) mv_size: usize,
    pub(crate) mv_data: *mut c_void,
}

impl MDB_val {
    /// A value pointing at `bytes` (LMDB only reads input values).
    pub(crate) fn of(bytes: &[u8]) -> Self {
        MDB_val { mv_size: bytes.len(), mv_data: bytes.as_ptr().cast_mut().cast() }
    }

    pub(crate) fn empty() -> Self {
        MDB_val { mv_size: 0, mv_data: std::ptr::null_mut() }
    }
}

#[repr(C)]
#[derive(Default)]
#[allow(clippy::struct_field_names)] // the C field names
pub(crate) struct MDB_stat {
    pub(crate) ms_psize: c_uint,
    pub(crate) ms_depth: c_uint,
    pub(crate) ms_branch_pages: usize,
    pub(crate) ms_leaf_pages: usize,
    pub(crate) ms_overflow_pages: usize,
    pub(crate) ms_entries: usize,
}

pub(crate) const MDB_NOSYNC: c_uint = 0x10000;
pub(crate) const MDB_RDONLY: c_uint = 0x20000;
pub(crate) const MDB_NOTLS: c_uint = 0x20_0000;
pub(crate) const MDB_NOTFOUND: c_int = -30798;

/// `MDB_cursor_op` values.
pub(crate) const MDB_NEXT: c_int = 8;
pub(crate) const MDB_SET_RANGE: c_int = 17;
pub(crate) const MDB_FIRST: c_int = 0;

unsafe extern "C" {
    pub(crate) fn mdb_env_create(env: *mut *mut MDB_env) -> c_int;
    pub(crate) fn mdb_env_open(
        env: *mut MDB_env,
        path: *const c_char,
        flags: c_uint,
        mode: libc::mode_t,
    ) -> c_int;
    pub(crate) fn mdb_env_close(env: *mut MDB_env);
    pub(crate) fn mdb_env_set_mapsize(env: *mut MDB_env, size: usize) -> c_int;
    pub(crate) fn mdb_env_set_maxreaders(env: *mut MDB_env, readers: c_uint) -> c_int;
    pub(crate) fn mdb_env_sync(env: *mut MDB_env, force: c_int) -> c_int;
    pub(crate) fn mdb_env_stat(env: *mut MDB_env, stat: *mut MDB_stat) -> c_int;
    pub(crate) fn mdb_env_get_maxkeysize(env: *mut MDB_env) -> c_int;

    pub(crate) fn mdb_txn_begin(
        env: *mut MDB_env,
        parent: *mut MDB_txn,
        flags: c_uint,
        txn: *mut *mut MDB_txn,
    ) -> c_int;
    pub(crate) fn mdb_txn_commit(txn: *mut MDB_txn) -> c_int;
    pub(crate) fn mdb_txn_abort(txn: *mut MDB_txn);
    pub(crate) fn mdb_dbi_open(
        txn: *mut MDB_txn,
        name: *const c_char,
        flags: c_uint,
        dbi: *mut MDB_dbi,
    ) -> c_int;

    pub(crate) fn mdb_get(
        txn: *mut MDB_txn,
        dbi: MDB_dbi,
        key: *mut MDB_val,
        data: *mut MDB_val,
    ) -> c_int;
    pub(crate) fn mdb_put(
        txn: *mut MDB_txn,
        dbi: MDB_dbi,
        key: *mut MDB_val,
        data: *mut MDB_val,
        flags: c_uint,
    ) -> c_int;
    pub(crate) fn mdb_del(
        txn: *mut MDB_txn,
        dbi: MDB_dbi,
        key: *mut MDB_val,
        data: *mut MDB_val,
    ) -> c_int;

    pub(crate) fn mdb_cursor_open(
        txn: *mut MDB_txn,
        dbi: MDB_dbi,
        cursor: *mut *mut MDB_cursor,
    ) -> c_int;
    pub(crate) fn mdb_cursor_close(cursor: *mut MDB_cursor);
    pub(crate) fn mdb_cursor_get(
        cursor: *mut MDB_cursor,
        key: *mut MDB_val,
        data: *mut MDB_val,
        op: c_int,
    ) -> c_int;

    pub(crate) fn mdb_strerror(err: c_int) -> *const c_char;
}
