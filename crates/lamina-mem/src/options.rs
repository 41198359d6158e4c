//! Options of the durable `mem` engine.

use lamina_core::{Durability, Result};
use lamina_storage::log::{LogOptions, Retention};

/// Default disk budget of the ring (256 MiB). Live data beyond what the ring can hold after
/// garbage collection is refused with `Error::NoSpace`.
pub const LOG_CAPACITY_BYTES_DEFAULT: u64 = 256 << 20;
/// Default write buffer of the log (256 KiB): one group commit writes at most this much new
/// data, plus as much garbage-collected data.
pub const LOG_BUFFER_BYTES_DEFAULT: usize = 256 << 10;
/// File name prefix of the ring (`mem.ring`).
pub const LOG_FILE_PREFIX: &str = "mem";

/// How to open a durable `mem` engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemOptions {
    /// When acknowledged writes survive a crash.
    pub durability: Durability,
    /// Size of the ring: the engine's disk budget. Fixed when the ring is created.
    pub log_capacity_bytes: u64,
    /// The log's write buffer.
    pub log_buffer_bytes: usize,
}

impl Default for MemOptions {
    fn default() -> Self {
        MemOptions {
            durability: Durability::Sync,
            log_capacity_bytes: LOG_CAPACITY_BYTES_DEFAULT,
            log_buffer_bytes: LOG_BUFFER_BYTES_DEFAULT,
        }
    }
}

impl MemOptions {
    /// The log's options; validated by the log (which names any option out of range).
    pub fn log_options(&self) -> Result<LogOptions> {
        let options = LogOptions {
            retention: Retention::Cyclic { capacity_bytes: self.log_capacity_bytes },
            durability: self.durability,
            buffer_bytes: self.log_buffer_bytes,
            file_prefix: LOG_FILE_PREFIX.to_string(),
            ..LogOptions::default()
        };
        options.validate()?;
        Ok(options)
    }
}
