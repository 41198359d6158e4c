//! Berkeley DB 5.3 B-tree through `db.h`, via the C shim `csrc/bdb_shim.c`.

mod backend;
mod ffi;

pub(crate) use backend::open;
