//! What the LevelDB and RocksDB peers share: their C APIs agree entry point for entry point
//! ([`LsmCApi`], declared per library by [`lsm_c_api!`]), so the database handle, the
//! reads, writes, batches, scans and the striped-lock read-modify-writes are written once in
//! [`LsmStore`]. Each library keeps its tuned options, its sync and its statistics
//! ([`LsmLibrary`]).

mod c_api;
mod iter;
mod library;
mod store;

pub(crate) use c_api::{LsmCApi, lsm_c_api};
pub(crate) use library::LsmLibrary;
pub(crate) use store::{LsmStore, OpenHandles, take_c_string};
