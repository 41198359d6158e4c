//! The part of `leveldb/c.h` and `rocksdb/c.h` that is the same in both: the entry points
//! the wrapper uses that differ only by their `leveldb_`/`rocksdb_` prefix, with the same
//! argument shapes (RocksDB's C API began as a copy of LevelDB's). [`LsmCApi`] names them
//! once; [`lsm_c_api!`] declares them for one library and implements the trait.
//!
//! Every `errptr` out-parameter receives a `malloc`ed message (or stays null) that must be
//! freed with `{prefix}_free`; so do `{prefix}_get`'s values.

use std::ffi::{c_char, c_void};

/// The shared entry points of one library. Each function is the C function
/// `{PREFIX}_{name}`; the handle types are that library's opaque types, so a handle of one
/// library cannot be passed to the other.
///
/// # Safety
/// Every function has its C contract: handles are live (created by this library and not yet
/// destroyed), buffers are valid for the lengths passed, `errptr` points to a null pointer.
pub(crate) trait LsmCApi: Sized + 'static {
    /// `"leveldb"` or `"rocksdb"`.
    const PREFIX: &'static str;

    type Db;
    type Options;
    type ReadOptions;
    type WriteOptions;
    type WriteBatch;
    type Iterator;
    type Cache;

    unsafe fn options_create() -> *mut Self::Options;
    unsafe fn options_destroy(options: *mut Self::Options);
    unsafe fn options_set_create_if_missing(options: *mut Self::Options, v: u8);
    unsafe fn options_set_write_buffer_size(options: *mut Self::Options, s: usize);
    unsafe fn cache_create_lru(capacity: usize) -> *mut Self::Cache;
    unsafe fn cache_destroy(cache: *mut Self::Cache);

    unsafe fn open(
        options: *const Self::Options,
        name: *const c_char,
        errptr: *mut *mut c_char,
    ) -> *mut Self::Db;
    unsafe fn close(db: *mut Self::Db);

    unsafe fn readoptions_create() -> *mut Self::ReadOptions;
    unsafe fn readoptions_destroy(options: *mut Self::ReadOptions);
    unsafe fn writeoptions_create() -> *mut Self::WriteOptions;
    unsafe fn writeoptions_destroy(options: *mut Self::WriteOptions);
    unsafe fn writeoptions_set_sync(options: *mut Self::WriteOptions, v: u8);

    unsafe fn put(
        db: *mut Self::Db,
        options: *const Self::WriteOptions,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        errptr: *mut *mut c_char,
    );
    unsafe fn delete(
        db: *mut Self::Db,
        options: *const Self::WriteOptions,
        key: *const c_char,
        keylen: usize,
        errptr: *mut *mut c_char,
    );
    unsafe fn write(
        db: *mut Self::Db,
        options: *const Self::WriteOptions,
        batch: *mut Self::WriteBatch,
        errptr: *mut *mut c_char,
    );
    /// Returns a `malloc`ed value (free with [`LsmCApi::free`]) or null when absent.
    unsafe fn get(
        db: *mut Self::Db,
        options: *const Self::ReadOptions,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        errptr: *mut *mut c_char,
    ) -> *mut c_char;

    unsafe fn writebatch_create() -> *mut Self::WriteBatch;
    unsafe fn writebatch_destroy(batch: *mut Self::WriteBatch);
    unsafe fn writebatch_put(
        batch: *mut Self::WriteBatch,
        key: *const c_char,
        klen: usize,
        val: *const c_char,
        vlen: usize,
    );
    unsafe fn writebatch_delete(batch: *mut Self::WriteBatch, key: *const c_char, klen: usize);

    unsafe fn create_iterator(
        db: *mut Self::Db,
        options: *const Self::ReadOptions,
    ) -> *mut Self::Iterator;
    unsafe fn iter_destroy(iter: *mut Self::Iterator);
    unsafe fn iter_valid(iter: *const Self::Iterator) -> u8;
    unsafe fn iter_seek_to_first(iter: *mut Self::Iterator);
    unsafe fn iter_seek(iter: *mut Self::Iterator, k: *const c_char, klen: usize);
    unsafe fn iter_next(iter: *mut Self::Iterator);
    unsafe fn iter_key(iter: *const Self::Iterator, klen: *mut usize) -> *const c_char;
    unsafe fn iter_value(iter: *const Self::Iterator, vlen: *mut usize) -> *const c_char;
    unsafe fn iter_get_error(iter: *const Self::Iterator, errptr: *mut *mut c_char);

    unsafe fn free(ptr: *mut c_void);
}

