//! The flusher thread of the group-commit log: decides when to flush (contest paper,
//! section 3: "either it is full, there is no other write operation left, or a predefined
//! timeout is reached"), swaps the write buffers, writes and syncs one chunk, wakes the
//! writers of that chunk, and then runs the cyclic log's read-ahead garbage collection.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lamina_core::Durability;

use super::options::Retention;
use super::recovery::Sink;
use super::ring::{Oracle, Ring};
use super::superseded::DurableUnapplied;
use super::writer::{APPLY_WAIT, Failure, Inner, LINGER_MIN, State};

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

pub(super) fn flusher_loop(inner: &Inner, mut sink: Sink) {
    let ring_retention = matches!(inner.options.retention, Retention::Cyclic { .. });
    let mut unapplied = DurableUnapplied::default();
    loop {
        let mut st = inner.state.lock();
        loop {
            if st.failure.is_some() {
                return;
            }
            match flush_decision(inner, &st, Instant::now()) {
                Ok(()) => break,
                Err(_) if st.closing && st.fill_records == 0 => return,
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
        // Swap buffers: appenders fill the spare while this one is written and synced.
        let spare = std::mem::take(&mut st.spare);
        let buffer = std::mem::replace(&mut st.fill, spare);
        let (records, waiters, seq_hi) = (st.fill_records, st.fill_waiters, st.fill_seq_hi);
        let generation = st.gen_fill;
        st.gen_fill += 1;
        st.fill_records = 0;
        st.fill_waiters = 0;
        let threads = std::mem::take(&mut st.fill_threads);
        st.fill_first_at = None;
        if st.space_waiters > 0 {
            inner.progress_cv.notify_all();
        }
        drop(st);

        let oracle = inner.oracle.read().clone();
        // Chunks below this position hold generations before `generation` only.
        let head_before = match &sink {
            Sink::Ring(ring) => ring.head(),
            Sink::Segments(_) => 0,
        };
        let flush_started = Instant::now();
        let result = match &mut sink {
            Sink::Ring(ring) => ring.flush(&buffer, records, seq_hi, &oracle, &mut || {
                wait_applied(inner, generation - 1, APPLY_WAIT * 10)
            }),
            Sink::Segments(segments) => segments.lock().flush(&buffer, records, seq_hi),
        };

        if ring_retention && result.is_ok() {
            // Before the writers are woken: until they have applied, collection must know
            // the keys this generation writes (`superseded.rs`).
            let first_unapplied = inner.unapplied.lock().first_key_value().map(|(g, _)| *g);
            unapplied.push(generation, head_before, &buffer, first_unapplied);
        }
        let mut st = inner.state.lock();
        match &result {
            Ok(bytes) => {
                assert!(seq_hi >= st.durable_seq, "durable sequence must not go back");
                st.durable_seq = seq_hi;
                inner.durable.store(seq_hi, Ordering::Release);
                st.expected_writers = waiters.max(1);
                st.stats.chunks_written += 1;
                st.stats.syncs += 1;
                st.stats.bytes_written += bytes;
                st.last_flush = flush_started.elapsed();
                st.stats.flush_ns += st.last_flush.as_nanos() as u64;
                st.stats.records_written += u64::from(records);
                st.stats.sync_records_max = st.stats.sync_records_max.max(u64::from(records));
            }
            // Every waiter, of any generation, must see the failure: nobody flushes now.
            Err(err) => set_failure(inner, &mut st, Failure::from_error(err)),
        }
        let mut buffer = buffer;
        buffer.clear();
        st.spare = buffer;
        inner.progress_cv.notify_all();
        if let Sink::Ring(ring) = &sink {
            st.stats.gc_chunks_collected = ring.gc.chunks_collected;
            st.stats.gc_records_copied = ring.gc.records_copied;
            st.stats.gc_bytes_copied = ring.gc.bytes_copied;
            st.stats.gc_records_dropped = ring.gc.records_dropped;
            st.stats.disk_bytes = ring.window_bytes();
        }
        drop(st);
        // `durable` (or `failed`) is published before the unpark; a waiter that has not yet
        // parked keeps the unpark token and sees it.
        for thread in &threads {
            thread.unpark();
        }
        if result.is_err() {
            return;
        }
        // Read ahead and collect while writers fill the next buffer (contest paper, Fig. 5).
        if let Sink::Ring(ring) = &mut sink
            && ring_retention
            && let Err(failure) = collect_ahead(inner, ring, &oracle, head_before, &mut unapplied)
        {
            let mut st = inner.state.lock();
            set_failure(inner, &mut st, failure);
            return;
        }
    }
}

/// Read-ahead collection after a flush, only up to the chunk just written (`below`). Its
/// writers were unparked a moment ago and may not have applied their operations yet:
/// collection does not wait for them (that would hold the next flush until every one of them
/// has been scheduled, group commit in lockstep rounds), it treats the keys they write as
/// superseded instead (`superseded.rs`).
fn collect_ahead(
    inner: &Inner,
    ring: &mut Ring,
    oracle: &Oracle,
    below: u64,
    unapplied: &mut DurableUnapplied,
) -> Result<(), Failure> {
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
