//! I/O accounting shared by every backend: exact, deterministic counters (issue 3, item 2).
//!
//! Definitions (tests assert on these, so they are precise):
//! - An access (read or write call) of `len > 0` bytes at `offset` touches the blocks
//!   `offset / block_bytes ..= (offset + len - 1) / block_bytes`; all of them are counted.
//!   Zero-length accesses are not counted at all.
//! - An access is *sequential* when it starts exactly where the previous access (read or
//!   write) of the same file ended; a file's first access is sequential iff it starts at 0.
//!   Otherwise it is *random*.
//! - `syncs` counts `sync_data` and `sync_dir` calls.
//! - `files_created` counts files that did not exist before an `open`; `files_deleted` counts
//!   `remove` calls and files replaced by a `rename`.
//! - `live_bytes` is the sum of the lengths of the files reachable by name (a removed file's
//!   handle may still do I/O, which is counted as calls and bytes but not as live bytes);
//!   `live_bytes_peak` is its maximum since the accounting began.
//! - `punches` counts `punch_hole` calls that affected at least one byte (the part of the
//!   range below the file's length); `bytes_punched` sums those parts. A punch is not a read
//!   or a write, is charged no modeled time, and leaves `live_bytes` alone (the length does
//!   not change; allocated space is [`crate::StorageFile::allocated_bytes`]).
//! - `modeled_device_ns` is the time the [`DeviceProfile`] charges for each access and sync;
//!   with `emulate` the accounting also waits that long before returning, so wall-clock runs
//!   reproduce the modeled device.
//!
//! Only successful operations are counted.

use std::collections::HashMap;

use lamina_core::IoStats;
use parking_lot::Mutex;

use crate::device::{AccessKind, DeviceProfile, emulate_latency};

/// Default block size of the accounting and of [`crate::block`]: 4 KiB.
pub const BLOCK_BYTES_DEFAULT: u64 = 4096;

/// Largest block size the accounting accepts.
pub const BLOCK_BYTES_MAX: u64 = 1 << 20;

/// Accounting settings shared by all backends.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountingOptions {
    /// Block size for the `blocks_*` counters; a power of two up to [`BLOCK_BYTES_MAX`].
    pub block_bytes: u64,
    /// The device whose time is modeled into `modeled_device_ns`.
    pub device: DeviceProfile,
    /// Whether to impose the modeled latency for real (sleep/spin on each access).
    pub emulate: bool,
}

impl Default for AccountingOptions {
    fn default() -> Self {
        AccountingOptions {
            block_bytes: BLOCK_BYTES_DEFAULT,
            device: DeviceProfile::host(),
            emulate: false,
        }
    }
}

