//! The flusher thread of the group-commit log: decides when to flush (contest paper,
//! section 3: "either it is full, there is no other write operation left, or a predefined
//! timeout is reached"), swaps the write buffers, writes and syncs one chunk, wakes the
//! writers of that chunk, and then runs the ring's read-ahead garbage collection. A flush
//! that finds no space is rejected (`Sync`) or retried (`Buffered`/`None`), see
//! `shared.rs`; a clean close ends with a chunk that says so.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lamina_core::{Durability, Error, Result};

use super::chunk::CHUNK_FLAG_CLEAN_CLOSE;
use super::options::LiveRecords;
use super::recovery::Sink;
use super::ring::Ring;
use super::shared::{Failure, Inner, Pending, Rejected, State};
use super::superseded::DurableUnapplied;
use super::writer::{APPLY_WAIT, LINGER_MIN};

/// How often a stalled flush (no space, `Buffered`/`None`) is retried when nobody asks.
const STALL_RETRY_INTERVAL: Duration = Duration::from_millis(100);

/// Why and when the flusher flushes (contest paper: "either it is full, there is no other
/// write operation left, or a predefined timeout is reached").
pub(super) fn flush_decision(
    inner: &Inner,
    st: &State,
    now: Instant,
) -> Result<(), Option<Instant>> {
    if st.fill_records == 0 {
        return Err(None);
    }
    let options = &inner.options;
    let full = st.space_waiters > 0 || st.fill.len() + 4096 > options.buffer_bytes;
    if full || st.closing || st.sync_waiters > 0 {
        return Ok(());
    }
    let first = st.fill_first_at.expect("non-empty buffer has a first record");
    if inner.lockstep {
        // No timer decides: a `Sync` appender's record is flushed at once, the others when
        // asked (a sync, a full buffer, the close).
        return if options.durability == Durability::Sync { Ok(()) } else { Err(None) };
    }
    match options.durability {
        Durability::Sync => {
            let no_one_pending = inner.arriving.load(Ordering::SeqCst) == 0;
            // Waiting for stragglers costs at most half a flush: worth it on a slow device,
            // skipped on a fast one.
            let linger = (st.last_flush / 2).max(LINGER_MIN).min(options.linger_max);
            let deadline = first + linger;
            if (no_one_pending && st.fill_waiters >= st.expected_writers) || now >= deadline {
                Ok(())
            } else {
                Err(Some(deadline))
            }
        }
        Durability::Buffered { max_delay } => {
            let deadline = first + max_delay / 2;
            if now >= deadline { Ok(()) } else { Err(Some(deadline)) }
        }
        Durability::None => Err(None),
    }
}

/// Swaps the fill buffer out: appenders fill the spare while this one is written and
/// synced (or, when the flusher is behind, while it waits in `State::queued`).
pub(super) fn take_fill(inner: &Inner, st: &mut State) -> Pending {
    let spare = std::mem::take(&mut st.spare);
    let buffer = std::mem::replace(&mut st.fill, spare);
    let pending = Pending {
        buffer,
        batch_part: st.fill_batch_part.take(),
        records: st.fill_records,
        waiters: st.fill_waiters,
        seq_lo: st.fill_seq_lo,
        seq_hi: st.fill_seq_hi,
        generation: st.gen_fill,
        threads: std::mem::take(&mut st.fill_threads),
    };
    st.gen_fill += 1;
    st.fill_records = 0;
    st.fill_waiters = 0;
    st.fill_first_at = None;
    if st.space_waiters > 0 {
        inner.progress_cv.notify_all();
    }
    pending
}

/// What the flusher waits for next.
enum Next {
    Flush(Pending),
    /// A stalled buffer to retry, and the retry requests it answers.
    Retry(Pending, u64),
    Stop,
}

