//! The `fptree` engine: [`FpTreeEngine`], `lamina_core::OrderedIndex` over an [`FpTree`] in a
//! persistent region (a memory-mapped file, or a simulated region in tests), with atomic
//! write batches through a persistent redo log (`batch_log`) and compare-and-swap through
//! per-key stripes.
//!
//! [`FpTree`]: crate::FpTree

mod batch_log;
mod batch_space;
mod index;

pub use batch_log::{BATCH_COMMITTED, decode_batch, encode_batch};
pub use index::{FpTreeEngine, FpTreeEngineOptions, REGION_BYTES_DEFAULT, SyncRegion};
