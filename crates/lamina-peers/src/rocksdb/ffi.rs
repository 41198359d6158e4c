#![allow(non_camel_case_types)] // the C names, so each declaration greps to its header
//! Hand-written declarations of the part of `rocksdb/c.h` (RocksDB 7.8) the wrapper uses.
//! Handles are opaque; every `errptr` out-parameter receives a `malloc`ed message freed
//! with `rocksdb_free`.

use std::ffi::{c_char, c_double, c_int, c_uchar, c_void};

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
    rocksdb_t,
    rocksdb_options_t,
    rocksdb_readoptions_t,
    rocksdb_writeoptions_t,
    rocksdb_writebatch_t,
    rocksdb_iterator_t,
    rocksdb_cache_t,
    rocksdb_block_based_table_options_t,
    rocksdb_filterpolicy_t,
);

unsafe extern "C" {
    pub(crate) fn rocksdb_options_create() -> *mut rocksdb_options_t;
    pub(crate) fn rocksdb_options_destroy(options: *mut rocksdb_options_t);
    pub(crate) fn rocksdb_options_set_create_if_missing(
        options: *mut rocksdb_options_t,
        value: c_uchar,
    );
    pub(crate) fn rocksdb_options_set_write_buffer_size(options: *mut rocksdb_options_t, s: usize);
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
    pub(crate) fn rocksdb_cache_create_lru(capacity: usize) -> *mut rocksdb_cache_t;
    pub(crate) fn rocksdb_cache_destroy(cache: *mut rocksdb_cache_t);

    pub(crate) fn rocksdb_open(
        options: *const rocksdb_options_t,
        name: *const c_char,
        errptr: *mut *mut c_char,
    ) -> *mut rocksdb_t;
    pub(crate) fn rocksdb_close(db: *mut rocksdb_t);

    pub(crate) fn rocksdb_readoptions_create() -> *mut rocksdb_readoptions_t;
    pub(crate) fn rocksdb_readoptions_destroy(options: *mut rocksdb_readoptions_t);
    pub(crate) fn rocksdb_writeoptions_create() -> *mut rocksdb_writeoptions_t;
    pub(crate) fn rocksdb_writeoptions_destroy(options: *mut rocksdb_writeoptions_t);
    pub(crate) fn rocksdb_writeoptions_set_sync(options: *mut rocksdb_writeoptions_t, v: c_uchar);

    pub(crate) fn rocksdb_put(
        db: *mut rocksdb_t,
        options: *const rocksdb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        errptr: *mut *mut c_char,
    );
    pub(crate) fn rocksdb_delete(
        db: *mut rocksdb_t,
        options: *const rocksdb_writeoptions_t,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    );
    pub(crate) fn rocksdb_write(
        db: *mut rocksdb_t,
        options: *const rocksdb_writeoptions_t,
        batch: *mut rocksdb_writebatch_t,
        errptr: *mut *mut c_char,
    );
    /// Returns a `malloc`ed value (free with `rocksdb_free`) or null when absent.
    pub(crate) fn rocksdb_get(
        db: *mut rocksdb_t,
        options: *const rocksdb_readoptions_t,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;
    pub(crate) fn rocksdb_flush_wal(db: *mut rocksdb_t, sync: c_uchar, errptr: *mut *mut c_char);
    /// 0 on success.
    pub(crate) fn rocksdb_property_int(
        db: *mut rocksdb_t,
        propname: *const c_char,
        out_val: *mut u64,
    ) -> c_int;

    pub(crate) fn rocksdb_writebatch_create() -> *mut rocksdb_writebatch_t;
    pub(crate) fn rocksdb_writebatch_destroy(batch: *mut rocksdb_writebatch_t);
    pub(crate) fn rocksdb_writebatch_put(
        batch: *mut rocksdb_writebatch_t,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    pub(crate) fn rocksdb_writebatch_delete(
        batch: *mut rocksdb_writebatch_t,
        key: *const c_char,
        klen: usize,
    );

    pub(crate) fn rocksdb_create_iterator(
        db: *mut rocksdb_t,
        options: *const rocksdb_readoptions_t,
    ) -> *mut rocksdb_iterator_t;
    pub(crate) fn rocksdb_iter_destroy(iter: *mut rocksdb_iterator_t);
    pub(crate) fn rocksdb_iter_valid(iter: *const rocksdb_iterator_t) -> c_uchar;
    pub(crate) fn rocksdb_iter_seek_to_first(iter: *mut rocksdb_iterator_t);
    pub(crate) fn rocksdb_iter_seek(iter: *mut rocksdb_iterator_t, k: *const c_char, klen: usize);
    pub(crate) fn rocksdb_iter_next(iter: *mut rocksdb_iterator_t);
    pub(crate) fn rocksdb_iter_key(
        iter: *const rocksdb_iterator_t,
        klen: *mut usize,
    ) -> *const c_char;
    pub(crate) fn rocksdb_iter_value(
        iter: *const rocksdb_iterator_t,
        vlen: *mut usize,
    ) -> *const c_char;
    pub(crate) fn rocksdb_iter_get_error(iter: *const rocksdb_iterator_t, errptr: *mut *mut c_char);

    pub(crate) fn rocksdb_free(ptr: *mut c_void);
}