/// Waits until there is a buffer to flush (or a stalled one to retry, or nothing left).
fn next_work(inner: &Inner, stalled: &mut Option<Pending>) -> Next {
    let mut st = inner.state.lock();
    let mut waited = false;
    loop {
        if st.failure.is_some() {
            return Next::Stop;
        }
        if stalled.is_some() {
            let asked = if inner.lockstep {
                // Only requests made after the stall was published: a `sync` that was
                // waiting when it happened returns its error without a retry.
                st.retries_asked > st.retries_answered || st.closing
            } else {
                st.retry_waiters > 0 || st.sync_waiters > 0 || st.closing
            };
            if asked || waited {
                return Next::Retry(stalled.take().expect("checked"), st.retries_asked);
            }
            st.flusher_idle = true;
            if inner.lockstep {
                // Retried only when asked (an append, a sync, the close).
                inner.work_cv.wait(&mut st);
            } else {
                inner.work_cv.wait_for(&mut st, STALL_RETRY_INTERVAL);
                waited = true;
            }
            st.flusher_idle = false;
            continue;
        }
        if let Some(queued) = st.queued.pop_front() {
            // Older than the fill buffer: chunks go out in the order of their records.
            return Next::Flush(queued);
        }
        match flush_decision(inner, &st, Instant::now()) {
            Ok(()) => return Next::Flush(take_fill(inner, &mut st)),
            Err(_) if st.closing && st.fill_records == 0 => return Next::Stop,
            Err(deadline) => {
                st.flusher_idle = true;
                match deadline {
                    Some(at) => {
                        inner.work_cv.wait_until(&mut st, at);
                    }
                    None => inner.work_cv.wait(&mut st),
                }
                st.flusher_idle = false;
            }
        }
    }
}

pub(super) fn flusher_loop(inner: &Inner, mut sink: Sink) {
    let mut unapplied = DurableUnapplied::default();
    let mut stalled: Option<Pending> = None;
    loop {
        let (mut pending, retry) = match next_work(inner, &mut stalled) {
            Next::Flush(pending) => (pending, None),
            Next::Retry(pending, answers) => (pending, Some(answers)),
            Next::Stop => {
                let st = inner.state.lock();
                let clean = st.failure.is_none();
                drop(st);
                if clean {
                    close_cleanly(inner, &mut sink);
                }
                return;
            }
        };
        if retry.is_some()
            && let Sink::Ring(ring) = &mut sink
        {
            // Space for the retry comes from collection (deletes and overwrites since).
            let below = ring.head();
            if let Err(failure) = collect_ahead(inner, ring, below, &mut unapplied) {
                let mut st = inner.state.lock();
                set_failure(inner, &mut st, failure);
                return;
            }
        }
        // Chunks below this position hold generations before `pending.generation` only.
        let head_before = match &sink {
            Sink::Ring(ring) => ring.head(),
            Sink::Segments(_) => 0,
        };
        let flush_started = Instant::now();
        let result = write_pending(inner, &mut sink, &pending, 0);
        if matches!(sink, Sink::Ring(_)) && result.is_ok() {
            // Before the writers are woken: until they have applied, collection must know
            // the keys this generation writes (`superseded.rs`).
            let first_unapplied = inner.unapplied.lock().first_key_value().map(|(g, _)| *g);
            unapplied.push(pending.generation, head_before, &pending.buffer, first_unapplied);
        }
        if inner.lockstep
            && result.is_ok()
            && let Sink::Ring(ring) = &mut sink
            && let Err(failure) = collect_ahead(inner, ring, head_before, &mut unapplied)
        {
            // In lockstep the collection runs before the chunk's writers learn anything, so
            // that their next calls never overlap it; they get its failure instead.
            let mut st = inner.state.lock();
            set_failure(inner, &mut st, failure);
            drop(st);
            for thread in std::mem::take(&mut pending.threads) {
                thread.unpark();
            }
            return;
        }
        let mut st = inner.state.lock();
        if let Some(answers) = retry {
            st.retries_answered = st.retries_answered.max(answers);
        }
        let retried = retry.is_some();
        let keep = settle(inner, &mut st, &pending, &result, retried, flush_started.elapsed());
        inner.progress_cv.notify_all();
        if let Sink::Ring(ring) = &sink {
            copy_ring_stats(&mut st, ring);
        }
        let failed = st.failure.is_some();
        if !keep {
            let mut buffer = std::mem::take(&mut pending.buffer);
            buffer.clear();
            st.spare = buffer;
        }
        drop(st);
        // `durable` (or `failed`, or the rejection) is published before the unpark; a waiter
        // that has not yet parked keeps the unpark token and sees it.
        for thread in std::mem::take(&mut pending.threads) {
            thread.unpark();
        }
        if failed {
            return;
        }
        if keep {
            stalled = Some(pending);
            continue;
        }
        // Read ahead and collect while writers fill the next buffer (contest paper, Fig. 5).
        if result.is_ok()
            && !inner.lockstep
            && let Sink::Ring(ring) = &mut sink
            && let Err(failure) = collect_ahead(inner, ring, head_before, &mut unapplied)
        {
            let mut st = inner.state.lock();
            set_failure(inner, &mut st, failure);
            return;
        }
    }
}

