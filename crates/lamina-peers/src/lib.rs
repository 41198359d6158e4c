//! Peer engines for lamina's benchmarks: RocksDB, LevelDB, LMDB, Berkeley DB and WiredTiger,
//! each behind [`lamina_core::OrderedIndex`] so `lamina bench` runs them on exactly the same
//! requests as lamina's own engines.
//!
//! This is the only crate of the workspace that links C libraries, and only with the cargo
//! feature `peers`. Without it, [`PEER_NAMES`] still lists the configurations and
//! [`open_peer`] returns [`lamina_core::Error::Unsupported`] naming the feature.
//!
//! The configurations, their reasoning and their durability mapping are in `docs/peers.md`.

mod names;
mod open;
mod options;

#[cfg(feature = "peers")]
mod bdb;
#[cfg(feature = "peers")]
mod common;
#[cfg(feature = "peers")]
mod leveldb;
#[cfg(feature = "peers")]
mod lmdb;
#[cfg(feature = "peers")]
mod lsm;
#[cfg(feature = "peers")]
mod rocksdb;
#[cfg(feature = "peers")]
mod wiredtiger;

pub use names::{PEER_NAMES, PeerName, is_peer_name};
pub use open::{FEATURE_MISSING, open_peer, peers_built};
pub use options::PeerOptions;
