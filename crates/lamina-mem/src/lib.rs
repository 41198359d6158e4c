//! `mem`: a concurrent in-memory engine, `RwLock<BTreeMap>`. It is the oracle the other
//! engines are checked against and the baseline of the benchmarks.
//!
//! Persistence: with a directory, the engine writes a checksummed snapshot on clean `close`
//! and loads it on open (format in `docs/format/mem-snapshot.md`), so the CLI works across
//! processes. Writes are not crash-safe until the group-commit log makes them so.

mod engine;
mod snapshot;

pub use engine::MemEngine;
pub use snapshot::{SNAPSHOT_FILE_NAME, Snapshot};