impl AccountingOptions {
    /// Refuses block sizes that are zero, not a power of two or too large.
    pub fn validate(&self) -> lamina_core::Result<()> {
        if !self.block_bytes.is_power_of_two() || self.block_bytes > BLOCK_BYTES_MAX {
            return Err(lamina_core::Error::option(
                "block_bytes",
                format!(
                    "{} is not a power of two between 1 and {BLOCK_BYTES_MAX}",
                    self.block_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// Identifies a file (an inode, not a name) to the accounting.
pub type FileId = u64;

#[derive(Debug, Clone, Copy)]
struct Track {
    last_end: u64,
    len: u64,
}

#[derive(Debug, Default)]
struct State {
    stats: IoStats,
    files: HashMap<FileId, Track>,
    next_id: FileId,
}

/// The counters of one storage instance. Backends call the `on_*` hooks after each successful
/// operation.
#[derive(Debug)]
pub struct IoAccounting {
    options: AccountingOptions,
    state: Mutex<State>,
}

impl IoAccounting {
    /// Accounting with `options` (validate them first).
    pub fn new(options: AccountingOptions) -> Self {
        assert!(options.block_bytes.is_power_of_two(), "validated by AccountingOptions");
        IoAccounting { options, state: Mutex::new(State::default()) }
    }

    /// The options in force.
    pub fn options(&self) -> &AccountingOptions {
        &self.options
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> IoStats {
        self.state.lock().stats
    }

    /// Registers a file that already existed with `len` bytes; returns its id.
    pub fn on_existing(&self, len: u64) -> FileId {
        let mut state = self.state.lock();
        let id = state.next_id;
        state.next_id += 1;
        state.files.insert(id, Track { last_end: 0, len });
        add_live(&mut state.stats, len);
        id
    }

    /// Registers a newly created (empty) file; returns its id.
    pub fn on_create(&self) -> FileId {
        let id = self.on_existing(0);
        self.state.lock().stats.files_created += 1;
        id
    }

    /// The file `id` was removed (or replaced by a rename).
    pub fn on_remove(&self, id: FileId) {
        let mut state = self.state.lock();
        if let Some(track) = state.files.remove(&id) {
            assert!(state.stats.live_bytes >= track.len, "live bytes below a file's length");
            state.stats.live_bytes -= track.len;
        }
        state.stats.files_deleted += 1;
    }

    /// `len` bytes were read at `offset` of file `id`.
    pub fn on_read(&self, id: FileId, offset: u64, len: usize) {
        self.on_access(id, offset, len, false);
    }

    /// `len` bytes were written at `offset` of file `id`.
    pub fn on_write(&self, id: FileId, offset: u64, len: usize) {
        self.on_access(id, offset, len, true);
    }

    /// File `id` was truncated or extended to `len`.
    pub fn on_set_len(&self, id: FileId, len: u64) {
        let mut state = self.state.lock();
        let Some(track) = state.files.get_mut(&id) else { return };
        let old = std::mem::replace(&mut track.len, len);
        state.stats.live_bytes = state.stats.live_bytes - old + len;
        let live = state.stats.live_bytes;
        state.stats.live_bytes_peak = state.stats.live_bytes_peak.max(live);
    }

    /// `bytes` bytes of a file were deallocated by a hole punch (`bytes > 0`).
    pub fn on_punch(&self, bytes: u64) {
        assert!(bytes > 0, "an empty punch is not counted");
        let mut state = self.state.lock();
        state.stats.punches += 1;
        state.stats.bytes_punched += bytes;
    }

    /// A durability barrier (`sync_data` or `sync_dir`) completed.
    pub fn on_sync(&self) {
        let ns = self.options.device.sync_ns();
        {
            let mut state = self.state.lock();
            state.stats.syncs += 1;
            state.stats.modeled_device_ns += ns;
        }
        if self.options.emulate {
            emulate_latency(ns);
        }
    }

    fn on_access(&self, id: FileId, offset: u64, len: usize, write: bool) {
        if len == 0 {
            return;
        }
        let len = len as u64;
        let end = offset + len;
        let bs = self.options.block_bytes;
        let blocks = (end - 1) / bs - offset / bs + 1;
        let ns;
        {
            let mut state = self.state.lock();
            let mut grown_by = 0;
            let sequential = match state.files.get_mut(&id) {
                Some(track) => {
                    let sequential = track.last_end == offset;
                    track.last_end = end;
                    if write && end > track.len {
                        grown_by = end - track.len;
                        track.len = end;
                    }
                    sequential
                }
                None => false,
            };
            let kind = match (write, sequential) {
                (false, true) => AccessKind::SequentialRead,
                (false, false) => AccessKind::RandomRead,
                (true, true) => AccessKind::SequentialWrite,
                (true, false) => AccessKind::RandomWrite,
            };
            ns = self.options.device.access_ns(kind, offset, len);
            let stats = &mut state.stats;
            match kind {
                AccessKind::SequentialRead => stats.reads_sequential += 1,
                AccessKind::RandomRead => stats.reads_random += 1,
                AccessKind::SequentialWrite => stats.writes_sequential += 1,
                AccessKind::RandomWrite => stats.writes_random += 1,
            }
            if write {
                stats.blocks_written += blocks;
                stats.bytes_written += len;
            } else {
                stats.blocks_read += blocks;
                stats.bytes_read += len;
            }
            stats.modeled_device_ns += ns;
            add_live(stats, grown_by);
        }
        if self.options.emulate {
            emulate_latency(ns);
        }
    }
}

fn add_live(stats: &mut IoStats, bytes: u64) {
    stats.live_bytes += bytes;
    stats.live_bytes_peak = stats.live_bytes_peak.max(stats.live_bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acct() -> IoAccounting {
        IoAccounting::new(AccountingOptions::default())
    }

    #[test]
    fn sequential_means_continuing_the_previous_access() {
        let a = acct();
        let f = a.on_create();
        a.on_write(f, 0, 4096); // first access at 0: sequential
        a.on_write(f, 4096, 100); // continues
        a.on_write(f, 8192, 10); // gap: random
        a.on_read(f, 8202, 5); // continues the write: sequential
        a.on_read(f, 0, 1); // random
        let s = a.stats();
        assert_eq!((s.writes_sequential, s.writes_random), (2, 1));
        assert_eq!((s.reads_sequential, s.reads_random), (1, 1));
        assert_eq!(s.bytes_written, 4206);
        assert_eq!(s.bytes_read, 6);
        assert_eq!(s.blocks_written, 1 + 1 + 1);
        assert_eq!(s.blocks_read, 2);
        assert_eq!(s.files_created, 1);
    }

    #[test]
    fn blocks_touched_count_partial_blocks() {
        let a = acct();
        let f = a.on_create();
        a.on_write(f, 4095, 2); // straddles blocks 0 and 1
        a.on_write(f, 0, 8192); // exactly 2 blocks
        a.on_write(f, 100, 0); // not counted
        let s = a.stats();
        assert_eq!(s.blocks_written, 4);
        assert_eq!(s.writes(), 2);
    }

    #[test]
    fn live_bytes_follow_lengths_and_removals() {
        let a = acct();
        let f = a.on_create();
        let g = a.on_existing(1000);
        a.on_write(f, 0, 5000);
        a.on_write(f, 0, 10); // no growth
        assert_eq!(a.stats().live_bytes, 6000);
        a.on_set_len(f, 100);
        assert_eq!(a.stats().live_bytes, 1100);
        a.on_remove(g);
        a.on_write(g, 0, 50); // removed file: counted as I/O, not as live bytes
        let s = a.stats();
        assert_eq!((s.live_bytes, s.live_bytes_peak), (100, 6000));
        assert_eq!((s.files_created, s.files_deleted), (1, 1));
        assert_eq!(s.writes_random, 2);
    }

    #[test]
    fn punches_are_counted_apart_from_reads_and_writes() {
        let a = acct();
        let f = a.on_create();
        a.on_write(f, 0, 8192);
        a.on_punch(4096);
        a.on_punch(10);
        let s = a.stats();
        assert_eq!((s.punches, s.bytes_punched), (2, 4106));
        assert_eq!((s.writes(), s.reads(), s.live_bytes), (1, 0, 8192));
    }

    #[test]
    fn bad_block_size_is_refused() {
        let mut o = AccountingOptions { block_bytes: 3000, ..AccountingOptions::default() };
        assert!(o.validate().unwrap_err().is_invalid_argument());
        o.block_bytes = 0;
        assert!(o.validate().is_err());
    }
}
