//! Counters of the log.

use super::record::SeqNo;

/// What [`crate::log::Log::stats`] reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogStats {
    /// Records appended since open.
    pub appends: u64,
    /// Records read back by recovery at open.
    pub records_recovered: u64,
    /// Full buffers queued for the flusher instead of making an appender wait
    /// (`Buffered`/`None` segment logs, `writer.rs`).
    pub buffers_queued: u64,
    /// The most buffers queued at once.
    pub queued_buffers_peak: u64,
    /// New records written in chunks (garbage-collected copies not included).
    pub records_written: u64,
    /// Flush rounds (each ends with one `fdatasync`; a round may write a carry-only chunk
    /// first when the ring is short of space).
    pub chunks_written: u64,
    /// Flush rounds completed with `fdatasync`.
    pub syncs: u64,
    /// Bytes written in chunks (headers and padding included).
    pub bytes_written: u64,
    /// Nanoseconds the flusher spent writing and syncing chunks (the device's busy time on
    /// behalf of the log): `flush_ns / wall time` is the fraction of the raw write+sync rate
    /// the log reaches, measured at the same device speed.
    pub flush_ns: u64,
    /// Most new records in one flush.
    pub sync_records_max: u64,
    /// Cyclic: chunks read back and collected.
    pub gc_chunks_collected: u64,
    /// Cyclic: live records re-appended.
    pub gc_records_copied: u64,
    /// Cyclic: bytes of re-appended records.
    pub gc_bytes_copied: u64,
    /// Cyclic: records (and batch operations) found dead and dropped.
    pub gc_records_dropped: u64,
    /// `Sync` appends whose appender yielded its core while it waited (see
    /// `LogOptions::sync_wait_yield_max`).
    pub sync_waits_yielded: u64,
    /// `Sync` appends whose record was still not durable when yielding ended (or was not
    /// tried): the appender then sleeps and costs a wake-up (or fails, if the log failed).
    pub sync_waits_parked: u64,
    /// Bytes of the log holding records recovery would read (ring: its window).
    pub disk_bytes: u64,
    /// Ring: bytes the ring file takes on the device (its allocated blocks).
    pub file_bytes_allocated: u64,
    /// Ring: active segments (the ring's size is `ring_segments * ring_segment_bytes`).
    pub ring_segments: u64,
    /// Ring: bytes of the active segments.
    pub ring_bytes: u64,
    /// Ring: bytes of one segment.
    pub ring_segment_bytes: u64,
    /// Ring: segments added since open (growth).
    pub ring_segments_grown: u64,
    /// Ring: segments retired (punched out) since open (shrinking).
    pub ring_segments_retired: u64,
    /// Ring: live bytes as the engine reports them ([`crate::log::LiveRecords::live_bytes`]).
    pub live_bytes: u64,
    /// Flushes that found no space (a full device, or a ring at its disk budget): rejected
    /// under `Sync`, retried otherwise.
    pub flushes_without_space: u64,
    /// Truncate: segment files.
    pub segments: u64,
    /// Next sequence number to assign.
    pub next_seq: SeqNo,
    /// Every record with a sequence number at or below this is durable.
    pub durable_seq: SeqNo,
}

impl LogStats {
    /// Average new records per `fdatasync`.
    pub fn records_per_sync(&self) -> f64 {
        if self.syncs == 0 { 0.0 } else { self.records_written as f64 / self.syncs as f64 }
    }
}
