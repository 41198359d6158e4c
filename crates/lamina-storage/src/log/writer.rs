//! The group-commit writer: many threads append, one flusher thread writes chunks.
//!
//! Write coalescing of the SIGMOD 2011 contest paper (section 3, Figure 5): appenders put
//! their records into the fill buffer; the flusher turns the buffer into one 4 KiB-aligned,
//! CRC32C-protected chunk when it is full, when no other writer is pending, or when the
//! group-commit timeout expires, and ends each flush with `fdatasync`. Unlike the paper's
//! single buffer, there are two: the flusher swaps the filled buffer out under the lock and
//! writes and syncs it without the lock, so appenders fill the next buffer during the sync
//! (the paper's *Fill* and *Flush* phases overlap). Garbage collection of a cyclic log runs
//! on the flusher too, after waking the writers, off their latency path.
//!
//! A `Sync` appender waits for its chunk by yielding its core first (while more appenders
//! wait than there are cores, up to `LogOptions::sync_wait_yield_max`), then parking: with
//! many client threads on few cores, a durable write then costs no sleep/wake pair
//! (measured in `docs/results/trie.md`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lamina_core::limits::{check_key, check_value};
use lamina_core::{Durability, Error, InvalidArgument, Result};
use parking_lot::{Condvar, Mutex, RwLock};

use super::flusher::{flusher_loop, set_failure};
use super::options::{LiveRecords, LogOptions};
use super::record::{LogOp, Record, SeqNo};
use super::recovery::{Sink, open_sink};
use super::stats::LogStats;
use crate::backend::Storage;

/// Shortest group-commit timeout (see `LogOptions::linger_max` for the longest).
pub(super) const LINGER_MIN: Duration = Duration::from_micros(50);

/// How often a parked `Sync` writer re-checks for a failure nobody woke it for.
const FAILURE_RECHECK: Duration = Duration::from_millis(50);

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

/// How long garbage collection waits for engines to apply flushed operations before it
/// postpones (it never collects on a stale view of the engine).
pub(super) const APPLY_WAIT: Duration = Duration::from_millis(200);

/// A sticky failure: once a flush fails, the log refuses everything (after a failed
/// `fdatasync` the state of the device is unknown).
#[derive(Debug, Clone)]
pub(super) enum Failure {
    NoSpace(String),
    Io(String),
    /// What [`Error::Corruption`] says, kept so that every waiter gets the same error kind.
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

#[derive(Debug)]
pub(super) struct State {
    pub(super) fill: Vec<u8>,
    pub(super) fill_records: u32,
    pub(super) fill_waiters: u32,
    /// The `Sync` appenders of the fill buffer, woken one by one after its sync.
    pub(super) fill_threads: Vec<std::thread::Thread>,
    pub(super) fill_first_at: Option<Instant>,
    pub(super) fill_seq_hi: SeqNo,
    pub(super) spare: Vec<u8>,
    /// Generation of the fill buffer; buffer `g` is chunk `g` (plus carried records).
    pub(super) gen_fill: u64,
    pub(super) next_seq: SeqNo,
    pub(super) durable_seq: SeqNo,
    /// `Sync` writers in the last flushed chunk: the group the next flush waits for.
    pub(super) expected_writers: u32,
    /// How long the last write+sync took: the group-commit timeout adapts to it.
    pub(super) last_flush: Duration,
    pub(super) space_waiters: u32,
    pub(super) sync_waiters: u32,
    pub(super) failure: Option<Failure>,
    pub(super) closing: bool,
    pub(super) closed: bool,
    pub(super) flusher_idle: bool,
    pub(super) stats: LogStats,
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
    pub(super) options: LogOptions,
    pub(super) oracle: RwLock<Option<Arc<dyn LiveRecords>>>,
    pub(super) segments: Option<Arc<Mutex<super::segments::Segments>>>,
    pub(super) storage: Arc<dyn Storage>,
}

/// The coalesced log (see the module documentation of [`crate::log`]).
#[derive(Debug)]
pub struct Log {
    inner: Arc<Inner>,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for dyn LiveRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LiveRecords")
    }
}

fn check_op(op: &LogOp<'_>) -> Result<()> {
    match op {
        LogOp::Put { key, value } => {
            check_key(key)?;
            check_value(value)
        }
        LogOp::Delete { key } => check_key(key),
        LogOp::Batch(batch) => batch.validate(),
    }
}

