//! Keys, configuration and counters of the block cache.

use lamina_core::{Error, Result};

/// Highest usage count a block can reach; a block hit often survives this many extra sweeps.
pub const USAGE_MAX: u8 = 3;

/// Identifies a cached block: the file (an id the engine assigns to each file it opens) and
/// the block number within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockKey {
    /// The engine's id of the file.
    pub file_id: u64,
    /// Block number within the file (byte offset / block size).
    pub block_no: u64,
}

impl BlockKey {
    /// The key of block `block_no` of file `file_id`.
    pub const fn new(file_id: u64, block_no: u64) -> Self {
        BlockKey { file_id, block_no }
    }
}

/// How an access uses the block; decides whether a hit promotes it (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A lookup that may come back to this block: a hit raises its usage count.
    Point,
    /// Part of a sequential pass: a hit does not promote the block.
    Scan,
}

/// Sizes of a [`crate::cache::BlockCache`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheConfig {
    /// Budget for resident blocks.
    pub capacity_bytes: usize,
    /// Size of every block (4 KiB by default).
    pub block_bytes: usize,
    /// How far beyond the budget the cache may go when every resident block is pinned.
    pub pinned_overflow_bytes_max: usize,
}

/// FD+FC's default buffer size (15 MB, section 5 of the FD+FC paper).
pub const CAPACITY_BYTES_DEFAULT: usize = 15 * 1024 * 1024;
/// Default block size.
pub const BLOCK_BYTES_DEFAULT: usize = 4096;
/// Largest block size accepted.
pub const BLOCK_BYTES_MAX: usize = 1 << 24;

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            capacity_bytes: CAPACITY_BYTES_DEFAULT,
            block_bytes: BLOCK_BYTES_DEFAULT,
            pinned_overflow_bytes_max: CAPACITY_BYTES_DEFAULT / 8,
        }
    }
}

impl CacheConfig {
    /// Frames the budget holds.
    pub fn frames_max(&self) -> usize {
        self.capacity_bytes / self.block_bytes
    }

    /// Share of the frames kept for probation (new blocks): a quarter, at least one.
    pub fn probation_frames(&self) -> usize {
        (self.frames_max() / 4).max(1)
    }

    /// Extra frames allowed when everything is pinned.
    pub fn overflow_frames_max(&self) -> usize {
        self.pinned_overflow_bytes_max / self.block_bytes
    }

    /// Checks the sizes.
    pub fn validate(&self) -> Result<()> {
        if self.block_bytes == 0 || self.block_bytes > BLOCK_BYTES_MAX {
            return Err(Error::option(
                "block_bytes",
                format!("{} is not in 1..={BLOCK_BYTES_MAX}", self.block_bytes),
            ));
        }
        if self.frames_max() == 0 {
            return Err(Error::option(
                "capacity_bytes",
                format!("{} holds no block of {} bytes", self.capacity_bytes, self.block_bytes),
            ));
        }
        Ok(())
    }
}

/// Counters of a cache since it was created. Exact: each lookup counts once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found the block resident and loaded.
    pub hits: u64,
    /// Lookups that started a load (each ran the loader once).
    pub misses: u64,
    /// Lookups that found the block being loaded by another thread and waited for it.
    pub load_waits: u64,
    /// Loads whose loader returned an error.
    pub load_failures: u64,
    /// Blocks evicted to make room.
    pub evictions: u64,
    /// Blocks whose content was replaced or inserted by [`crate::cache::BlockCache::install`].
    pub installs: u64,
    /// Blocks dropped by invalidation.
    pub invalidations: u64,
    /// Blocks resident now.
    pub resident_blocks: u64,
    /// Bytes of resident blocks now.
    pub resident_bytes: u64,
    /// Most bytes ever resident at once.
    pub resident_bytes_peak: u64,
}