/// Declares one library's shared entry points and implements [`LsmCApi`] for `$api`.
///
/// `lsm_c_api!(LevelDbC, "leveldb", [leveldb_t, ...])` declares the opaque handle types
/// (named as in the C header, in the order db, options, read options, write options, write
/// batch, iterator, cache) and, in a private module, each `"leveldb_" + name` function under
/// its short name (linked by `link_name`), which the trait methods forward to.
macro_rules! lsm_c_api {
    (
        $api:ident,
        $prefix:literal,
        [$db:ident, $options:ident, $read:ident, $write:ident, $batch:ident, $iter:ident,
            $cache:ident $(,)?]
    ) => {
        $crate::common::opaque!($db, $options, $read, $write, $batch, $iter, $cache);

        /// The library's [`LsmCApi`](crate::lsm::LsmCApi) implementation (a marker type).
        pub(crate) enum $api {}

        $crate::lsm::lsm_c_api!(@items $api, $prefix,
            Db = $db, Options = $options, ReadOptions = $read, WriteOptions = $write,
            WriteBatch = $batch, Iterator = $iter, Cache = $cache;
            fn options_create() -> *mut $options;
            fn options_destroy(options: *mut $options);
            fn options_set_create_if_missing(options: *mut $options, v: u8);
            fn options_set_write_buffer_size(options: *mut $options, s: usize);
            fn cache_create_lru(capacity: usize) -> *mut $cache;
            fn cache_destroy(cache: *mut $cache);
            fn open(
                options: *const $options,
                name: *const ::std::ffi::c_char,
                errptr: *mut *mut ::std::ffi::c_char
            ) -> *mut $db;
            fn close(db: *mut $db);
            fn readoptions_create() -> *mut $read;
            fn readoptions_destroy(options: *mut $read);
            fn writeoptions_create() -> *mut $write;
            fn writeoptions_destroy(options: *mut $write);
            fn writeoptions_set_sync(options: *mut $write, v: u8);
            fn put(
                db: *mut $db,
                options: *const $write,
                key: *const ::std::ffi::c_char,
                keylen: usize,
                val: *const ::std::ffi::c_char,
                vallen: usize,
                errptr: *mut *mut ::std::ffi::c_char
            );
            fn delete(
                db: *mut $db,
                options: *const $write,
                key: *const ::std::ffi::c_char,
                keylen: usize,
                errptr: *mut *mut ::std::ffi::c_char
            );
            fn write(
                db: *mut $db,
                options: *const $write,
                batch: *mut $batch,
                errptr: *mut *mut ::std::ffi::c_char
            );
            fn get(
                db: *mut $db,
                options: *const $read,
                key: *const ::std::ffi::c_char,
                keylen: usize,
                vallen: *mut usize,
                errptr: *mut *mut ::std::ffi::c_char
            ) -> *mut ::std::ffi::c_char;
            fn writebatch_create() -> *mut $batch;
            fn writebatch_destroy(batch: *mut $batch);
            fn writebatch_put(
                batch: *mut $batch,
                key: *const ::std::ffi::c_char,
                klen: usize,
                val: *const ::std::ffi::c_char,
                vlen: usize
            );
            fn writebatch_delete(batch: *mut $batch, key: *const ::std::ffi::c_char, klen: usize);
            fn create_iterator(db: *mut $db, options: *const $read) -> *mut $iter;
            fn iter_destroy(iter: *mut $iter);
            fn iter_valid(iter: *const $iter) -> u8;
            fn iter_seek_to_first(iter: *mut $iter);
            fn iter_seek(iter: *mut $iter, k: *const ::std::ffi::c_char, klen: usize);
            fn iter_next(iter: *mut $iter);
            fn iter_key(iter: *const $iter, klen: *mut usize) -> *const ::std::ffi::c_char;
            fn iter_value(iter: *const $iter, vlen: *mut usize) -> *const ::std::ffi::c_char;
            fn iter_get_error(iter: *const $iter, errptr: *mut *mut ::std::ffi::c_char);
            fn free(ptr: *mut ::std::ffi::c_void);
        );
    };
    (
        @items $api:ident, $prefix:literal,
        $($assoc:ident = $ty:ident),*;
        $(fn $name:ident($($arg:ident: $arg_ty:ty),* $(,)?) $(-> $ret:ty)?;)*
    ) => {
        mod shared_c {
            #[allow(clippy::wildcard_imports)] // the handle types of the parent `ffi` module
            use super::*;

            unsafe extern "C" {
                $(
                    #[link_name = concat!($prefix, "_", stringify!($name))]
                    pub(super) fn $name($($arg: $arg_ty),*) $(-> $ret)?;
                )*
            }
        }

        impl $crate::lsm::LsmCApi for $api {
            const PREFIX: &'static str = $prefix;
            $(type $assoc = $ty;)*
            $(
                #[inline]
                unsafe fn $name($($arg: $arg_ty),*) $(-> $ret)? {
                    // SAFETY: the caller upholds the C function's contract (the trait's).
                    unsafe { shared_c::$name($($arg),*) }
                }
            )*
        }
    };
}

pub(crate) use lsm_c_api;
