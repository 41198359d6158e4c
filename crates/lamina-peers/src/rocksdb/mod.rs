//! RocksDB 7.8 through its C API (`rocksdb/c.h`).

mod backend;
mod ffi;

pub(crate) use backend::open;