impl Log {
    /// Opens the log in `storage` (creating it if absent), passes every record to `replay`
    /// in sequence order, and starts the flusher. A file that is not a lamina log, a future
    /// format version, or a retention mode other than the log's is [`Error::Incompatible`];
    /// a bad chunk followed by valid ones is [`Error::Corruption`].
    pub fn open(
        storage: Arc<dyn Storage>,
        options: LogOptions,
        mut replay: impl FnMut(Record),
    ) -> Result<Log> {
        options.validate()?;
        let opened = open_sink(&storage, &options)?;
        let stats =
            LogStats { records_recovered: opened.records.len() as u64, ..LogStats::default() };
        for record in opened.records {
            replay(record);
        }
        let segments = match &opened.sink {
            Sink::Segments(segments) => Some(segments.clone()),
            Sink::Ring(_) => None,
        };
        let seq_hi = opened.seq_hi;
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                fill: Vec::with_capacity(options.buffer_bytes),
                fill_records: 0,
                fill_waiters: 0,
                fill_threads: Vec::new(),
                fill_first_at: None,
                fill_seq_hi: seq_hi,
                spare: Vec::with_capacity(options.buffer_bytes),
                gen_fill: 1,
                next_seq: seq_hi + 1,
                durable_seq: seq_hi,
                expected_writers: 1,
                last_flush: Duration::ZERO,
                space_waiters: 0,
                sync_waiters: 0,
                failure: None,
                closing: false,
                closed: false,
                flusher_idle: false,
                stats,
            }),
            work_cv: Condvar::new(),
            durable: AtomicU64::new(seq_hi),
            failed: AtomicBool::new(false),
            unapplied: Mutex::new(BTreeMap::new()),
            progress_cv: Condvar::new(),
            applied_cv: Condvar::new(),
            arriving: AtomicUsize::new(0),
            sync_waiting: AtomicUsize::new(0),
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            waits_yielded: AtomicU64::new(0),
            waits_parked: AtomicU64::new(0),
            options,
            oracle: RwLock::new(None),
            segments,
            storage,
        });
        let flusher_inner = inner.clone();
        let mut sink = opened.sink;
        if let Sink::Ring(ring) = &mut sink
            && inner.options.durability != Durability::Sync
        {
            ring.set_apply_before_durable(inner.options.buffer_bytes);
        }
        let handle = std::thread::Builder::new()
            .name("lamina-log-flusher".into())
            .spawn(move || run_flusher(&flusher_inner, sink))
            .map_err(|e| Error::io("starting the log flusher thread", e))?;
        Ok(Log { inner, flusher: Mutex::new(Some(handle)) })
    }

    /// Installs the engine's liveness oracle for cyclic garbage collection. Until one is
    /// installed, nothing is collected (the ring fills up, then writes fail with
    /// `NoSpace`): copying records forward without knowing which are live would copy puts
    /// past later deletes of their keys, and once an oracle arrived and those deletes were
    /// dropped, a crash would bring the keys back (`tests/log_gc_oracle_late.rs`).
    pub fn set_live_records(&self, oracle: Arc<dyn LiveRecords>) {
        *self.inner.oracle.write() = Some(oracle);
    }

    /// Appends `op`; returns its sequence number once the log's durability mode allows
    /// (`Sync`: after the chunk holding it is synced).
    pub fn append(&self, op: LogOp<'_>) -> Result<SeqNo> {
        self.append_with(op, |_| ()).map(|(seq, ())| seq)
    }

    /// Appends `op`, then runs `apply(seq)` once the record is durable per the log's mode
    /// (under `Sync`, after its sync; otherwise at once) and before the append counts as
    /// finished. Engines with cyclic retention apply their in-memory change inside `apply`,
    /// so garbage collection never sees the log ahead of the engine. `apply` must not wait
    /// for other appends. If the flush fails, `apply` is not called and the error returned.
    pub fn append_with<R>(
        &self,
        op: LogOp<'_>,
        apply: impl FnOnce(SeqNo) -> R,
    ) -> Result<(SeqNo, R)> {
        check_op(&op)?;
        let inner = &*self.inner;
        let len = op.encoded_len();
        if len > inner.options.buffer_bytes {
            return Err(Error::InvalidArgument(InvalidArgument::Option {
                name: "buffer_bytes",
                reason: format!(
                    "a record of {len} bytes is larger than the log's write buffer of {} bytes",
                    inner.options.buffer_bytes
                ),
            }));
        }
        let sync = inner.options.durability == Durability::Sync;
        inner.arriving.fetch_add(1, Ordering::SeqCst);
        let mut st = inner.state.lock();
        loop {
            let refused = if let Some(failure) = &st.failure {
                Some(failure.to_error())
            } else if st.closing || st.closed {
                Some(Error::Closed)
            } else {
                None
            };
            if let Some(err) = refused {
                inner.arriving.fetch_sub(1, Ordering::SeqCst);
                return Err(err);
            }
            if st.fill.len() + len <= inner.options.buffer_bytes {
                break;
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
        if st.flusher_idle {
            inner.work_cv.notify_one();
        }
        drop(st);
        let mut outcome = Ok(());
        if sync {
            inner.sync_waiting.fetch_add(1, Ordering::Relaxed);
            if yield_until_durable(inner, seq) {
                inner.waits_yielded.fetch_add(1, Ordering::Relaxed);
            }
            if inner.durable.load(Ordering::Acquire) < seq {
                inner.waits_parked.fetch_add(1, Ordering::Relaxed);
            }
            // Parked, not on a condition variable: the flusher unparks each waiter directly,
            // so a woken group does not file through one mutex (group-commit turnaround).
            while inner.durable.load(Ordering::Acquire) < seq {
                if inner.failed.load(Ordering::Acquire) {
                    let st = inner.state.lock();
                    outcome = Err(st.failure.as_ref().expect("failed is set").to_error());
                    break;
                }
                // Timed: a flusher that died without waking this thread (a panic while the
                // chunk was in flight) is still noticed.
                std::thread::park_timeout(FAILURE_RECHECK);
            }
            inner.sync_waiting.fetch_sub(1, Ordering::Relaxed);
        }
        let applied = outcome.map(|()| apply(seq));
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

    /// Makes every record appended so far durable.
    pub fn sync(&self) -> Result<()> {
        let inner = &*self.inner;
        let mut st = inner.state.lock();
        let target = st.next_seq - 1;
        st.sync_waiters += 1;
        let result = loop {
            if st.durable_seq >= target {
                break Ok(());
            }
            if let Some(failure) = &st.failure {
                break Err(failure.to_error());
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

    /// Truncate retention: removes the segments whose records all have sequence numbers at
    /// or below `upto` (their effects are persisted elsewhere). Returns segments removed.
    pub fn truncate(&self, upto: SeqNo) -> Result<usize> {
        match &self.inner.segments {
            Some(segments) => segments.lock().truncate(upto),
            None => Err(Error::Unsupported {
                what: "truncate on a cyclic log (it collects garbage itself)".into(),
            }),
        }
    }

    /// Flushes and syncs everything appended, stops the flusher, and refuses further
    /// appends with [`Error::Closed`]. Idempotent.
    pub fn close(&self) -> Result<()> {
        self.stop(false)
    }

    /// Stops the flusher without flushing the fill buffer: what a crash leaves behind.
    /// For crash tests; the log is closed afterwards.
    pub fn abandon(&self) {
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

    /// Counters of the log.
    pub fn stats(&self) -> LogStats {
        let st = self.inner.state.lock();
        let mut stats = st.stats.clone();
        stats.next_seq = st.next_seq;
        stats.durable_seq = st.durable_seq;
        stats.sync_waits_yielded = self.inner.waits_yielded.load(Ordering::Relaxed);
        stats.sync_waits_parked = self.inner.waits_parked.load(Ordering::Relaxed);
        if let Some(segments) = &self.inner.segments {
            let segments = segments.lock();
            stats.segments = segments.count() as u64;
            stats.disk_bytes = segments.data_bytes();
        }
        stats
    }

    /// The storage the log writes to (for its I/O counters).
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.inner.storage
    }

    /// The log's options.
    pub fn options(&self) -> &LogOptions {
        &self.inner.options
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
        && inner.sync_waiting.load(Ordering::Relaxed) > inner.cores
        && Instant::now() < until
    {
        std::thread::yield_now();
        yielded = true;
    }
    yielded
}

impl Drop for Log {
    fn drop(&mut self) {
        let _ = self.stop(false);
    }
}
