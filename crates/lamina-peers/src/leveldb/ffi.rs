#![allow(non_camel_case_types)] // the C names, so each declaration greps to its header
//! Hand-written declarations of the part of `leveldb/c.h` (LevelDB 1.23) the wrapper uses:
//! the entry points shared with RocksDB through [`lsm_c_api!`], and LevelDB's own below.
//! Unlike RocksDB, the options keep raw pointers to the cache and the filter policy, which
//! must outlive the database.

use std::ffi::{c_char, c_int};

use crate::common::opaque;
use crate::lsm::lsm_c_api;

lsm_c_api!(
    LevelDbC,
    "leveldb",
    [
        leveldb_t,
        leveldb_options_t,
        leveldb_readoptions_t,
        leveldb_writeoptions_t,
        leveldb_writebatch_t,
        leveldb_iterator_t,
        leveldb_cache_t,
    ]
);

opaque!(leveldb_filterpolicy_t);

unsafe extern "C" {
    pub(crate) fn leveldb_options_set_cache(
        options: *mut leveldb_options_t,
        cache: *mut leveldb_cache_t,
    );
    pub(crate) fn leveldb_options_set_filter_policy(
        options: *mut leveldb_options_t,
        policy: *mut leveldb_filterpolicy_t,
    );
    pub(crate) fn leveldb_filterpolicy_create_bloom(
        bits_per_key: c_int,
    ) -> *mut leveldb_filterpolicy_t;
    pub(crate) fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t);

    /// Returns a `malloc`ed NUL-terminated string or null for an unknown property.
    pub(crate) fn leveldb_property_value(
        db: *mut leveldb_t,
        propname: *const c_char,
    ) -> *mut c_char;
}
