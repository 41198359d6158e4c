//! The group-commit writer both logs share: many threads append, one flusher thread writes
//! chunks.
//!
//! Write coalescing of the SIGMOD 2011 contest paper (section 3, Figure 5): appenders put
//! their records into the fill buffer; the flusher turns the buffer into one 4 KiB-aligned,
//! CRC32C-protected chunk when it is full, when no other writer is pending, or when the
//! group-commit timeout expires, and ends each flush with `fdatasync`. Unlike the paper's
//! single buffer, there are two: the flusher swaps the filled buffer out under the lock and
//! writes and syncs it without the lock, so appenders fill the next buffer during the sync
//! (the paper's *Fill* and *Flush* phases overlap). Garbage collection of a ring runs on the
//! flusher too, after waking the writers, off their latency path.
//!
//! A `Sync` appender waits for its chunk by yielding its core first (while more appenders
//! wait than there are cores, up to `LogOptions::sync_wait_yield_max`), then parking: with
//! many client threads on few cores, a durable write then costs no sleep/wake pair
//! (measured in `docs/results/trie.md`).
//!
//! Under `Buffered` and `None` an appender that finds both buffers taken (the fill buffer
//! full while the flusher still writes and syncs the other) does not wait: the full buffer
//! joins a queue the flusher empties first, in order, and the appender starts a new one, up
//! to [`QUEUED_BUFFERS_MAX`] queued buffers. Those appends are acknowledged before they are
//! durable anyway, and chunks are still written and synced one after the other, so what a
//! crash leaves is still a prefix; what changes is that a sync held up behind the device's
//! writeback (68 ms seen beside fdtree's merges, 46 ms beside nbtree's flushes:
//! `docs/results/scale.md`, `docs/results/nbtree.md`) no longer stops the writers, as long as
//! the device keeps up on average. Segment logs only: a ring's space is reclaimed one chunk
//! at a time by collection, which the queue would outrun; and not in lockstep, where whether
//! the flusher is still busy must not decide anything.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lamina_core::limits::{check_key, check_value};
use lamina_core::{DISK_BUDGET_OPTION, Durability, Error, InvalidArgument, Result};
use parking_lot::{Condvar, Mutex};

use super::flusher::{flush_decision, flusher_loop, set_failure, take_fill};
use super::options::{LiveRecords, LogOptions};
use super::record::{LogOp, SeqNo};
use super::recovery::Sink;
use super::shared::{Budget, Failure, Inner, State};
use super::stats::LogStats;
use crate::backend::{Storage, StorageFile};

/// Shortest group-commit timeout (see `LogOptions::linger_max` for the longest).
pub(super) const LINGER_MIN: Duration = Duration::from_micros(50);

/// Full write buffers that may wait for the flusher (under `Buffered`/`None`, segment logs):
/// with the default 4 MiB buffers, 64 MiB of acknowledged records at most, which a writer
/// appending 75 MB/s (500,000 puts/s of 150 bytes) fills in about 0.9 s.
pub const QUEUED_BUFFERS_MAX: usize = 16;

/// How many buffers may be queued for a log with `options` writing to `sink`.
fn queued_buffers_max(options: &LogOptions, sink: &Sink, lockstep: bool) -> usize {
    let segments = matches!(sink, Sink::Segments(_));
    if options.durability == Durability::Sync || !segments || lockstep {
        0
    } else {
        QUEUED_BUFFERS_MAX
    }
}

/// How often a parked `Sync` writer re-checks for a failure nobody woke it for.
const FAILURE_RECHECK: Duration = Duration::from_millis(50);

/// How long garbage collection waits for engines to apply flushed operations before it
/// postpones (it never collects on a stale view of the engine).
pub(super) const APPLY_WAIT: Duration = Duration::from_millis(200);

/// The flusher thread: [`flusher_loop`], and if it panics (a bug, or an engine's oracle
/// panicking), a sticky failure that every waiter sees instead of waiting forever.
fn run_flusher(inner: &Inner, sink: Sink) {
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flusher_loop(inner, sink)));
    if let Err(panic) = ran {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let mut st = inner.state.lock();
        if st.failure.is_none() {
            set_failure(inner, &mut st, Failure::Io(format!("the log's flusher panicked: {what}")));
        }
    }
}

