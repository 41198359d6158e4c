//! Options of the log, their limits, and the engine's liveness oracle for cyclic retention.

use std::time::Duration;

use lamina_core::limits::{BATCH_BYTES_MAX, BATCH_OPS_MAX};

const _: () = assert!(BUFFER_BYTES_MAX > BATCH_BYTES_MAX);
use lamina_core::{Durability, Error, Result};

use super::chunk::{BLOCK_BYTES, CHUNK_HEADER_BYTES, FILE_CAPACITY_BYTES_MAX, chunk_len};
use super::record::{PUT_RECORD_BYTES_MAX, SeqNo};

/// Smallest write buffer: three largest single-key records.
pub const BUFFER_BYTES_MIN: usize = 4 * BLOCK_BYTES;
/// Largest write buffer: enough for the largest batch the API accepts
/// ([`BATCH_BYTES_MAX`] of data plus framing for [`BATCH_OPS_MAX`] operations).
pub const BUFFER_BYTES_MAX: usize = BATCH_BYTES_MAX + BATCH_OPS_MAX * 8 + BLOCK_BYTES;
// The largest single-key record always fits an empty buffer.
const _: () = assert!(PUT_RECORD_BYTES_MAX + CHUNK_HEADER_BYTES <= BUFFER_BYTES_MIN);
/// Default write buffer (1 MiB).
pub const BUFFER_BYTES_DEFAULT: usize = 1 << 20;
/// Default longest group-commit timeout (the timeout adapts to half the last flush's time,
/// within [50 us, `linger_max`]).
pub const LINGER_DEFAULT: Duration = Duration::from_millis(5);
/// Longest group-commit timeout accepted.
pub const LINGER_MAX: Duration = Duration::from_millis(100);
/// Default of [`LogOptions::sync_wait_yield_max`].
pub const SYNC_WAIT_YIELD_DEFAULT: Duration = Duration::from_micros(500);
/// Longest [`LogOptions::sync_wait_yield_max`] accepted.
pub const SYNC_WAIT_YIELD_MAX: Duration = Duration::from_millis(10);
/// Default segment size of a truncate-mode log (64 MiB).
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;

/// How the log reclaims space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Segment files of at most `segment_bytes` each; [`crate::log::Log::truncate`] removes
    /// segments whose records are all persisted elsewhere.
    Truncate {
        /// Maximum bytes of one segment file (data, without the 4 KiB header).
        segment_bytes: u64,
    },
    /// One ring file of `capacity_bytes`, overwritten in a circle with on-the-fly garbage
    /// collection (SIGMOD 2011 contest paper, section 3). Needs a [`LiveRecords`] oracle.
    Cyclic {
        /// The fixed disk budget of the ring (data bytes, without the 4 KiB header).
        capacity_bytes: u64,
    },
}

/// Options of [`crate::log::Log::open`].
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// Truncate or cyclic.
    pub retention: Retention,
    /// When `append` returns.
    pub durability: Durability,
    /// Bytes of records one write buffer holds (a chunk holds at most two buffers' worth:
    /// garbage-collected records plus new ones). Also the largest record accepted.
    pub buffer_bytes: usize,
    /// Longest group-commit timeout: how long a flush may wait for the writers of the last
    /// group to join the next chunk (it waits half the last flush's time, at most this, and
    /// not at all once every writer of the last group is in).
    pub linger_max: Duration,
    /// File name prefix: files are `{prefix}.ring` or `{prefix}-{index:016x}.seg`.
    pub file_prefix: String,
    /// How long a `Sync` appender waiting for its chunk's sync yields its core
    /// (`sched_yield`) before it sleeps, as long as more appenders wait than the machine has
    /// cores. A thread that yields needs no wake-up when the sync completes (a sleeping one
    /// costs a futex wake and often an interrupt to an idle core, which in a VM is a
    /// hypervisor exit), and with more waiters than cores the cores it yields to have other
    /// threads to run or would otherwise idle until the sync ends. With fewer waiters than
    /// cores an appender sleeps at once, so a lone writer never spins. Zero disables.
    /// Measured on the contest workload: `docs/results/trie.md`.
    pub sync_wait_yield_max: Duration,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            retention: Retention::Truncate { segment_bytes: SEGMENT_BYTES_DEFAULT },
            durability: Durability::Sync,
            buffer_bytes: BUFFER_BYTES_DEFAULT,
            linger_max: LINGER_DEFAULT,
            file_prefix: "wal".to_string(),
            sync_wait_yield_max: SYNC_WAIT_YIELD_DEFAULT,
        }
    }
}

