//! State shared by the appenders and the flusher of a log: the write buffers, what is
//! durable, and what failed.
//!
//! Failures come in three kinds:
//! - *sticky* ([`State::failure`]): after an I/O error or corruption the state of the device
//!   is unknown, so the log refuses everything from then on;
//! - *rejected* chunks: under `Sync`, a flush that fails for lack of space (a full device,
//!   or a ring at its disk budget) fails the appends of that chunk, which were not applied
//!   and whose callers are told; the log goes on, and once space is freed the same handle
//!   writes again;
//! - a *stall* ([`State::stalled`]): under `Buffered`/`None`, appends were acknowledged (and
//!   applied) before their flush, so a flush that finds no space keeps their buffer and
//!   retries it; meanwhile new appends and `sync` get the error, and an append first asks
//!   the flusher to retry, so writes resume as soon as space is back.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lamina_core::Error;
use parking_lot::{Condvar, Mutex};

use super::options::{LiveRecords, LogOptions};
use super::record::SeqNo;
use super::stats::LogStats;
use crate::backend::{Storage, StorageFile};

/// A failure, kept so that every waiter gets the same error kind.
#[derive(Debug, Clone)]
pub(super) enum Failure {
    NoSpace(String),
    Io(String),
    /// What [`Error::Corruption`] says.
    Corruption {
        file: std::path::PathBuf,
        offset: u64,
        reason: String,
    },
    Abandoned,
}

impl Failure {
    pub(super) fn from_error(err: &Error) -> Failure {
        match err {
            Error::NoSpace { context } => Failure::NoSpace(context.clone()),
            Error::Corruption { file, offset, reason } => {
                Failure::Corruption { file: file.clone(), offset: *offset, reason: reason.clone() }
            }
            other => Failure::Io(other.to_string()),
        }
    }

    pub(super) fn to_error(&self) -> Error {
        match self {
            Failure::NoSpace(context) => Error::NoSpace { context: context.clone() },
            Failure::Io(what) => Error::io(
                "an earlier log flush failed; the log refuses further writes",
                std::io::Error::other(what.clone()),
            ),
            Failure::Corruption { file, offset, reason } => Error::corruption(
                file.clone(),
                *offset,
                format!("{reason} (found by the log's garbage collection; it refuses writes)"),
            ),
            Failure::Abandoned => Error::Closed,
        }
    }
}

/// The appends of one chunk whose flush failed for lack of space (under `Sync`).
#[derive(Debug)]
pub(super) struct Rejected {
    /// Sequence numbers of the chunk's appends.
    pub seq_lo: SeqNo,
    pub seq_hi: SeqNo,
    pub error: Failure,
    /// Appenders that have not picked up the error yet.
    pub waiters: u32,
}

/// A write buffer taken from the appenders, on its way to becoming a chunk.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) buffer: Vec<u8>,
    /// A split batch one of whose leading parts is in the buffer (`split_append.rs`).
    pub(super) batch_part: Option<SeqNo>,
    pub(super) records: u32,
    pub(super) waiters: u32,
    pub(super) seq_lo: SeqNo,
    pub(super) seq_hi: SeqNo,
    pub(super) generation: u64,
    pub(super) threads: Vec<std::thread::Thread>,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) fill: Vec<u8>,
    pub(super) fill_records: u32,
    pub(super) fill_waiters: u32,
    /// The `Sync` appenders of the fill buffer, woken one by one after its sync.
    pub(super) fill_threads: Vec<std::thread::Thread>,
    pub(super) fill_first_at: Option<Instant>,
    /// First and last sequence numbers in the fill buffer.
    pub(super) fill_seq_lo: SeqNo,
    pub(super) fill_seq_hi: SeqNo,
    pub(super) spare: Vec<u8>,
    /// Full buffers taken out of the way of the appenders while the flusher was busy, oldest
    /// first, to be written before the fill buffer (`Inner::queued_buffers_max`).
    pub(super) queued: VecDeque<Pending>,
    /// Generation of the fill buffer; buffer `g` is chunk `g` (plus carried records).
    pub(super) gen_fill: u64,
    pub(super) next_seq: SeqNo,
    pub(super) durable_seq: SeqNo,
    /// Every sequence number at or below this is durable or was rejected: what `sync`
    /// waits for.
    pub(super) settled_seq: SeqNo,
    /// `Sync` writers in the last flushed chunk: the group the next flush waits for.
    pub(super) expected_writers: u32,
    /// How long the last write+sync took: the group-commit timeout adapts to it.
    pub(super) last_flush: Duration,
    pub(super) space_waiters: u32,
    pub(super) sync_waiters: u32,
    pub(super) failure: Option<Failure>,
    /// A flush under `Buffered`/`None` that found no space; its buffer is retried.
    pub(super) stalled: Option<Failure>,
    /// Appenders waiting for the flusher to retry a stalled flush.
    pub(super) retry_waiters: u32,
    /// Retries of a stalled flush asked for so far (by appenders).
    pub(super) retries_asked: u64,
    /// The last of `retries_asked` that a retry started after has answered (a retry
    /// already under way when an appender asks does not answer it: space may have come
    /// back since it started).
    pub(super) retries_answered: u64,
    pub(super) closing: bool,
    pub(super) closed: bool,
    pub(super) flusher_idle: bool,
    pub(super) stats: LogStats,
    /// The split batch (its sequence number) placing its records: no other append may come
    /// between them (`split_append.rs`).
    pub(super) split_batch_placing: Option<SeqNo>,
    /// The split batch (its sequence number) one of whose leading parts is in the fill
    /// buffer: if that buffer's chunk is rejected, the batch is lost.
    pub(super) fill_batch_part: Option<SeqNo>,
    /// The split batch a rejected chunk held a part of, and why.
    pub(super) split_batch_lost: Option<(SeqNo, Failure)>,
    /// Every generation up to this one is durable or was rejected.
    pub(super) settled_gen: u64,
}