/// What a log type hands to [`LogCore::start`] once its files are open and replayed.
#[derive(Debug)]
pub(super) struct CoreSetup {
    pub storage: Arc<dyn Storage>,
    pub options: LogOptions,
    pub sink: Sink,
    pub seq_hi: SeqNo,
    pub records_recovered: u64,
    pub oracle: Option<Arc<dyn LiveRecords>>,
    pub budget: Option<Budget>,
    pub ring_file: Option<Arc<dyn StorageFile>>,
}

/// The group-commit writer and its flusher (see the module documentation).
#[derive(Debug)]
pub(super) struct LogCore {
    pub(super) inner: Arc<Inner>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

fn check_op(op: &LogOp<'_>) -> Result<()> {
    match op {
        LogOp::Put { key, value } => {
            check_key(key)?;
            check_value(value)
        }
        LogOp::Delete { key } => check_key(key),
        LogOp::Batch(batch) => batch.validate(),
        LogOp::BatchPart(_) => Err(Error::InvalidArgument(InvalidArgument::Option {
            name: "log record",
            reason: "a batch part is written by the log when it splits a batch, not appended"
                .into(),
        })),
    }
}

impl LogCore {
    /// Starts the flusher over an opened (and replayed) log.
    pub(super) fn start(setup: CoreSetup) -> Result<LogCore> {
        let CoreSetup { storage, options, sink, seq_hi, records_recovered, oracle, budget, .. } =
            setup;
        let live_bytes = oracle.as_ref().map_or(0, |o| o.live_bytes());
        let stats = LogStats { records_recovered, ..LogStats::default() };
        let inner = Arc::new(Inner {
            state: Mutex::new(State::new(&options, seq_hi, stats)),
            work_cv: Condvar::new(),
            durable: AtomicU64::new(seq_hi),
            failed: AtomicBool::new(false),
            rejected: Mutex::new(Vec::new()),
            any_rejected: AtomicBool::new(false),
            unapplied: Mutex::new(BTreeMap::new()),
            progress_cv: Condvar::new(),
            applied_cv: Condvar::new(),
            arriving: AtomicUsize::new(0),
            sync_waiting: AtomicUsize::new(0),
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            waits_yielded: AtomicU64::new(0),
            waits_parked: AtomicU64::new(0),
            lockstep: storage.lockstep(),
            queued_buffers_max: queued_buffers_max(&options, &sink, storage.lockstep()),
            options,
            oracle,
            growth_in_flight: AtomicU64::new(0),
            split_batch_generation: AtomicU64::new(0),
            budget,
            ring_file: setup.ring_file,
            storage,
        });
        let flusher_inner = inner.clone();
        let mut sink = sink;
        if let Sink::Ring(ring) = &mut sink {
            ring.set_live_bytes(live_bytes);
            if inner.options.durability != Durability::Sync {
                ring.set_apply_before_durable(inner.options.buffer_bytes);
            }
        }
        let handle = std::thread::Builder::new()
            .name("lamina-log-flusher".into())
            .spawn(move || run_flusher(&flusher_inner, sink))
            .map_err(|e| Error::io("starting the log flusher thread", e))?;
        Ok(LogCore { inner, flusher: Mutex::new(Some(handle)) })
    }

    /// Refuses a write that adds `live_delta > 0` bytes of live data past the disk budget;
    /// otherwise reserves them until the write is applied (or fails), so that concurrent
    /// writers cannot all pass the check. Returns the bytes reserved.
    pub(super) fn check_budget(&self, live_delta: i64) -> Result<u64> {
        let (Some(budget), Ok(delta @ 1..)) = (&self.inner.budget, u64::try_from(live_delta))
        else {
            return Ok(0);
        };
        let oracle = self.inner.oracle.as_deref().expect("a budget belongs to a ring");
        let live = oracle.live_bytes() + self.inner.growth_in_flight.load(Ordering::Relaxed);
        if live.saturating_add(delta) > budget.live_bytes_max {
            return Err(Error::NoSpace {
                context: format!(
                    "the log ring {} is at its disk budget of {} bytes: its live records \
                     ({live} bytes) may take at most {} bytes of it, so this write adding \
                     {delta} bytes is refused (deletes and overwrites that do not grow the \
                     data are still accepted); delete data or raise {DISK_BUDGET_OPTION}",
                    budget.path.display(),
                    budget.disk_budget_bytes,
                    budget.live_bytes_max,
                ),
            });
        }
        self.inner.growth_in_flight.fetch_add(delta, Ordering::Relaxed);
        Ok(delta)
    }

