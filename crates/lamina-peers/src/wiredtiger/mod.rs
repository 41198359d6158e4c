//! WiredTiger 3.2.1 (B-tree and LSM tables) through `wiredtiger.h`, via the C shim
//! `csrc/wt_shim.c`.

mod backend;
mod ffi;

pub(crate) use backend::open;
