//! The raw operations one peer library provides. [`crate::common::Peer`] checks arguments,
//! refuses calls after `close`, counts user bytes and runs the buffered syncer, so a backend
//! only translates calls into its library.

use lamina_core::{CasOutcome, Entry, KeyRange, Result, Stats, WriteBatch};

/// One opened peer library. Dropping it frees every handle (without syncing).
pub(crate) trait Backend: Send + Sync + 'static {
    /// Whether the library stores the empty key (lamina's engines, LevelDB, RocksDB and
    /// Berkeley DB do; LMDB and WiredTiger refuse zero-length keys). Without it, [`crate::common::Peer`]
    /// refuses the empty key with `InvalidArgument::KeyEmpty` before the library sees it.
    const ACCEPTS_EMPTY_KEY: bool = true;
    /// The value under `key` (already checked against the limits).
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Inserts or overwrites.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Removes `key`; whether it existed, decided atomically with the removal.
    fn delete(&self, key: &[u8]) -> Result<bool>;
    /// Atomic compare-and-swap (each backend documents its mechanism).
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome>;
    /// Up to `limit` (> 0) pairs of `range` (non-empty) in key order.
    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>>;
    /// Applies a validated, non-empty batch atomically.
    fn write_batch(&self, batch: &WriteBatch) -> Result<()>;
    /// Makes every acknowledged write durable.
    fn sync(&self) -> Result<()>;
    /// Adds what the library exposes to `stats`.
    fn fill_stats(&self, stats: &mut Stats);
    /// Flushes and releases every handle.
    fn close(self) -> Result<()>;
}