    /// Appends `op`, then runs `apply(seq)` once the record is durable per the log's mode
    /// (under `Sync`, after its sync; otherwise at once) and before the append counts as
    /// finished. `live_delta`: bytes of live data the write adds (rings check it against
    /// the disk budget; 0 or less is never refused for space). If the flush fails, `apply`
    /// is not called and the error returned.
    pub(super) fn append_with<R>(
        &self,
        op: LogOp<'_>,
        live_delta: i64,
        apply: impl FnOnce(SeqNo) -> R,
    ) -> Result<(SeqNo, R)> {
        check_op(&op)?;
        let inner = &*self.inner;
        let len = op.encoded_len();
        if len > inner.options.buffer_bytes {
            // Only a batch can be this large (the largest put fits the smallest buffer).
            let LogOp::Batch(batch) = op else { unreachable!("only a batch exceeds a buffer") };
            return self.append_split(batch, live_delta, apply);
        }
        let reserved = self.check_budget(live_delta)?;
        let release = || {
            if reserved > 0 {
                inner.growth_in_flight.fetch_sub(reserved, Ordering::Relaxed);
            }
        };
        let sync = inner.options.durability == Durability::Sync;
        inner.arriving.fetch_add(1, Ordering::SeqCst);
        let mut st = inner.state.lock();
        loop {
            if let Some(err) = refusal(inner, &mut st) {
                inner.arriving.fetch_sub(1, Ordering::SeqCst);
                release();
                return Err(err);
            }
            if st.split_batch_placing.is_some() {
                // A split batch's records go into the log one after the other, nothing
                // between them (`split_append.rs`).
                inner.progress_cv.wait(&mut st);
                continue;
            }
            if st.fill.len() + len <= inner.options.buffer_bytes {
                break;
            }
            if st.queued.len() < inner.queued_buffers_max
                && st.fill_records > 0
                && st.fill_batch_part.is_none()
                && st.stalled.is_none()
            {
                // The flusher is behind (the spare is still being written): the full buffer
                // waits for it instead of this appender.
                let full = take_fill(inner, &mut st);
                st.queued.push_back(full);
                st.stats.buffers_queued += 1;
                st.stats.queued_buffers_peak =
                    st.stats.queued_buffers_peak.max(st.queued.len() as u64);
                if st.flusher_idle {
                    inner.work_cv.notify_one();
                }
                continue;
            }
            st.space_waiters += 1;
            if st.flusher_idle {
                inner.work_cv.notify_one();
            }
            inner.progress_cv.wait(&mut st);
            st.space_waiters -= 1;
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        op.encode_to(seq, &mut st.fill);
        if st.fill_records == 0 {
            st.fill_seq_lo = seq;
        }
        st.fill_records += 1;
        st.fill_seq_hi = seq;
        if st.fill_first_at.is_none() {
            st.fill_first_at = Some(Instant::now());
        }
        let generation = st.gen_fill;
        *inner.unapplied.lock().entry(generation).or_insert(0) += 1;
        st.stats.appends += 1;
        if sync {
            st.fill_waiters += 1;
            st.fill_threads.push(std::thread::current());
        }
        inner.arriving.fetch_sub(1, Ordering::SeqCst);
        // The flusher is woken only when its decision may have changed: a buffer's first
        // record starts its deadline, and a flush may now be due. Waking it on every append
        // made it take this lock once per record, and a flusher preempted while holding it
        // stalled writers for a whole time slice.
        if st.flusher_idle
            && (st.fill_records == 1 || flush_decision(inner, &st, Instant::now()).is_ok())
        {
            inner.work_cv.notify_one();
        }
        drop(st);
        let mut outcome = Ok(());
        if sync {
            outcome = wait_durable(inner, seq);
        }
        let applied = outcome.map(|()| apply(seq));
        release();
        let mut unapplied = inner.unapplied.lock();
        let left = unapplied.get_mut(&generation).expect("placed appends are counted");
        *left -= 1;
        if *left == 0 {
            unapplied.remove(&generation);
            inner.applied_cv.notify_all();
        }
        drop(unapplied);
        applied.map(|r| (seq, r))
    }

    /// Makes every record appended so far durable (records whose chunk was rejected for
    /// lack of space were reported to their appenders and are not waited for).
    pub(super) fn sync(&self) -> Result<()> {
        self.sync_through(SeqNo::MAX)
    }

    /// [`LogCore::sync`] for the records up to sequence number `upto` only: the records
    /// appended after them are not waited for.
    pub(super) fn sync_through(&self, upto: SeqNo) -> Result<()> {
        let inner = &*self.inner;
        let mut st = inner.state.lock();
        if inner.lockstep
            && st.stalled.is_some()
            && let Some(err) = retry_stalled(inner, &mut st)
        {
            // In lockstep a stalled flush is retried only when asked: a sync that finds
            // one asks once (a stall while it waits is its answer, retried by the next call).
            return Err(err);
        }
        let target = upto.min(st.next_seq - 1);
        st.sync_waiters += 1;
        let result = loop {
            if st.settled_seq >= target {
                break Ok(());
            }
            if let Some(failure) = &st.failure {
                break Err(failure.to_error());
            }
            if let Some(stalled) = &st.stalled {
                break Err(stalled.to_error());
            }
            if st.closed {
                break Err(Error::Closed);
            }
            if st.flusher_idle {
                inner.work_cv.notify_one();
            }
            inner.progress_cv.wait(&mut st);
        };
        st.sync_waiters -= 1;
        result
    }

    /// Flushes and syncs everything appended (and marks the log cleanly closed), stops the
    /// flusher, and refuses further appends with [`Error::Closed`]. Idempotent.
    pub(super) fn close(&self) -> Result<()> {
        self.stop(false)
    }

    /// Stops the flusher without flushing the fill buffer: what a crash leaves behind.
    /// For crash tests; the log is closed afterwards.
    pub(super) fn abandon(&self) {
        let _ = self.stop(true);
    }

    fn stop(&self, abandon: bool) -> Result<()> {
        {
            let mut st = self.inner.state.lock();
            if abandon && st.failure.is_none() {
                set_failure(&self.inner, &mut st, Failure::Abandoned);
            }
            st.closing = true;
            self.inner.work_cv.notify_all();
            self.inner.progress_cv.notify_all();
        }
        if let Some(handle) = self.flusher.lock().take() {
            let _ = handle.join();
        }
        let mut st = self.inner.state.lock();
        st.closed = true;
        self.inner.progress_cv.notify_all();
        match &st.failure {
            Some(Failure::Abandoned) | None => Ok(()),
            Some(failure) => Err(failure.to_error()),
        }
    }

    /// The sequence number the next append gets (one lock, held for a load).
    pub(super) fn next_seq(&self) -> SeqNo {
        self.inner.state.lock().next_seq
    }

    /// Counters of the log.
    pub(super) fn stats(&self) -> LogStats {
        let st = self.inner.state.lock();
        let mut stats = st.stats.clone();
        stats.next_seq = st.next_seq;
        stats.durable_seq = st.durable_seq;
        drop(st);
        stats.sync_waits_yielded = self.inner.waits_yielded.load(Ordering::Relaxed);
        stats.sync_waits_parked = self.inner.waits_parked.load(Ordering::Relaxed);
        if let Some(file) = &self.inner.ring_file {
            stats.file_bytes_allocated = file.allocated_bytes().unwrap_or(0);
        }
        if let Some(oracle) = &self.inner.oracle {
            stats.live_bytes = oracle.live_bytes();
        }
        stats
    }

    /// The storage the log writes to (for its I/O counters).
    pub(super) fn storage(&self) -> &Arc<dyn Storage> {
        &self.inner.storage
    }

    /// The log's options.
    pub(super) fn options(&self) -> &LogOptions {
        &self.inner.options
    }
}

/// Why an append cannot go on now (a failure, a close, a stall that a retry did not end).
pub(super) fn refusal(inner: &Inner, st: &mut parking_lot::MutexGuard<'_, State>) -> Option<Error> {
    if let Some(failure) = &st.failure {
        Some(failure.to_error())
    } else if st.closing || st.closed {
        Some(Error::Closed)
    } else if st.stalled.is_some() {
        retry_stalled(inner, st)
    } else {
        None
    }
}

/// Asks the flusher to retry a stalled flush and waits for that attempt; `Some(error)` if
/// the log is still stalled (or failed, or closing) afterwards, `None` if it resumed.
fn retry_stalled(inner: &Inner, st: &mut parking_lot::MutexGuard<'_, State>) -> Option<Error> {
    st.retries_asked += 1;
    let asked = st.retries_asked;
    st.retry_waiters += 1;
    inner.work_cv.notify_one();
    while st.stalled.is_some() && st.retries_answered < asked && st.failure.is_none() && !st.closing
    {
        inner.progress_cv.wait(st);
    }
    st.retry_waiters -= 1;
    if let Some(failure) = &st.failure {
        return Some(failure.to_error());
    }
    st.stalled.as_ref().map(Failure::to_error)
}

/// Waits (yielding, then parked) until record `seq` is durable; its chunk's rejection or
/// the log's failure is returned instead.
pub(super) fn wait_durable(inner: &Inner, seq: SeqNo) -> Result<()> {
    inner.sync_waiting.fetch_add(1, Ordering::Relaxed);
    if yield_until_durable(inner, seq) {
        inner.waits_yielded.fetch_add(1, Ordering::Relaxed);
    }
    if inner.durable.load(Ordering::Acquire) < seq {
        inner.waits_parked.fetch_add(1, Ordering::Relaxed);
    }
    let mut outcome = Ok(());
    // Parked, not on a condition variable: the flusher unparks each waiter directly, so a
    // woken group does not file through one mutex (group-commit turnaround).
    while inner.durable.load(Ordering::Acquire) < seq {
        if inner.failed.load(Ordering::Acquire) {
            let st = inner.state.lock();
            outcome = Err(st.failure.as_ref().expect("failed is set").to_error());
            break;
        }
        if inner.is_rejected(seq) {
            break;
        }
        // Timed: a flusher that died without waking this thread (a panic while the chunk
        // was in flight) is still noticed.
        std::thread::park_timeout(FAILURE_RECHECK);
    }
    inner.sync_waiting.fetch_sub(1, Ordering::Relaxed);
    // A rejected chunk's appends fail even if a later chunk is durable by now.
    match inner.take_rejection(seq) {
        Some(err) => Err(err),
        None => outcome,
    }
}

/// Yields the core while record `seq` is not durable yet, for at most
/// `LogOptions::sync_wait_yield_max` and only while more `Sync` appenders wait than there are
/// cores (see that option); returns whether it yielded at all. The caller parks afterwards
/// if the record is still not durable.
fn yield_until_durable(inner: &Inner, seq: SeqNo) -> bool {
    let yield_max = inner.options.sync_wait_yield_max;
    if yield_max.is_zero() {
        return false;
    }
    let until = Instant::now() + yield_max;
    let mut yielded = false;
    while inner.durable.load(Ordering::Acquire) < seq
        && !inner.failed.load(Ordering::Acquire)
        && !inner.any_rejected.load(Ordering::Acquire)
        && inner.sync_waiting.load(Ordering::Relaxed) > inner.cores
        && Instant::now() < until
    {
        std::thread::yield_now();
        yielded = true;
    }
    yielded
}

impl Drop for LogCore {
    fn drop(&mut self) {
        let _ = self.stop(false);
    }
}
