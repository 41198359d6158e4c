//! [`SegmentLog`]: the group-commit log with truncate retention, for engines that persist
//! their data elsewhere and then drop the log records that data covers (the FD+tree's
//! write-ahead log).

use std::sync::Arc;

use lamina_core::Result;
use parking_lot::Mutex;

use super::options::{LogOptions, SegmentLogOptions};
use super::record::{LogOp, Record, SeqNo};
use super::recovery::Sink;
use super::segment_recovery::{Committed, open_segments};
use super::segments::Segments;
use super::stats::LogStats;
use super::writer::{CoreSetup, LogCore};
use crate::backend::Storage;

/// A log of segment files `{prefix}-{index:016x}.seg`: appends are grouped into chunks
/// (group commit), and [`SegmentLog::truncate`] removes the segments whose records the
/// engine has persisted elsewhere. Byte layout: `docs/format/log.md`.
#[derive(Debug)]
pub struct SegmentLog {
    core: LogCore,
    segments: Arc<Mutex<Segments>>,
}

impl SegmentLog {
    /// Opens the log in `storage` (creating it if absent), passes every record to `replay`
    /// in sequence order, and starts the flusher. A future format version or a ring under
    /// the same prefix is [`lamina_core::Error::Incompatible`]; a damaged file header, or a
    /// bad chunk anywhere but a crash's torn tail, is [`lamina_core::Error::Corruption`].
    pub fn open(
        storage: Arc<dyn Storage>,
        options: SegmentLogOptions,
        replay: impl FnMut(Record),
    ) -> Result<SegmentLog> {
        Self::open_from(storage, options, None, replay)
    }

    /// [`SegmentLog::open`] for an engine whose committed state says the log was synced
    /// through sequence number `committed_seq` and needs its records after it: a log that
    /// ends before it (a segment deleted, cut short or damaged where a torn tail would be)
    /// or starts after it (older segments removed) is [`lamina_core::Error::Corruption`]
    /// naming the file, found before anything is changed: no tail is cut and no segment
    /// created.
    pub fn open_committed(
        storage: Arc<dyn Storage>,
        options: SegmentLogOptions,
        committed_seq: SeqNo,
        replay: impl FnMut(Record),
    ) -> Result<SegmentLog> {
        let committed = Committed { applied_seq: committed_seq, synced_seq: committed_seq };
        Self::open_from(storage, options, Some(committed), replay)
    }

    /// [`SegmentLog::open_committed`] for an engine whose committed state needs the records
    /// after `applied_seq` and knows the log was synced through `synced_seq` (at least
    /// `applied_seq`; recorded at a clean close, say), so a log cut anywhere before
    /// `synced_seq` is refused rather than taken for a crash's torn tail.
    pub fn open_committed_through(
        storage: Arc<dyn Storage>,
        options: SegmentLogOptions,
        applied_seq: SeqNo,
        synced_seq: SeqNo,
        replay: impl FnMut(Record),
    ) -> Result<SegmentLog> {
        assert!(synced_seq >= applied_seq, "the log is synced at least through what is applied");
        Self::open_from(storage, options, Some(Committed { applied_seq, synced_seq }), replay)
    }

    /// Every open: `committed` is `None` for a caller without a committed state (no check
    /// of where the log starts or ends).
    fn open_from(
        storage: Arc<dyn Storage>,
        options: SegmentLogOptions,
        committed: Option<Committed>,
        mut replay: impl FnMut(Record),
    ) -> Result<SegmentLog> {
        options.validate()?;
        let opened = open_segments(&storage, &options, committed)?;
        let records_recovered = opened.records.len() as u64;
        for record in opened.records {
            replay(record);
        }
        let Sink::Segments(segments) = &opened.sink else {
            unreachable!("open_segments opens segments")
        };
        let segments = segments.clone();
        let core = LogCore::start(CoreSetup {
            storage,
            options: options.log,
            sink: opened.sink,
            seq_hi: opened.seq_hi,
            records_recovered,
            oracle: None,
            budget: None,
            ring_file: None,
        })?;
        Ok(SegmentLog { core, segments })
    }

    /// Appends `op`; returns its sequence number once the log's durability mode allows
    /// (`Sync`: after the chunk holding it is synced).
    pub fn append(&self, op: LogOp<'_>) -> Result<SeqNo> {
        self.append_with(op, |_| ()).map(|(seq, ())| seq)
    }

    /// Appends `op`, then runs `apply(seq)` once the record is durable per the log's mode
    /// (under `Sync`, after its sync; otherwise at once). If the flush fails, `apply` is not
    /// called and the error returned.
    pub fn append_with<R>(
        &self,
        op: LogOp<'_>,
        apply: impl FnOnce(SeqNo) -> R,
    ) -> Result<(SeqNo, R)> {
        self.core.append_with(op, 0, apply)
    }

    /// Makes every record appended so far durable.
    pub fn sync(&self) -> Result<()> {
        self.core.sync()
    }

    /// Makes the records up to sequence number `upto` durable, without waiting for the
    /// ones appended after them (under `Durability::None` a sync of everything waits for
    /// every queued buffer's write and sync, one by one). An engine committing state that
    /// holds the records through `upto` needs only those: its commit no longer waits for
    /// the writes that went on meanwhile.
    pub fn sync_through(&self, upto: SeqNo) -> Result<()> {
        self.core.sync_through(upto)
    }

    /// Removes the segments whose records all have sequence numbers at or below `upto`
    /// (their effects are persisted elsewhere). Returns segments removed.
    pub fn truncate(&self, upto: SeqNo) -> Result<usize> {
        self.segments.lock().truncate(upto)
    }

    /// Flushes and syncs everything appended, ends the log with a chunk marking the clean
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

    /// Counters of the log.
    pub fn stats(&self) -> LogStats {
        // Waits for the segments' lock, which the flusher holds across a chunk's write and
        // sync: callers on a writer's path use `next_seq`.
        let mut stats = self.core.stats();
        let segments = self.segments.lock();
        stats.segments = segments.count() as u64;
        stats.disk_bytes = segments.data_bytes();
        stats
    }

    /// The writer's counters only (`segments` and `disk_bytes` left 0): unlike
    /// [`SegmentLog::stats`], never waits for a flush in progress.
    pub fn writer_stats(&self) -> LogStats {
        self.core.stats()
    }

    /// The sequence number the next append gets. Unlike [`SegmentLog::stats`], never waits
    /// for a flush in progress.
    pub fn next_seq(&self) -> SeqNo {
        self.core.next_seq()
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
