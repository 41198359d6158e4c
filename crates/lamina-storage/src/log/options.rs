//! Options of the two logs, their limits, and the engine's liveness oracle for the ring.

use std::time::Duration;

use lamina_core::limits::{BATCH_BYTES_MAX, BATCH_OPS_MAX};
use lamina_core::{DISK_BUDGET_OPTION, Durability, Error, OpenIntent, Result};

use super::chunk::{
    BLOCK_BYTES, CHUNK_HEADER_BYTES, FILE_CAPACITY_BYTES_MAX, FILE_HEADER_BYTES, chunk_len,
};
use super::record::{PUT_RECORD_BYTES_MAX, SeqNo};

const _: () = assert!(BUFFER_BYTES_MAX > BATCH_BYTES_MAX);

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
/// Default segment size of a segmented log (64 MiB).
pub const SEGMENT_BYTES_DEFAULT: u64 = 64 << 20;

/// A ring segment holds at least this many of the largest chunks: read-ahead collection
/// keeps six of them collected ahead of the writer plus a reserve of two, and with at least
/// twelve per segment that lookahead never spans more than the next segment (a ring of one
/// segment is the fixed ring of the contest paper, which needed twelve too).
pub const RING_SEGMENT_CHUNKS_MIN: u64 = 12;
/// Default ring segment size: 16 MiB, or [`RING_SEGMENT_CHUNKS_MIN`] of the largest chunks if
/// that is more. Growth and shrinking go a segment at a time, so the ring's size follows
/// its live data to within two segments.
pub const RING_SEGMENT_BYTES_DEFAULT: u64 = 16 << 20;
/// Segments a new ring file is created with (sparse: only what is written takes space).
pub const RING_SEGMENTS_INITIAL: u64 = 2;

/// Options both logs share: how appends are grouped into chunks and when they return.
#[derive(Debug, Clone)]
pub struct LogOptions {
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
        Ok(())
    }
}

/// Options of [`crate::log::SegmentLog::open`]: the log the engine truncates once its data
/// is persisted elsewhere.
#[derive(Debug, Clone)]
pub struct SegmentLogOptions {
    /// Grouping and durability.
    pub log: LogOptions,
    /// Maximum data bytes of one segment file (without its 4 KiB header), fixed per segment
    /// when it is created.
    pub segment_bytes: u64,
}

impl Default for SegmentLogOptions {
    fn default() -> Self {
        SegmentLogOptions { log: LogOptions::default(), segment_bytes: SEGMENT_BYTES_DEFAULT }
    }
}

impl SegmentLogOptions {
    /// Checks every option against its limits.
    pub fn validate(&self) -> Result<()> {
        self.log.validate()?;
        let min = self.log.chunk_bytes_max();
        let segment_bytes = self.segment_bytes;
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
        Ok(())
    }
}

/// Options of [`crate::log::RingLog::open`]: the cyclic log of the contest paper (section
/// 3) whose ring of segments grows and shrinks with the live records
/// (`docs/format/log.md`, "Ring growth").
#[derive(Debug, Clone)]
pub struct RingLogOptions {
    /// Grouping and durability.
    pub log: LogOptions,
    /// Size of one ring segment for a new ring (an existing ring keeps its own); `None`:
    /// [`RingLogOptions::segment_bytes_default`]. A multiple of 4 KiB, at least
    /// [`RingLogOptions::segment_bytes_min`].
    pub segment_bytes: Option<u64>,
    /// The most disk the ring may take (its file's header and active segments); `None`: no
    /// cap (the device is the limit). May change from one open to the next: raised, the
    /// ring grows further; lowered below what the ring holds, writes that add live data are
    /// refused and the ring shrinks as collection frees whole segments. Writes that would
    /// take the live records past [`LIVE_FRACTION_AT_BUDGET_PERCENT`] of the budget (less
    /// four of the largest chunks, room collection needs to work in) fail with `NoSpace`;
    /// deletes and writes that add no live data are always accepted.
    pub disk_budget_bytes: Option<u64>,
    /// Whether the ring must exist (the database exists): a missing or truncated ring is
    /// then `Error::Corruption`, never an empty log.
    pub intent: OpenIntent,
}

