//! `mem`: a concurrent in-memory engine (`RwLock<BTreeMap>`), made durable by the coalesced
//! cyclic log of the SIGMOD 2011 contest paper (section 3, `lamina_storage::log`). It is the
//! oracle the other engines are checked against and the baseline of the benchmarks.
//!
//! - [`MemEngine::volatile`]: nothing is written anywhere.
//! - [`MemEngine::open`]: every write is logged in the ring of `lamina_storage::log::RingLog`,
//!   which grows with the live data (up to an optional disk budget); the ring's garbage
//!   collection asks the engine which records are still current and how much is live;
//!   recovery replays the ring.
//!
//! `Stats::memory_bytes` estimates the heap the map takes (`memory.rs`, checked against a
//! counting allocator in `tests/memory_bytes.rs`); an optional memory limit refuses writes
//! past it with `Error::NoSpace`.

#![forbid(unsafe_code)]

mod engine;
mod memory;
mod options;
mod stripes;

pub use engine::MemEngine;
pub use memory::entry_memory_bytes;
pub use options::{LOG_BUFFER_BYTES_DEFAULT, LOG_FILE_PREFIX, MEMORY_LIMIT_BYTES_MIN, MemOptions};
