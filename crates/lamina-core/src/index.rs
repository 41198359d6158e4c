//! The trait every engine implements.

use crate::{KeyRange, Result, Stats, WriteBatch};

/// A key-value pair returned by a scan.
pub type Entry = (Vec<u8>, Vec<u8>);

/// Result of [`OrderedIndex::compare_and_swap`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CasOutcome {
    /// The current value matched `expected` and was replaced by `new`.
    Swapped,
    /// The current value did not match; nothing changed. Carries the value found.
    Mismatch {
        /// The value current at the instant of the comparison (`None`: key absent).
        current: Option<Vec<u8>>,
    },
}

impl CasOutcome {
    /// Whether the swap happened.
    pub fn is_swapped(&self) -> bool {
        matches!(self, CasOutcome::Swapped)
    }
}

/// An ordered key-value index: the contract of every lamina engine.
///
/// # Semantics
///
/// - Keys are 1 to [`crate::limits::KEY_BYTES_MAX`] bytes, values 0 to
///   [`crate::limits::VALUE_BYTES_MAX`] bytes, compared as unsigned byte strings. Larger input
///   is refused with [`crate::Error::InvalidArgument`] naming the limit, and nothing changes.
/// - Single-key operations (`get`, `put`, `delete`, `compare_and_swap`) are linearizable:
///   each appears to take effect at one instant between its call and its return.
/// - `scan` returns keys in ascending order, `scan_rev` in descending order. Every pair
///   they return was current at some instant during the scan, and a key present and
///   unmodified throughout the scan is always returned (if it is within the limit). (A scan is not a snapshot: two keys may be seen at different instants.)
/// - `write_batch` is atomic: readers see all of it or none of it; after a crash, recovery
///   holds all of it or none of it.
/// - Durability is chosen at open (see [`crate::Durability`]): under `Sync` a write returns
///   only once it survives power loss. After a crash, recovery yields a state that contains
///   every write acknowledged under `Sync`, reflects a prefix of the acknowledged history,
///   and never a torn or corrupt record.
/// - Implementations are `Send + Sync`; any number of threads may call them at once.
/// - After [`OrderedIndex::close`], every call returns [`crate::Error::Closed`].
pub trait OrderedIndex: Send + Sync {
    /// The value stored under `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Inserts or overwrites `key`.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;

    /// Removes `key`; returns whether it existed.
    fn delete(&self, key: &[u8]) -> Result<bool>;

    /// Atomically: if the current value equals `expected` (`None`: the key is absent),
    /// sets it to `new` (`None`: deletes the key) and returns [`CasOutcome::Swapped`];
    /// otherwise changes nothing and returns the current value.
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome>;

    /// Up to `limit` pairs with keys in `range`, in ascending key order. `limit` may be at
    /// most [`crate::limits::SCAN_LIMIT_MAX`]; callers page longer scans with
    /// [`KeyRange::resume_after`].
    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>>;

    /// Up to `limit` pairs with keys in `range`, in descending key order: the greatest keys
    /// of the range first. Same limits and guarantee as [`OrderedIndex::scan`]; callers page
    /// longer reverse scans with [`KeyRange::resume_before`].
    ///
    /// The default builds it from forward scans
    /// ([`crate::reverse::scan_rev_by_forward_scans`]): correct for every engine, but a call
    /// may read far more than `limit` entries (the whole range at worst). Engines that can
    /// walk backwards cheaply override it.
    fn scan_rev(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        crate::reverse::scan_rev_by_forward_scans(self, range, limit)
    }

    /// Applies every operation of `batch` in order, atomically.
    fn write_batch(&self, batch: &WriteBatch) -> Result<()>;

    /// Makes every write acknowledged so far durable.
    fn sync(&self) -> Result<()>;

    /// Counters describing the engine's state and I/O.
    fn stats(&self) -> Stats;

    /// Flushes what the durability mode requires and releases resources. Idempotent.
    fn close(&self) -> Result<()>;
}