/// Growth keeps the live records at most this share of the ring's active segments: past it,
/// the next segment the writer enters is a new one (contest paper: "three times the space
/// of the total database size"; half keeps garbage collection at one byte copied per byte
/// written, at most).
pub const LIVE_FRACTION_GROW_PERCENT: u64 = 50;
/// At the disk budget, writes that add live records are refused past this share of it, so
/// garbage collection keeps room to work for deletes and overwrites (at 75% live, it copies
/// at most three bytes per byte freed).
pub const LIVE_FRACTION_AT_BUDGET_PERCENT: u64 = 75;

/// Most live bytes a ring of `ring_bytes` (its budget) takes before writes that add data are
/// refused: [`LIVE_FRACTION_AT_BUDGET_PERCENT`] of what is left after the room collection
/// needs to work in (four of the largest chunks: the reserve for carried records, the
/// unused end of a segment, and the carry itself), so that deletes and overwrites always
/// find garbage to collect.
pub(crate) fn live_bytes_max(ring_bytes: u64, chunk_bytes_max: u64) -> u64 {
    ring_bytes.saturating_sub(RING_WORK_CHUNKS * chunk_bytes_max) / 100
        * LIVE_FRACTION_AT_BUDGET_PERCENT
}

/// Largest chunks' worth of a ring at its budget kept for collection to work in.
const RING_WORK_CHUNKS: u64 = 4;

impl Default for RingLogOptions {
    fn default() -> Self {
        RingLogOptions {
            log: LogOptions { file_prefix: "ring".into(), ..LogOptions::default() },
            segment_bytes: None,
            disk_budget_bytes: None,
            intent: OpenIntent::CreateIfMissing,
        }
    }
}

impl RingLogOptions {
    /// Smallest ring segment the write buffer allows ([`RING_SEGMENT_CHUNKS_MIN`] of the
    /// largest chunks).
    pub fn segment_bytes_min(&self) -> u64 {
        RING_SEGMENT_CHUNKS_MIN * self.log.chunk_bytes_max()
    }

    /// Segment size of a new ring without [`RingLogOptions::segment_bytes`]:
    /// [`RING_SEGMENT_BYTES_DEFAULT`] or the minimum if larger, and never more than the
    /// budget holds in one segment (if that is above the minimum).
    pub fn segment_bytes_default(&self) -> u64 {
        let min = self.segment_bytes_min();
        let mut bytes = RING_SEGMENT_BYTES_DEFAULT.max(min);
        if let Some(budget) = self.disk_budget_bytes {
            let fits = budget.saturating_sub(FILE_HEADER_BYTES) / RING_SEGMENTS_INITIAL;
            bytes = bytes.min(fits);
        }
        // Whole blocks, and never below the minimum (a multiple of 4 KiB itself).
        (bytes - bytes % BLOCK_BYTES as u64).max(min)
    }

    /// The segment size a new ring gets.
    pub fn segment_bytes_for_new_ring(&self) -> u64 {
        self.segment_bytes.unwrap_or_else(|| self.segment_bytes_default())
    }

