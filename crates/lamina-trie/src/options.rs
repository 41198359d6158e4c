//! Options of the trie engine.

use std::time::Duration;

use lamina_core::{Durability, Error, Result};
use lamina_storage::log::{LogOptions, Retention};

use crate::fragment::PREFIX_BITS_ALLOWED;

/// Default estimate of the live data (keys and values) a durable engine will hold.
pub const LIVE_BYTES_ESTIMATE_DEFAULT: u64 = 64 << 20;
/// The default disk budget is this many times the live data estimate (the contest granted
/// "three times the space of the total database size").
pub const DISK_BUDGET_FACTOR_DEFAULT: u64 = 3;
/// File name prefix of the trie's log ring in its storage (`trie.ring`).
pub const LOG_FILE_PREFIX: &str = "trie";

/// How to build a [`crate::TrieEngine`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrieOptions {
    /// k': bits of the key consumed per tree level; each inner node has `2^k'` buckets
    /// (paper section 2). One of 1, 2, 4, 8. Default 4, the paper's choice.
    pub prefix_bits: u32,
    /// Durable engines: when a write returns (default `Sync`: after its log chunk is synced).
    pub durability: Durability,
    /// Durable engines: the fixed size of the cyclic log, in bytes (rounded up to 4 KiB),
    /// fixed when the log is created. `None`: [`DISK_BUDGET_FACTOR_DEFAULT`] times
    /// `live_bytes_estimate`. When live data no longer fits, writes fail with `NoSpace`.
    pub disk_budget_bytes: Option<u64>,
    /// Durable engines: the expected size of the live data, for the default disk budget.
    pub live_bytes_estimate: u64,
    /// Durable engines: bytes of the log's write buffer (the group-commit batch).
    pub log_buffer_bytes: usize,
    /// Durable engines: the longest a `Sync` write waits for others to join its flush.
    pub log_linger_max: Duration,
}

impl Default for TrieOptions {
    fn default() -> Self {
        let log = LogOptions::default();
        TrieOptions {
            prefix_bits: 4,
            durability: Durability::Sync,
            disk_budget_bytes: None,
            live_bytes_estimate: LIVE_BYTES_ESTIMATE_DEFAULT,
            log_buffer_bytes: log.buffer_bytes,
            log_linger_max: log.linger_max,
        }
    }
}

impl TrieOptions {
    /// Sets k'.
    pub fn prefix_bits(mut self, bits: u32) -> Self {
        self.prefix_bits = bits;
        self
    }

    /// Sets the durability of a durable engine.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets the disk budget (the log ring's size) of a durable engine.
    pub fn disk_budget_bytes(mut self, bytes: u64) -> Self {
        self.disk_budget_bytes = Some(bytes);
        self
    }

    /// Sets the live data estimate the default disk budget derives from.
    pub fn live_bytes_estimate(mut self, bytes: u64) -> Self {
        self.live_bytes_estimate = bytes;
        self
    }

    /// Sets the log's write buffer size.
    pub fn log_buffer_bytes(mut self, bytes: usize) -> Self {
        self.log_buffer_bytes = bytes;
        self
    }

    /// The disk budget in force: the option, or the default multiple of the estimate,
    /// rounded up to whole 4 KiB blocks.
    pub fn disk_budget_effective(&self) -> u64 {
        let budget = self
            .disk_budget_bytes
            .unwrap_or_else(|| self.live_bytes_estimate.saturating_mul(DISK_BUDGET_FACTOR_DEFAULT));
        budget.div_ceil(4096).saturating_mul(4096)
    }

    /// The options of the engine's cyclic log.
    pub fn log_options(&self) -> LogOptions {
        LogOptions {
            retention: Retention::Cyclic { capacity_bytes: self.disk_budget_effective() },
            durability: self.durability,
            buffer_bytes: self.log_buffer_bytes,
            linger_max: self.log_linger_max,
            file_prefix: LOG_FILE_PREFIX.to_string(),
            ..LogOptions::default()
        }
    }

    /// Checks the options of a volatile engine.
    pub fn validate(&self) -> Result<()> {
        if !PREFIX_BITS_ALLOWED.contains(&self.prefix_bits) {
            return Err(Error::option(
                "prefix_bits",
                format!("{} is not one of {PREFIX_BITS_ALLOWED:?}", self.prefix_bits),
            ));
        }
        Ok(())
    }

    /// Checks the options of a durable engine (the tree's and the log's).
    pub fn validate_durable(&self) -> Result<()> {
        self.validate()?;
        if self.disk_budget_bytes.is_none() && self.live_bytes_estimate == 0 {
            return Err(Error::option("live_bytes_estimate", "must be positive"));
        }
        self.log_options().validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_budget_is_three_times_the_estimate() {
        let options = TrieOptions::default().live_bytes_estimate(10_000);
        assert_eq!(options.disk_budget_effective(), 32_768, "30000 rounded up to 4 KiB");
        assert_eq!(options.disk_budget_bytes(5).disk_budget_effective(), 4096);
        TrieOptions::default().validate_durable().unwrap();
    }

    #[test]
    fn bad_options_are_refused() {
        let err = TrieOptions::default().prefix_bits(3).validate().unwrap_err();
        assert!(err.to_string().contains("prefix_bits"), "{err}");
        let err = TrieOptions::default().disk_budget_bytes(4096).validate_durable().unwrap_err();
        assert!(err.to_string().contains("capacity_bytes"), "{err}");
    }
}
