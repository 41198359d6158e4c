//! [`RingLog`]: the coalesced cyclic log of the SIGMOD 2011 contest paper (section 3), for
//! engines whose whole state is in memory and whose log is their only persistent copy
//! (`trie`, `mem`). Its ring of segments grows with the live records and shrinks after
//! deletes (`ring/layout.rs`); garbage collection asks the engine's [`LiveRecords`] oracle,
//! which is therefore required to open it.

use std::sync::Arc;

use lamina_core::Result;

use super::options::{LiveRecords, LogOptions, RingLogOptions, live_bytes_max};
use super::record::{LogOp, Record, SeqNo};
use super::recovery::Sink;
use super::ring_recovery::{OpenedRing, active_max, open_ring};
use super::shared::Budget;
use super::stats::LogStats;
use super::writer::{CoreSetup, LogCore};
use crate::backend::Storage;

/// The ring log (see the module documentation; byte layout in `docs/format/log.md`).
///
/// The engine's liveness oracle is an argument of [`RingLog::open`], so no record can be
/// appended or collected before it is there (collecting without it would copy puts past
/// later deletes). A ring collects its own garbage; it cannot be truncated:
///
/// ```compile_fail
/// fn drop_old(log: &lamina_storage::log::RingLog) {
///     log.truncate(7); // only a SegmentLog has truncate
/// }
/// ```
///
/// ```compile_fail
/// use std::sync::Arc;
/// use lamina_storage::log::{RingLog, RingLogOptions};
/// use lamina_storage::{MemoryStorage, Storage};
/// let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
/// // No oracle, no ring.
/// let log = RingLog::open(storage, RingLogOptions::default(), |_| {});
/// ```
#[derive(Debug)]
pub struct RingLog {
    core: LogCore,
    clean: bool,
}

impl RingLog {
    /// Opens the ring in `storage` (creating it if absent and `options.intent` allows),
    /// passes every record to `replay` in sequence order (the engine rebuilds the state
    /// `oracle` answers for), and starts the flusher. A file that is not a lamina log, a
    /// future format version, or segments under the same prefix is
    /// [`lamina_core::Error::Incompatible`]; a missing or truncated ring that must exist, or
    /// a bad chunk anywhere but a crash's torn tail, is [`lamina_core::Error::Corruption`].
    pub fn open(
        storage: Arc<dyn Storage>,
        options: RingLogOptions,
        oracle: Arc<dyn LiveRecords>,
        mut replay: impl FnMut(Record),
    ) -> Result<RingLog> {
        options.validate()?;
        let OpenedRing { opened, clean } = open_ring(&storage, &options)?;
        let records_recovered = opened.records.len() as u64;
        for record in opened.records {
            replay(record);
        }
        let Sink::Ring(ring) = &opened.sink else { unreachable!("open_ring opens a ring") };
        let segment_bytes = ring.segment_bytes();
        let budget = options.disk_budget_bytes.map(|disk_budget_bytes| Budget {
            live_bytes_max: live_bytes_max(
                active_max(Some(disk_budget_bytes), segment_bytes) * segment_bytes,
                ring.chunk_bytes_max(),
            ),
            disk_budget_bytes,
            path: storage.path_of(&super::recovery::ring_name(&options.log.file_prefix)),
        });
        let ring_file = Some(ring.file().clone());
        let core = LogCore::start(CoreSetup {
            storage,
            options: options.log,
            sink: opened.sink,
            seq_hi: opened.seq_hi,
            records_recovered,
            oracle: Some(oracle),
            budget,
            ring_file,
        })?;
        Ok(RingLog { core, clean })
    }

    /// Appends `op`; returns its sequence number once the log's durability mode allows
    /// (`Sync`: after the chunk holding it is synced). `live_delta` as in
    /// [`RingLog::append_with`].
    pub fn append(&self, op: LogOp<'_>, live_delta: i64) -> Result<SeqNo> {
        self.append_with(op, live_delta, |_| ()).map(|(seq, ())| seq)
    }

    /// Appends `op`, then runs `apply(seq)` once the record is durable per the log's mode
    /// (under `Sync`, after its sync; otherwise at once) and before the append counts as
    /// finished. The engine applies its in-memory change inside `apply`, so garbage
    /// collection never sees the log ahead of the engine. `apply` must not wait for other
    /// appends. If the flush fails, `apply` is not called and the error returned.
    ///
    /// `live_delta` is how many bytes the write adds to the engine's live records (as
    /// [`LiveRecords::live_bytes`] counts them; negative if it frees some): at the disk
    /// budget, a write with `live_delta > 0` is refused with `NoSpace` before anything
    /// happens, while deletes and overwrites that do not grow the data are accepted.
    pub fn append_with<R>(
        &self,
        op: LogOp<'_>,
        live_delta: i64,
        apply: impl FnOnce(SeqNo) -> R,
    ) -> Result<(SeqNo, R)> {
        self.core.append_with(op, live_delta, apply)
    }

    /// Makes every record appended so far durable.
    pub fn sync(&self) -> Result<()> {
        self.core.sync()
    }

    /// Flushes and syncs everything appended, ends the ring with a chunk marking the clean
    /// close, stops the flusher, and refuses further appends with
    /// [`lamina_core::Error::Closed`]. Idempotent.
    pub fn close(&self) -> Result<()> {
        self.core.close()
    }

    /// Stops the flusher without flushing the fill buffer: what a crash leaves behind.
    /// For crash tests; the log is closed afterwards.
    pub fn abandon(&self) {
        self.core.abandon();
    }

    /// Whether the ring was closed cleanly last time (its newest chunk marks a clean close).
    pub fn opened_after_clean_close(&self) -> bool {
        self.clean
    }

    /// Counters of the log.
    pub fn stats(&self) -> LogStats {
        self.core.stats()
    }

    /// The storage the log writes to (for its I/O counters).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        self.core.storage()
    }

    /// The log's options.
    pub fn options(&self) -> &LogOptions {
        self.core.options()
    }
}