    /// Checks every option against its limits.
    pub fn validate(&self) -> Result<()> {
        self.log.validate()?;
        let min = self.segment_bytes_min();
        if let Some(bytes) = self.segment_bytes
            && (bytes < min
                || bytes > FILE_CAPACITY_BYTES_MAX
                || !bytes.is_multiple_of(BLOCK_BYTES as u64))
        {
            return Err(Error::option(
                "segment_bytes",
                format!(
                    "{bytes}: must be a multiple of 4096, >= {min} ({RING_SEGMENT_CHUNKS_MIN} \
                     chunks of 2 x buffer_bytes) and <= {FILE_CAPACITY_BYTES_MAX}"
                ),
            ));
        }
        if let Some(budget) = self.disk_budget_bytes {
            let least = FILE_HEADER_BYTES + self.segment_bytes.unwrap_or(min);
            if budget < least {
                return Err(Error::option(
                    "disk_budget_bytes",
                    format!(
                        "{budget} bytes is below the smallest ring, {least} bytes (a 4 KiB \
                         header and one segment of {RING_SEGMENT_CHUNKS_MIN} chunks of 2 x \
                         the log's write buffer); set {DISK_BUDGET_OPTION} higher"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The engine's answer to "is this record still the current version of its key?", asked by
/// the ring's garbage collection before it overwrites a region (contest paper, section 3:
/// "it validates the read log records against the in-memory index"), and "how much live
/// data is there?", which sizes the ring.
///
/// # Contract
/// `is_current(key, seq)` returns `true` iff the engine's current state of `key` was set by
/// the put with sequence number `seq`. The engine must apply each operation inside the
/// `apply` closure of [`crate::log::RingLog::append_with`] (so "applied" and "logged" cannot
/// be observed apart by the log), and per key in sequence order. Deletes are never asked
/// about: a delete record is dropped by garbage collection once every older record of its
/// key is gone, which the log guarantees by construction (see `docs/format/log.md`).
///
/// `live_bytes()` is the sum of [`crate::log::put_record_bytes`] over the engine's current
/// keys and values (approximate while writers run): what the live records take in the log.
pub trait LiveRecords: Send + Sync {
    /// Whether the put of `key` with sequence number `seq` is the key's current version.
    fn is_current(&self, key: &[u8], seq: SeqNo) -> bool;

    /// Bytes the current records take in the log (see the trait documentation).
    fn live_bytes(&self) -> u64;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_limits_enforced() {
        LogOptions::default().validate().unwrap();
        SegmentLogOptions::default().validate().unwrap();
        RingLogOptions::default().validate().unwrap();
        let small = LogOptions { buffer_bytes: 100, ..LogOptions::default() };
        assert!(small.validate().unwrap_err().to_string().contains("buffer_bytes"));
        let ring = RingLogOptions { segment_bytes: Some(1 << 20), ..RingLogOptions::default() };
        assert!(ring.validate().unwrap_err().to_string().contains("segment_bytes"));
        let budget =
            RingLogOptions { disk_budget_bytes: Some(1 << 20), ..RingLogOptions::default() };
        let err = budget.validate().unwrap_err().to_string();
        assert!(err.contains("disk_budget_bytes") && err.contains("--disk-budget-bytes"), "{err}");
        let segments = SegmentLogOptions { segment_bytes: 4096, ..SegmentLogOptions::default() };
        assert!(segments.validate().unwrap_err().to_string().contains("segment_bytes"));
        let prefix = LogOptions { file_prefix: "a/b".into(), ..LogOptions::default() };
        assert!(prefix.validate().is_err());
        let spin =
            LogOptions { sync_wait_yield_max: SYNC_WAIT_YIELD_MAX * 2, ..LogOptions::default() };
        assert!(spin.validate().unwrap_err().to_string().contains("sync_wait_yield_max"));
    }

    #[test]
    fn default_segment_size_follows_buffer_and_budget() {
        let options = RingLogOptions::default();
        // 1 MiB buffers: chunks of up to 2 MiB + 4 KiB, twelve of them per segment.
        assert_eq!(options.segment_bytes_min(), 12 * ((2 << 20) + 4096));
        assert_eq!(options.segment_bytes_default(), options.segment_bytes_min());
        let small = RingLogOptions {
            log: LogOptions { buffer_bytes: 16 << 10, ..LogOptions::default() },
            ..RingLogOptions::default()
        };
        assert_eq!(small.segment_bytes_default(), RING_SEGMENT_BYTES_DEFAULT);
        let budget = RingLogOptions { disk_budget_bytes: Some(4 << 20), ..small.clone() };
        assert_eq!(budget.segment_bytes_default(), (2 << 20) - 4096, "two segments fit");
        let tiny = RingLogOptions { disk_budget_bytes: Some(600 << 10), ..small };
        assert_eq!(tiny.segment_bytes_default(), tiny.segment_bytes_min(), "never below the min");
        tiny.validate().unwrap();
    }
}
