#![allow(non_camel_case_types)] // the C names, so each declaration greps to its header
//! Hand-written declarations of the part of `leveldb/c.h` (LevelDB 1.23) the wrapper uses.
//! Handles are opaque; every `errptr` out-parameter receives a `malloc`ed message freed
//! with `leveldb_free`. Unlike RocksDB, the options keep raw pointers to the cache and the
//! filter policy, which must outlive the database.

use std::ffi::{c_char, c_int, c_void};

macro_rules! opaque {
    ($($name:ident),* $(,)?) => {
        $(
            #[repr(C)]
            pub(crate) struct $name {
                _private: [u8; 0],
            }
        )*
    };
}

opaque!(
    leveldb_t,
    leveldb_options_t,
    leveldb_readoptions_t,
    leveldb_writeoptions_t,
    leveldb_writebatch_t,
    leveldb_iterator_t,
    leveldb_cache_t,
    leveldb_filterpolicy_t,
);

unsafe extern "C" {
    pub(crate) fn leveldb_options_create() -> *mut leveldb_options_t;
    pub(crate) fn leveldb_options_destroy(options: *mut leveldb_options_t);
    pub(crate) fn leveldb_options_set_create_if_missing(options: *mut leveldb_options_t, v: u8);
    pub(crate) fn leveldb_options_set_write_buffer_size(options: *mut leveldb_options_t, s: usize);
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
    pub(crate) fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t;
    pub(crate) fn leveldb_cache_destroy(cache: *mut leveldb_cache_t);

    pub(crate) fn leveldb_open(
        options: *const leveldb_options_t,
        name: *const c_char,
        errptr: *mut *mut c_char,
    ) -> *mut leveldb_t;
    pub(crate) fn leveldb_close(db: *mut leveldb_t);

    pub(crate) fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t;
    pub(crate) fn leveldb_readoptions_destroy(options: *mut leveldb_readoptions_t);
    pub(crate) fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t;
    pub(crate) fn leveldb_writeoptions_destroy(options: *mut leveldb_writeoptions_t);
    pub(crate) fn leveldb_writeoptions_set_sync(options: *mut leveldb_writeoptions_t, v: u8);

    pub(crate) fn leveldb_put(
        db: *mut leveldb_t,
        options: *const leveldb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        errptr: *mut *mut c_char,
    );
    pub(crate) fn leveldb_delete(
        db: *mut leveldb_t,
        options: *const leveldb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    );
    pub(crate) fn leveldb_write(
        db: *mut leveldb_t,
        options: *const leveldb_writeoptions_t,
        batch: *mut leveldb_writebatch_t,
        errptr: *mut *mut c_char,
    );
    /// Returns a `malloc`ed value (free with `leveldb_free`) or null when absent.
    pub(crate) fn leveldb_get(
        db: *mut leveldb_t,
        options: *const leveldb_readoptions_t,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;
    /// Returns a `malloc`ed NUL-terminated string or null for an unknown property.
    pub(crate) fn leveldb_property_value(
        db: *mut leveldb_t,
        propname: *const c_char,
    ) -> *mut c_char;

    pub(crate) fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t;
    pub(crate) fn leveldb_writebatch_destroy(batch: *mut leveldb_writebatch_t);
    pub(crate) fn leveldb_writebatch_put(
        batch: *mut leveldb_writebatch_t,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    pub(crate) fn leveldb_writebatch_delete(
        batch: *mut leveldb_writebatch_t,
        key: *const c_char,
        klen: usize,
    );

    pub(crate) fn leveldb_create_iterator(
        db: *mut leveldb_t,
        options: *const leveldb_readoptions_t,
    ) -> *mut leveldb_iterator_t;
    pub(crate) fn leveldb_iter_destroy(iter: *mut leveldb_iterator_t);
    pub(crate) fn leveldb_iter_valid(iter: *const leveldb_iterator_t) -> u8;
    pub(crate) fn leveldb_iter_seek_to_first(iter: *mut leveldb_iterator_t);
    pub(crate) fn leveldb_iter_seek(iter: *mut leveldb_iterator_t, k: *const c_char, klen: usize);
    pub(crate) fn leveldb_iter_next(iter: *mut leveldb_iterator_t);
    pub(crate) fn leveldb_iter_key(
        iter: *const leveldb_iterator_t,
        klen: *mut usize,
    ) -> *const c_char;
    pub(crate) fn leveldb_iter_value(
        iter: *const leveldb_iterator_t,
        vlen: *mut usize,
    ) -> *const c_char;
    pub(crate) fn leveldb_iter_get_error(iter: *const leveldb_iterator_t, errptr: *mut *mut c_char);

    pub(crate) fn leveldb_free(ptr: *mut c_void);
}
