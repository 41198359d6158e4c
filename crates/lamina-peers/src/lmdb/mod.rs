//! LMDB 0.9.24 through its C API (`lmdb.h`).

mod backend;
mod ffi;
mod long_keys;

pub(crate) use backend::open;
