//! LevelDB 1.23 through its C API (`leveldb/c.h`).

mod backend;
mod ffi;

pub(crate) use backend::open;
