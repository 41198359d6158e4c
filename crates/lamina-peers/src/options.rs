//! What every peer is given, so that all engines of a run share one budget.

use lamina_core::{Durability, Error, Result};

/// Settings shared by every peer configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerOptions {
    /// When a write is acknowledged relative to its durability (see `docs/peers.md` for each
    /// peer's mapping).
    pub durability: Durability,
    /// Bytes of block cache: what lamina's engines get for caching blocks.
    pub cache_bytes: u64,
    /// Bytes for the in-memory component (write buffers): what lamina's engines get for
    /// their in-memory level. B-tree peers, whose one buffer pool serves both roles, get
    /// `cache_bytes + memory_budget_bytes` as their cache; `rocksdb-tuned` sizes its write
    /// buffer from it (see `docs/peers.md`).
    pub memory_budget_bytes: u64,
    /// Expected bytes of keys and values in the run, if known. LMDB sizes its map from it
    /// (four times the data, at least 32 GiB of address space); 0 means unknown.
    pub data_bytes_expected: u64,
}

impl Default for PeerOptions {
    fn default() -> Self {
        PeerOptions {
            durability: Durability::Sync,
            cache_bytes: 64 << 20,
            memory_budget_bytes: 256 << 20,
            data_bytes_expected: 0,
        }
    }
}

impl PeerOptions {
    /// The cache of a B-tree peer (BDB, WiredTiger): block cache plus in-memory budget, so
    /// it holds as much memory as a lamina engine given both.
    pub fn btree_cache_bytes(&self) -> u64 {
        self.cache_bytes.saturating_add(self.memory_budget_bytes)
    }

    /// Smallest cache accepted (WiredTiger refuses less than 1 MiB).
    pub const CACHE_BYTES_MIN: u64 = 1 << 20;
    /// Largest cache or memory budget accepted (1 TiB): beyond it the number is a mistake.
    pub const MEMORY_BYTES_MAX: u64 = 1 << 40;

    /// Checks the options' ranges and consistency.
    pub fn validate(&self) -> Result<()> {
        self.durability.validate()?;
        if !(Self::CACHE_BYTES_MIN..=Self::MEMORY_BYTES_MAX).contains(&self.cache_bytes) {
            return Err(Error::option(
                "cache_bytes",
                format!(
                    "must be in [{}, {}], got {}",
                    Self::CACHE_BYTES_MIN,
                    Self::MEMORY_BYTES_MAX,
                    self.cache_bytes
                ),
            ));
        }
        if self.memory_budget_bytes > Self::MEMORY_BYTES_MAX {
            return Err(Error::option(
                "memory_budget_bytes",
                format!(
                    "must be at most {}, got {}",
                    Self::MEMORY_BYTES_MAX,
                    self.memory_budget_bytes
                ),
            ));
        }
        if self.data_bytes_expected > Self::MEMORY_BYTES_MAX * 16 {
            return Err(Error::option("data_bytes_expected", "over 16 TiB"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_budgets_are_refused() {
        assert!(PeerOptions::default().validate().is_ok());
        let small = PeerOptions { cache_bytes: 1000, ..PeerOptions::default() };
        assert!(small.validate().unwrap_err().is_invalid_argument());
        let huge = PeerOptions { memory_budget_bytes: u64::MAX, ..PeerOptions::default() };
        assert!(huge.validate().unwrap_err().to_string().contains("memory_budget_bytes"));
    }
}