impl LogOptions {
    /// Largest chunk payload: a buffer of carried (garbage-collected) records plus a buffer
    /// of new ones.
    pub fn chunk_payload_max(&self) -> usize {
        2 * self.buffer_bytes
    }

    /// Largest chunk on disk.
    pub fn chunk_bytes_max(&self) -> u64 {
        chunk_len(self.chunk_payload_max())
    }

    /// Smallest ring that garbage collection can run in: the chunks of three flush rounds
    /// ahead of the writer, twice over.
    pub fn ring_bytes_min(&self) -> u64 {
        12 * self.chunk_bytes_max()
    }

    /// Checks every option against its limits.
    pub fn validate(&self) -> Result<()> {
        self.durability.validate()?;
        if !(BUFFER_BYTES_MIN..=BUFFER_BYTES_MAX).contains(&self.buffer_bytes) {
            return Err(Error::option(
                "buffer_bytes",
                format!(
                    "{} is outside [{BUFFER_BYTES_MIN}, {BUFFER_BYTES_MAX}]",
                    self.buffer_bytes
                ),
            ));
        }
        if self.linger_max > LINGER_MAX {
            return Err(Error::option(
                "linger_max",
                format!("{:?} is over {LINGER_MAX:?}", self.linger_max),
            ));
        }
        if self.sync_wait_yield_max > SYNC_WAIT_YIELD_MAX {
            return Err(Error::option(
                "sync_wait_yield_max",
                format!("{:?} is over {SYNC_WAIT_YIELD_MAX:?}", self.sync_wait_yield_max),
            ));
        }
        let prefix_ok = !self.file_prefix.is_empty()
            && self.file_prefix.len() <= 64
            && self.file_prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !prefix_ok {
            return Err(Error::option(
                "file_prefix",
                format!("{:?}: 1 to 64 ASCII letters, digits or '_'", self.file_prefix),
            ));
        }
        match self.retention {
            Retention::Truncate { segment_bytes } => {
                let min = self.chunk_bytes_max();
                if segment_bytes < min
                    || segment_bytes > FILE_CAPACITY_BYTES_MAX
                    || !segment_bytes.is_multiple_of(BLOCK_BYTES as u64)
                {
                    return Err(Error::option(
                        "segment_bytes",
                        format!(
                            "{segment_bytes}: must be a multiple of 4096, >= {min} and <= \
                             {FILE_CAPACITY_BYTES_MAX}"
                        ),
                    ));
                }
            }
            Retention::Cyclic { capacity_bytes } => {
                let min = self.ring_bytes_min();
                if capacity_bytes < min
                    || capacity_bytes > FILE_CAPACITY_BYTES_MAX
                    || !capacity_bytes.is_multiple_of(BLOCK_BYTES as u64)
                {
                    return Err(Error::option(
                        "capacity_bytes",
                        format!(
                            "{capacity_bytes}: must be a multiple of 4096, >= {min} (12 chunks of \
                             2 x buffer_bytes) and <= {FILE_CAPACITY_BYTES_MAX}"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The engine's answer to "is this record still the current version of its key?", asked by
/// the cyclic log's garbage collection before it overwrites a region (contest paper,
/// section 3: "it validates the read log records against the in-memory index").
///
/// # Contract
/// `is_current(key, seq)` returns `true` iff the engine's current state of `key` was set by
/// the put with sequence number `seq`. The engine must apply each operation inside the
/// `apply` closure of [`crate::log::Log::append_with`] (so "applied" and "logged" cannot be
/// observed apart by the log), and per key in sequence order. Deletes are never asked
/// about: a delete record is dropped by garbage collection once every older record of its
/// key is gone, which the log guarantees by construction (see `docs/format/log.md`).
pub trait LiveRecords: Send + Sync {
    /// Whether the put of `key` with sequence number `seq` is the key's current version.
    fn is_current(&self, key: &[u8], seq: SeqNo) -> bool;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_limits_enforced() {
        LogOptions::default().validate().unwrap();
        let small = LogOptions { buffer_bytes: 100, ..LogOptions::default() };
        assert!(small.validate().unwrap_err().to_string().contains("buffer_bytes"));
        let ring = LogOptions {
            retention: Retention::Cyclic { capacity_bytes: 1 << 20 },
            ..LogOptions::default()
        };
        assert!(ring.validate().unwrap_err().to_string().contains("capacity_bytes"));
        let prefix = LogOptions { file_prefix: "a/b".into(), ..LogOptions::default() };
        assert!(prefix.validate().is_err());
        let spin =
            LogOptions { sync_wait_yield_max: SYNC_WAIT_YIELD_MAX * 2, ..LogOptions::default() };
        assert!(spin.validate().unwrap_err().to_string().contains("sync_wait_yield_max"));
    }
}
