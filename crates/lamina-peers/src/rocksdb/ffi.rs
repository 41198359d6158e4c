#![allow(non_camel_case_types)] // the C names, so each declaration greps to its header
//! Hand-written declarations of the part of `rocksdb/c.h` (RocksDB 7.8) the wrapper uses:
//! the entry points shared with LevelDB through [`lsm_c_api!`], and RocksDB's own below.

use std::ffi::{c_char, c_double, c_int, c_uchar};

use crate::common::opaque;
use crate::lsm::lsm_c_api;

lsm_c_api!(
    RocksDbC,
    "rocksdb",
    [
        rocksdb_t,
        rocksdb_options_t,
        rocksdb_readoptions_t,
        rocksdb_writeoptions_t,
        rocksdb_writebatch_t,
        rocksdb_iterator_t,
        rocksdb_cache_t,
    ]
);

opaque!(rocksdb_block_based_table_options_t, rocksdb_filterpolicy_t);

unsafe extern "C" {
    pub(crate) fn rocksdb_options_set_block_based_table_factory(
        options: *mut rocksdb_options_t,
        table_options: *mut rocksdb_block_based_table_options_t,
    );

    pub(crate) fn rocksdb_block_based_options_create() -> *mut rocksdb_block_based_table_options_t;
    pub(crate) fn rocksdb_block_based_options_destroy(
        options: *mut rocksdb_block_based_table_options_t,
    );
    /// Takes ownership of `policy`.
    pub(crate) fn rocksdb_block_based_options_set_filter_policy(
        options: *mut rocksdb_block_based_table_options_t,
        policy: *mut rocksdb_filterpolicy_t,
    );
    /// Shares `cache` (a reference count); the caller still destroys its handle.
    pub(crate) fn rocksdb_block_based_options_set_block_cache(
        options: *mut rocksdb_block_based_table_options_t,
        cache: *mut rocksdb_cache_t,
    );
    pub(crate) fn rocksdb_filterpolicy_create_bloom(
        bits_per_key: c_double,
    ) -> *mut rocksdb_filterpolicy_t;

    pub(crate) fn rocksdb_flush_wal(db: *mut rocksdb_t, sync: c_uchar, errptr: *mut *mut c_char);
    /// 0 on success.
    pub(crate) fn rocksdb_property_int(
        db: *mut rocksdb_t,
        propname: *const c_char,
        out_val: *mut u64,
    ) -> c_int;
}