/// Records the outcome of writing `pending`; returns whether to keep its buffer for a retry
/// (a stall).
fn settle(
    inner: &Inner,
    st: &mut State,
    pending: &Pending,
    result: &Result<u64>,
    retry: bool,
    took: Duration,
) -> bool {
    match result {
        Ok(bytes) => {
            assert!(pending.seq_hi >= st.durable_seq, "durable sequence must not go back");
            st.durable_seq = pending.seq_hi;
            st.settled_seq = st.settled_seq.max(pending.seq_hi);
            st.settled_gen = st.settled_gen.max(pending.generation);
            inner.durable.store(pending.seq_hi, Ordering::Release);
            st.stalled = None;
            st.expected_writers = pending.waiters.max(1);
            st.stats.chunks_written += 1;
            st.stats.syncs += 1;
            st.stats.bytes_written += bytes;
            st.last_flush = took;
            st.stats.flush_ns += st.last_flush.as_nanos() as u64;
            st.stats.records_written += u64::from(pending.records);
            st.stats.sync_records_max = st.stats.sync_records_max.max(u64::from(pending.records));
            false
        }
        Err(err @ Error::NoSpace { .. }) if !st.closing || !retry => {
            let failure = Failure::from_error(err);
            st.stats.flushes_without_space += 1;
            if inner.options.durability == Durability::Sync {
                // Nobody was told these appends succeeded, and none was applied: they
                // fail, and the log goes on.
                reject(inner, st, pending, failure);
                false
            } else {
                // Acknowledged and applied already: keep them and retry.
                st.stalled = Some(failure);
                true
            }
        }
        // Every waiter, of any generation, must see the failure: nobody flushes now.
        Err(err) => {
            set_failure(inner, st, Failure::from_error(err));
            false
        }
    }
}

/// Writes `pending` (and, for a ring, carried records) as a chunk with `flags`.
fn write_pending(inner: &Inner, sink: &mut Sink, pending: &Pending, flags: u8) -> Result<u64> {
    // The chunk's header counts a split batch's part: a segment holding one is not
    // truncated before the engine has persisted the batch, and recovery numbers after it.
    // (What is published as durable stays `pending.seq_hi`: the batch is not, yet.)
    let seq_hi = pending.seq_hi.max(pending.batch_part.unwrap_or(0));
    match sink {
        Sink::Ring(ring) => {
            let oracle = inner.oracle.as_deref().expect("a ring has its oracle");
            ring.set_live_bytes(oracle.live_bytes());
            let generation = pending.generation;
            ring.flush(&pending.buffer, pending.records, seq_hi, flags, oracle, &mut || {
                wait_applied(inner, generation - 1, APPLY_WAIT * 10)
            })
        }
        Sink::Segments(segments) => {
            segments.lock().flush(&pending.buffer, pending.records, seq_hi, flags)
        }
    }
}

/// Fails the appends of `pending` with `failure` (their chunk was not written).
fn reject(inner: &Inner, st: &mut State, pending: &Pending, failure: Failure) {
    st.settled_gen = st.settled_gen.max(pending.generation);
    if let Some(seq) = pending.batch_part {
        st.split_batch_lost = Some((seq, failure.clone()));
    }
    if pending.waiters > 0 {
        inner.rejected.lock().push(Rejected {
            seq_lo: pending.seq_lo,
            seq_hi: pending.seq_hi,
            error: failure,
            waiters: pending.waiters,
        });
        inner.any_rejected.store(true, Ordering::Release);
    }
    st.settled_seq = st.settled_seq.max(pending.seq_hi);
}

/// Ends a clean close: a chunk flagged as written by it (holding any carried records), so
/// that recovery knows there was no crash and a damaged newest chunk is corruption, not a
/// torn tail. If there is no room for it (a ring at its budget, a full device), the log
/// simply reads as crashed: nothing is lost.
fn close_cleanly(inner: &Inner, sink: &mut Sink) {
    let seq_hi = inner.state.lock().next_seq - 1;
    let pending = Pending {
        buffer: Vec::new(),
        batch_part: None,
        records: 0,
        waiters: 0,
        seq_lo: seq_hi + 1,
        seq_hi,
        generation: u64::MAX,
        threads: Vec::new(),
    };
    let result = write_pending(inner, sink, &pending, CHUNK_FLAG_CLEAN_CLOSE);
    let mut st = inner.state.lock();
    match result {
        Ok(bytes) => {
            st.stats.bytes_written += bytes;
            st.stats.syncs += 1;
        }
        Err(Error::NoSpace { .. }) => {}
        Err(err) => set_failure(inner, &mut st, Failure::from_error(&err)),
    }
    if let Sink::Ring(ring) = sink {
        copy_ring_stats(&mut st, ring);
    }
}

