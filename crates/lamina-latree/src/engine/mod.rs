//! The `latree` engine (issue 18): the single-threaded [`crate::tree::LaTree`] behind
//! `lamina_core::OrderedIndex`, made concurrent by one tree lock (the scheme is the invariant
//! list of `inner.rs`), durable by the group-commit log and checkpoints committed through the
//! superblock (`durable.rs`). `latree-btree` is the same engine with `buffered = false`.
//!
//! - `options.rs`: [`LaTreeEngineOptions`];
//! - `inner.rs`: the shared state, its locks and the concurrency invariants;
//! - `write.rs`, `read.rs`: the operations;
//! - `checkpoint.rs`: checkpoints and the thread that takes them;
//! - `durable.rs`, `payload.rs`: the superblock's commit record, commits and recovery;
//! - `index.rs`: [`LaTreeEngine`]: open, replay, close, the `OrderedIndex` implementation.

mod checkpoint;
mod durable;
mod index;
mod inner;
mod options;
mod payload;
mod read;
mod write;

pub use durable::{LOG_FILE_PREFIX, SUPERBLOCK_BYTES, SUPERBLOCK_FILE};
pub use index::LaTreeEngine;
pub use options::{
    CHECKPOINT_INLINE_BYTES_MAX, CHECKPOINT_LOG_BYTES_DEFAULT, CHECKPOINT_LOG_BYTES_MAX,
    CHECKPOINT_LOG_BYTES_MIN, LaTreeEngineOptions,
};
pub use payload::{
    CHECKPOINT_FILE_BYTES_MAX, COMMIT_RECORD_FORMAT_VERSION, CheckpointBytes, CommitRecord,
    checkpoint_file_name,
};
