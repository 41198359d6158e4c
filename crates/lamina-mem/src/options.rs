//! Options of the durable `mem` engine.

use lamina_core::{Durability, Error, MEMORY_LIMIT_OPTION, OpenIntent, Result};
use lamina_storage::log::{LogOptions, RingLogOptions};

/// Default write buffer of the log (256 KiB): one group commit writes at most this much new
/// data, plus as much garbage-collected data.
pub const LOG_BUFFER_BYTES_DEFAULT: usize = 256 << 10;
/// File name prefix of the ring (`mem.ring`).
pub const LOG_FILE_PREFIX: &str = "mem";
/// Smallest memory limit accepted (1 MiB).
pub const MEMORY_LIMIT_BYTES_MIN: u64 = 1 << 20;

/// How to open a durable `mem` engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemOptions {
    /// When acknowledged writes survive a crash.
    pub durability: Durability,
    /// The most disk the log ring may take; `None`: no cap (the ring grows with the live
    /// data, see `lamina_storage::log::RingLog`). May change between opens. At the budget,
    /// writes that add data fail with `Error::NoSpace` naming the option; deletes and
    /// overwrites that do not grow the data are accepted.
    pub disk_budget_bytes: Option<u64>,
    /// The most memory the engine's data may take (`Stats::memory_bytes`); `None`: no
    /// limit. Writes that would take it further fail with `Error::NoSpace` naming the
    /// option, before anything changes; deletes and shrinking overwrites are accepted.
    pub memory_limit_bytes: Option<u64>,
    /// The log's write buffer.
    pub log_buffer_bytes: usize,
    /// Segment size of a new ring; `None`: the log's default for the buffer size.
    pub log_segment_bytes: Option<u64>,
    /// Whether the database must already exist (its ring missing is then corruption).
    pub intent: OpenIntent,
}

impl Default for MemOptions {
    fn default() -> Self {
        MemOptions {
            durability: Durability::Sync,
            disk_budget_bytes: None,
            memory_limit_bytes: None,
            log_buffer_bytes: LOG_BUFFER_BYTES_DEFAULT,
            log_segment_bytes: None,
            intent: OpenIntent::CreateIfMissing,
        }
    }
}

impl MemOptions {
    /// The log's options; validated by the log (which names any option out of range).
    pub fn log_options(&self) -> Result<RingLogOptions> {
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
        let options = RingLogOptions {
            log: LogOptions {
                durability: self.durability,
                buffer_bytes: self.log_buffer_bytes,
                file_prefix: LOG_FILE_PREFIX.to_string(),
                ..LogOptions::default()
            },
            segment_bytes: self.log_segment_bytes,
            disk_budget_bytes: self.disk_budget_bytes,
            intent: self.intent,
        };
        options.validate()?;
        Ok(options)
    }
}