fn copy_ring_stats(st: &mut State, ring: &Ring) {
    st.stats.gc_chunks_collected = ring.gc.chunks_collected;
    st.stats.gc_records_copied = ring.gc.records_copied;
    st.stats.gc_bytes_copied = ring.gc.bytes_copied;
    st.stats.gc_records_dropped = ring.gc.records_dropped;
    st.stats.ring_segments_grown = ring.gc.segments_grown;
    st.stats.ring_segments_retired = ring.gc.segments_retired;
    st.stats.disk_bytes = ring.window_bytes();
    let (segments, bytes) = ring.size();
    st.stats.ring_segments = segments;
    st.stats.ring_bytes = bytes;
    st.stats.ring_segment_bytes = ring.segment_bytes();
}

/// Read-ahead collection after a flush, only up to the chunk just written (`below`). Its
/// writers were unparked a moment ago and may not have applied their operations yet:
/// collection does not wait for them (that would hold the next flush until every one of them
/// has been scheduled, group commit in lockstep rounds), it treats the keys they write as
/// superseded instead (`superseded.rs`).
fn collect_ahead(
    inner: &Inner,
    ring: &mut Ring,
    below: u64,
    unapplied: &mut DurableUnapplied,
) -> Result<(), Failure> {
    let oracle: &dyn LiveRecords = inner.oracle.as_deref().expect("a ring has its oracle");
    ring.set_live_bytes(oracle.live_bytes());
    if !ring.collect_ahead_due(below) {
        return Ok(());
    }
    for attempt in 0..2 {
        let superseded = match superseded_now(inner, unapplied) {
            Ok(Some(superseded)) => superseded,
            // Still not applied after the wait: postponed (never collected on a stale view
            // of the engine).
            Ok(None) => return Ok(()),
            Err(reason) => {
                let file = "log write buffer (memory)".into();
                return Err(Failure::Corruption { file, offset: 0, reason });
            }
        };
        // Never into a chunk whose writers have not applied it: the engine cannot vouch for
        // those records yet (`tests/log_gc_unapplied.rs`).
        let oldest = unapplied.oldest();
        let limit = oldest.map_or(below, |(_, position)| position.min(below));
        ring.collect_ahead(oracle, limit, &superseded).map_err(|err| Failure::from_error(&err))?;
        match oldest {
            // Held up by a writer still applying an older chunk (descheduled, or a slow
            // engine): wait for it once, as collection always did, then go on.
            Some((generation, position))
                if attempt == 0 && position < below && ring.collect_ahead_due(below) =>
            {
                wait_applied(inner, generation, APPLY_WAIT);
            }
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// The keys collection must treat as superseded now (`superseded.rs`); `None` if it must
/// not collect: a writer that has not applied for many flushes (descheduled) had its
/// generation's buffer dropped, and is still not done after waiting for it.
fn superseded_now(
    inner: &Inner,
    unapplied: &mut DurableUnapplied,
) -> Result<Option<HashSet<Vec<u8>>>, String> {
    let dropped_through = unapplied.dropped_through();
    if dropped_through > 0 {
        wait_applied(inner, dropped_through, APPLY_WAIT);
    }
    let first_unapplied = inner.unapplied.lock().first_key_value().map(|(g, _)| *g);
    unapplied.superseded_keys(first_unapplied)
}

/// Records a sticky failure and wakes every waiter of every kind: nobody flushes now.
pub(super) fn set_failure(inner: &Inner, st: &mut State, failure: Failure) {
    st.failure = Some(failure);
    inner.failed.store(true, Ordering::Release);
    inner.progress_cv.notify_all();
    inner.work_cv.notify_all();
    {
        let _guard = inner.unapplied.lock();
        inner.applied_cv.notify_all();
    }
    // Waiters of the fill buffer; those of a buffer being flushed are unparked by the flusher.
    for thread in &st.fill_threads {
        thread.unpark();
    }
}

/// Waits until every append of generations up to `generation` has finished (applied).
pub(super) fn wait_applied(inner: &Inner, generation: u64, timeout: Duration) -> bool {
    // A split batch is applied only after its last record is durable, which waits for the
    // flusher: waiting for it here could only time out.
    let split = inner.split_batch_generation.load(Ordering::Acquire);
    if split != 0 && split <= generation {
        return false;
    }
    let deadline = Instant::now() + timeout;
    let mut unapplied = inner.unapplied.lock();
    while unapplied.first_key_value().is_some_and(|(g, _)| *g <= generation) {
        if inner.failed.load(Ordering::Acquire)
            || inner.applied_cv.wait_until(&mut unapplied, deadline).timed_out()
        {
            return unapplied.first_key_value().is_none_or(|(g, _)| *g > generation);
        }
    }
    true
}
