//! Options of the trie engine.

use std::time::Duration;

use lamina_core::{Durability, Error, MEMORY_LIMIT_OPTION, OpenIntent, Result};
use lamina_storage::log::{LogOptions, RingLogOptions};

use crate::fragment::PREFIX_BITS_ALLOWED;

/// File name prefix of the trie's log ring in its storage (`trie.ring`).
pub const LOG_FILE_PREFIX: &str = "trie";
/// Smallest memory limit accepted (1 MiB).
pub const MEMORY_LIMIT_BYTES_MIN: u64 = 1 << 20;

/// How to build a [`crate::TrieEngine`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrieOptions {
    /// k': bits of the key consumed per tree level; each inner node has `2^k'` buckets
    /// (paper section 2). One of 1, 2, 4, 8. Default 4, the paper's choice.
    pub prefix_bits: u32,
    /// Durable engines: when a write returns (default `Sync`: after its log chunk is synced).
    pub durability: Durability,
    /// Durable engines: the most disk the log ring may take; `None` (the default): no cap,
    /// the ring grows with the live data (`lamina_storage::log::RingLog`). May change
    /// between opens. At the budget, writes that add data fail with `Error::NoSpace` naming
    /// the option; deletes and overwrites that do not grow the data are accepted.
    pub disk_budget_bytes: Option<u64>,
    /// The most memory the tree may take (`Stats::memory_bytes`); `None` (the default): no
    /// limit. Writes that would take it further fail with `Error::NoSpace` naming the
    /// option; deletes and writes that do not grow the data are accepted.
    pub memory_limit_bytes: Option<u64>,
    /// Durable engines: bytes of the log's write buffer (the group-commit batch).
    pub log_buffer_bytes: usize,
    /// Durable engines: the longest a `Sync` write waits for others to join its flush.
    pub log_linger_max: Duration,
    /// Durable engines: the segment size of a new log ring; `None`: the log's default.
    pub log_segment_bytes: Option<u64>,
    /// Durable engines: whether the database must already exist (a missing or truncated
    /// ring is then `Error::Corruption`, never an empty tree).
    pub intent: OpenIntent,
}

impl Default for TrieOptions {
    fn default() -> Self {
        let log = LogOptions::default();
        TrieOptions {
            prefix_bits: 4,
            durability: Durability::Sync,
            disk_budget_bytes: None,
            memory_limit_bytes: None,
            log_buffer_bytes: log.buffer_bytes,
            log_linger_max: log.linger_max,
            log_segment_bytes: None,
            intent: OpenIntent::CreateIfMissing,
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

    /// Sets the disk budget of a durable engine (its log ring's most bytes).
    pub fn disk_budget_bytes(mut self, bytes: u64) -> Self {
        self.disk_budget_bytes = Some(bytes);
        self
    }

    /// Sets the memory limit.
    pub fn memory_limit_bytes(mut self, bytes: u64) -> Self {
        self.memory_limit_bytes = Some(bytes);
        self
    }

    /// Sets the log's write buffer size.
    pub fn log_buffer_bytes(mut self, bytes: usize) -> Self {
        self.log_buffer_bytes = bytes;
        self
    }

    /// Sets the segment size of a new log ring.
    pub fn log_segment_bytes(mut self, bytes: u64) -> Self {
        self.log_segment_bytes = Some(bytes);
        self
    }

    /// Sets whether the database must already exist.
    pub fn intent(mut self, intent: OpenIntent) -> Self {
        self.intent = intent;
        self
    }

    /// The options of the engine's log ring.
    pub fn log_options(&self) -> RingLogOptions {
        RingLogOptions {
            log: LogOptions {
                durability: self.durability,
                buffer_bytes: self.log_buffer_bytes,
                linger_max: self.log_linger_max,
                file_prefix: LOG_FILE_PREFIX.to_string(),
                ..LogOptions::default()
            },
            segment_bytes: self.log_segment_bytes,
            disk_budget_bytes: self.disk_budget_bytes,
            intent: self.intent,
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
        if let Some(limit) = self.memory_limit_bytes
            && limit < MEMORY_LIMIT_BYTES_MIN
        {
            return Err(Error::option(
                "memory_limit_bytes",
                format!(
                    "{limit} is below {MEMORY_LIMIT_BYTES_MIN}; set {MEMORY_LIMIT_OPTION} higher"
                ),
            ));
        }
        Ok(())
    }

    /// Checks the options of a durable engine (the tree's and the log's).
    pub fn validate_durable(&self) -> Result<()> {
        self.validate()?;
        self.log_options().validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_unbounded_and_valid() {
        let options = TrieOptions::default();
        assert_eq!((options.disk_budget_bytes, options.memory_limit_bytes), (None, None));
        options.validate_durable().unwrap();
    }

    #[test]
    fn bad_options_are_refused() {
        let err = TrieOptions::default().prefix_bits(3).validate().unwrap_err();
        assert!(err.to_string().contains("prefix_bits"), "{err}");
        let err = TrieOptions::default().disk_budget_bytes(4096).validate_durable().unwrap_err();
        assert!(err.to_string().contains("--disk-budget-bytes"), "{err}");
        let err = TrieOptions::default().memory_limit_bytes(4096).validate().unwrap_err();
        assert!(err.to_string().contains("--memory-limit-bytes"), "{err}");
    }
}
