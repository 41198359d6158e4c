//! Block cache: a fixed byte budget of fixed-size blocks keyed by (file id, block number),
//! with pinning, per-block reader-writer latches and exact hit/miss/eviction counters.
//!
//! # Eviction policy: segmented CLOCK (probation + protected, lazy promotion)
//!
//! Resident blocks sit in one of two FIFO queues. A newly loaded block enters *probation*.
//! A point access ([`Access::Point`]) to a resident block raises its usage count (at most
//! [`USAGE_MAX`]); a scan access ([`Access::Scan`]) does not. To make room the cache takes a
//! victim from probation while probation holds at least its share (a quarter of the frames)
//! or nothing is protected, else from *protected*:
//! - in probation, the oldest block is evicted unless it was hit again, in which case it moves
//!   to protected (promotion happens lazily here, not on the hit);
//! - protected is a CLOCK ring: a block with usage > 0 loses one and goes round again, the
//!   first with usage 0 is evicted.
//!
//! Pinned blocks and blocks being loaded are skipped in both.
//!
//! Why: engines mix long sequential passes (FD-tree merges and range scans, LA-tree buffer
//! emptying) with point lookups that keep re-reading the same upper levels. Under plain LRU
//! or plain CLOCK a scan longer than the cache flushes every hot block. Here a scan only ever
//! cycles through probation: its blocks are never hit again by point reads, so they are
//! evicted from probation, and protected blocks are untouched however long the scan
//! (the idea of InnoDB's midpoint-insertion LRU and of 2Q/S3-FIFO, with CLOCK's cheap hits).
//! A hit only bumps an atomic counter under the index's shared lock, where LRU would relink a
//! list under an exclusive lock on every hit.
//!
//! # Latches and pins
//!
//! [`BlockCache::pin`] returns a [`PinnedBlock`]: while any handle (or guard derived from it)
//! lives, the block is never evicted. [`PinnedBlock::read`] / [`PinnedBlock::write`] take the
//! block's reader-writer latch and return *owned* guards (they keep their own pin), so an
//! engine can hold the latch of one block while acquiring the next and then release the first
//! (latch coupling, FD+FC section 4.2). The latches are parking_lot's fair reader-writer
//! locks: a waiting writer blocks new readers, so engines must couple latches in a fixed order
//! (e.g. top-down, left to right) to stay deadlock-free, and a thread must not latch a block
//! it already latches (including calling [`BlockCache::install`] on it).
//!
//! # Budget
//!
//! Resident blocks use at most `capacity_bytes`. When every resident block is pinned the cache
//! admits a block beyond the budget, up to `pinned_overflow_bytes_max` more; past that,
//! [`BlockCache::pin`] fails with `Error::NoSpace` (too many blocks pinned at once is a caller
//! bug the cache reports instead of growing without bound). The next insertion after pins are
//! released evicts back down to the budget.
//!
//! # Misses
//!
//! A miss inserts a frame in the *loading* state whose write latch the loading thread holds,
//! releases the cache's index lock and runs the caller's loader (e.g. a closure calling
//! `StorageFile::read_exact_at`). Other threads missing on the same block find that frame and
//! wait on its latch, so a block is loaded once and no global lock is held during I/O. If the
//! loader fails the frame is removed and the waiters retry (one of them becomes the loader).
//!
//! # Dirty blocks: read-through, write-around
//!
//! The cache never writes to storage. An engine that changes a block writes it to its file
//! itself and then brings the cache up to date under the block's write latch (modify the
//! cached copy through [`PinnedBlock::write`], or [`BlockCache::install`] the new bytes), or
//! drops it with [`BlockCache::invalidate`]. Why: eviction then never does I/O (it runs under
//! the index lock), the cache never holds the only copy of acknowledged data, and crash
//! consistency stays where the engines and the storage layer reason about it (write order and
//! syncs), instead of depending on when the cache happens to evict.

mod block_cache;
mod frame;
mod types;

#[cfg(test)]
mod tests;

pub use block_cache::BlockCache;
pub use frame::{BlockReadGuard, BlockWriteGuard, PinnedBlock};
pub use types::{Access, BlockKey, CacheConfig, CacheStats, USAGE_MAX};