impl State {
    pub(super) fn new(options: &LogOptions, seq_hi: SeqNo, stats: LogStats) -> State {
        State {
            fill: Vec::with_capacity(options.buffer_bytes),
            fill_records: 0,
            fill_waiters: 0,
            fill_threads: Vec::new(),
            fill_first_at: None,
            fill_seq_lo: seq_hi + 1,
            fill_seq_hi: seq_hi,
            spare: Vec::with_capacity(options.buffer_bytes),
            queued: VecDeque::new(),
            gen_fill: 1,
            next_seq: seq_hi + 1,
            durable_seq: seq_hi,
            settled_seq: seq_hi,
            expected_writers: 1,
            last_flush: Duration::ZERO,
            space_waiters: 0,
            sync_waiters: 0,
            failure: None,
            stalled: None,
            retry_waiters: 0,
            retries_asked: 0,
            retries_answered: 0,
            closing: false,
            closed: false,
            flusher_idle: false,
            stats,
            split_batch_placing: None,
            fill_batch_part: None,
            split_batch_lost: None,
            settled_gen: 0,
        }
    }
}

/// The disk budget as appenders check it (rings only).
#[derive(Debug)]
pub(super) struct Budget {
    /// Most live bytes writes that add data may reach.
    pub live_bytes_max: u64,
    /// The budget and the ring's file, for the error.
    pub disk_budget_bytes: u64,
    pub path: std::path::PathBuf,
}

#[derive(Debug)]
pub(super) struct Inner {
    pub(super) state: Mutex<State>,
    /// The flusher waits here for work.
    pub(super) work_cv: Condvar,
    /// Mirror of `State::durable_seq`, read without the state lock.
    pub(super) durable: AtomicU64,
    /// Whether `State::failure` is set.
    pub(super) failed: AtomicBool,
    /// Chunks rejected for lack of space whose appenders have not all been told.
    pub(super) rejected: Mutex<Vec<Rejected>>,
    /// Whether `rejected` is not empty (checked without its lock).
    pub(super) any_rejected: AtomicBool,
    /// Appends placed but not finished (applied), per generation.
    pub(super) unapplied: Mutex<BTreeMap<u64, u32>>,
    /// Appenders waiting for buffer space, `sync` callers, `close`.
    pub(super) progress_cv: Condvar,
    /// The flusher waits here (with `unapplied`) for engines to apply flushed operations.
    pub(super) applied_cv: Condvar,
    /// Appenders between entering `append` and placing their record.
    pub(super) arriving: AtomicUsize,
    /// `Sync` appenders waiting for their record to be durable.
    pub(super) sync_waiting: AtomicUsize,
    /// Cores of the machine (`available_parallelism`, at least 1).
    pub(super) cores: usize,
    /// `Sync` waits that yielded at all (`LogStats::sync_waits_yielded`).
    pub(super) waits_yielded: AtomicU64,
    /// `Sync` waits not durable when yielding ended (`LogStats::sync_waits_parked`).
    pub(super) waits_parked: AtomicU64,
    /// The storage asks for lockstep (`Storage::lockstep`): no timer starts a flush or a
    /// retry, and a ring's read-ahead collection finishes before a chunk's writers are told
    /// it is durable.
    pub(super) lockstep: bool,
    /// How many full buffers may wait for the flusher instead of their appenders
    /// (`writer.rs`, `QUEUED_BUFFERS_MAX`; 0: appenders wait for the spare buffer).
    pub(super) queued_buffers_max: usize,
    pub(super) options: LogOptions,
    /// The engine's liveness oracle (rings only).
    pub(super) oracle: Option<Arc<dyn LiveRecords>>,
    /// Live bytes that appends checked against the disk budget will add once applied (the
    /// oracle does not count them yet).
    pub(super) growth_in_flight: AtomicU64,
    pub(super) budget: Option<Budget>,
    /// The ring file (rings only), for its allocated bytes.
    pub(super) ring_file: Option<Arc<dyn StorageFile>>,
    /// The generation of the first part of a split batch not applied yet (0: none). The
    /// batch is applied only once its last record is durable, so the flusher does not wait
    /// for it to be applied before that: waiting could only time out.
    pub(super) split_batch_generation: AtomicU64,
    pub(super) storage: Arc<dyn Storage>,
}

impl std::fmt::Debug for dyn LiveRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveRecords")
    }
}

impl Inner {
    /// The rejection of the append with sequence number `seq`, if its chunk was rejected;
    /// each appender of such a chunk takes it once.
    pub(super) fn take_rejection(&self, seq: SeqNo) -> Option<Error> {
        if !self.any_rejected.load(Ordering::Acquire) {
            return None;
        }
        let mut rejected = self.rejected.lock();
        let i = rejected.iter().position(|r| (r.seq_lo..=r.seq_hi).contains(&seq))?;
        let error = rejected[i].error.to_error();
        rejected[i].waiters -= 1;
        if rejected[i].waiters == 0 {
            rejected.swap_remove(i);
        }
        if rejected.is_empty() {
            self.any_rejected.store(false, Ordering::Release);
        }
        Some(error)
    }

    /// Whether the append with sequence number `seq` was rejected (without taking it).
    pub(super) fn is_rejected(&self, seq: SeqNo) -> bool {
        self.any_rejected.load(Ordering::Acquire)
            && self.rejected.lock().iter().any(|r| (r.seq_lo..=r.seq_hi).contains(&seq))
    }
}
