//! `mem`: a concurrent in-memory engine (`RwLock<BTreeMap>`), made durable by the coalesced
//! cyclic log of the SIGMOD 2011 contest paper (section 3, `lamina_storage::log`). It is the
//! oracle the other engines are checked against and the baseline of the benchmarks.
//!
//! - [`MemEngine::volatile`]: nothing is written anywhere.
//! - [`MemEngine::open`]: every write is logged in a fixed-size ring (the disk budget); the
//!   ring's garbage collection asks the engine which records are still current; recovery
//!   replays the ring.

mod engine;
mod options;
mod stripes;

pub use engine::MemEngine;
pub use options::{
    LOG_BUFFER_BYTES_DEFAULT, LOG_CAPACITY_BYTES_DEFAULT, LOG_FILE_PREFIX, MemOptions,
};
