//! Appending a batch larger than the log's write buffer (up to the API's `BATCH_BYTES_MAX`).
//!
//! A record never spans chunks, and a chunk holds one write buffer of new records, so such a
//! batch is logged as several records sharing its sequence number (`record::split_batch`):
//! leading *parts*, then an ordinary batch record that ends it. Recovery joins them, and
//! drops parts without their end (`record::resolve_batch_parts`). The protocol that makes
//! the batch all or nothing, and loses nothing acknowledged:
//!
//! 1. The batch takes the log for itself (`State::split_batch_placing`): no other record
//!    comes between its records, so dropping an unfinished batch at recovery cuts the log's
//!    history at a point, as a torn tail does.
//! 2. Its parts are placed one buffer after the other; the chunks that hold them do not
//!    raise the durable sequence number (`fill_seq_hi` stays below the batch's), so no
//!    waiter takes the batch for durable.
//! 3. Every part's chunk is durable before the final record is placed: a part's chunk
//!    rejected for lack of space (`Sync`) fails the batch (`State::split_batch_lost`), and
//!    its final record is never written, so recovery drops the parts that did reach the
//!    device. Under `Buffered`/`None` a stalled part fails the batch the same way.
//! 4. The final record is placed and waited for, in every durability mode; the engine
//!    applies the batch only after it is durable. Until then the batch's first generation
//!    counts as unapplied, so the ring's garbage collection never reaches its parts: it
//!    decides a part's puts from the engine's answers, which only an applied batch makes
//!    current.
//!
//! Sequence numbers are never reused: recovery continues after the highest one in any
//! record, a dropped batch's parts included.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lamina_core::{Durability, Error, Result, WriteBatch};
use parking_lot::MutexGuard;

use super::record::{SeqNo, set_record_seq, split_batch};
use super::shared::{Inner, State};
use super::writer::{LogCore, refusal, wait_durable};

/// How often a writer waiting for a stalled log (no space, `Buffered`/`None`) looks again.
const STALL_RECHECK: Duration = Duration::from_millis(100);

impl LogCore {
    /// [`LogCore::append_with`] for a batch whose record exceeds the write buffer.
    pub(super) fn append_split<R>(
        &self,
        batch: &WriteBatch,
        live_delta: i64,
        apply: impl FnOnce(SeqNo) -> R,
    ) -> Result<(SeqNo, R)> {
        let inner = &*self.inner;
        let mut records = split_batch(batch, inner.options.buffer_bytes);
        assert!(records.len() >= 2, "a batch over the buffer splits into parts and an end");
        let reserved = self.check_budget(live_delta)?;
        let mut st = inner.state.lock();
        let taken = loop {
            if let Some(err) = refusal(inner, &mut st) {
                break Err(err);
            }
            if st.split_batch_placing.is_none() {
                break Ok(());
            }
            inner.progress_cv.wait(&mut st);
        };
        let result = taken.and_then(|()| {
            let seq = st.next_seq;
            st.next_seq += 1;
            st.split_batch_placing = Some(seq);
            for record in &mut records {
                set_record_seq(record, seq);
            }
            let placed = place_all(inner, &mut st, seq, &records);
            st.split_batch_placing = None;
            st.split_batch_lost = None;
            inner.progress_cv.notify_all();
            placed.map(|first_generation| (seq, first_generation))
        });
        drop(st);
        let outcome = result.and_then(|(seq, first_generation)| {
            let durable = match inner.options.durability {
                Durability::Sync => wait_durable(inner, seq),
                Durability::Buffered { .. } | Durability::None => wait_settled_end(inner, seq),
            };
            let applied = durable.map(|()| (seq, apply(seq)));
            finish_unapplied(inner, first_generation);
            applied
        });
        if reserved > 0 {
            inner.growth_in_flight.fetch_sub(reserved, Ordering::Relaxed);
        }
        outcome
    }
}

/// Places the batch's parts, waits until they are durable, then places its final record
/// (steps 2-4 of the module documentation). Returns the generation of the first part, in
/// which the append is counted as unapplied until the caller applies it.
fn place_all(
    inner: &Inner,
    st: &mut MutexGuard<'_, State>,
    seq: SeqNo,
    records: &[Vec<u8>],
) -> Result<u64> {
    let (last, parts) = records.split_last().expect("at least two records");
    let mut first_generation = None;
    let mut last_part_generation = 0;
    for part in parts {
        if let Err(err) = wait_room(inner, st, part.len()) {
            if let Some(first) = first_generation {
                finish_unapplied(inner, first);
            }
            return Err(err);
        }
        let generation = st.gen_fill;
        if first_generation.is_none() {
            *inner.unapplied.lock().entry(generation).or_insert(0) += 1;
            inner.split_batch_generation.store(generation, Ordering::Release);
            first_generation = Some(generation);
        }
        place(st, part, seq);
        // Not the batch's sequence number: the batch is not durable with this chunk.
        st.fill_batch_part = Some(seq);
        last_part_generation = generation;
    }
    let first_generation = first_generation.expect("at least one part");
    let parts_durable = wait_parts_durable(inner, st, seq, last_part_generation)
        .and_then(|()| wait_room(inner, st, last.len()));
    if let Err(err) = parts_durable {
        finish_unapplied(inner, first_generation);
        return Err(err);
    }
    place(st, last, seq);
    st.fill_seq_hi = seq;
    st.stats.appends += 1;
    if inner.options.durability == Durability::Sync {
        st.fill_waiters += 1;
        st.fill_threads.push(std::thread::current());
    }
    if st.flusher_idle {
        inner.work_cv.notify_one();
    }
    Ok(first_generation)
}

/// Ends the unapplied count of the batch (counted in `first_generation`): it was applied,
/// or it failed.
fn finish_unapplied(inner: &Inner, first_generation: u64) {
    let mut unapplied = inner.unapplied.lock();
    let left = unapplied.get_mut(&first_generation).expect("placed appends are counted");
    *left -= 1;
    if *left == 0 {
        unapplied.remove(&first_generation);
        inner.applied_cv.notify_all();
    }
    inner.split_batch_generation.store(0, Ordering::Release);
}

/// Appends one encoded record of the batch to the fill buffer.
fn place(st: &mut State, record: &[u8], seq: SeqNo) {
    if st.fill_records == 0 {
        st.fill_seq_lo = seq;
    }
    st.fill.extend_from_slice(record);
    st.fill_records += 1;
    if st.fill_first_at.is_none() {
        st.fill_first_at = Some(Instant::now());
    }
}

/// Waits until the fill buffer has room for `len` bytes (the flusher is told to flush).
fn wait_room(inner: &Inner, st: &mut MutexGuard<'_, State>, len: usize) -> Result<()> {
    assert!(len <= inner.options.buffer_bytes, "a record fits an empty buffer");
    loop {
        if let Some(err) = refusal(inner, st) {
            return Err(err);
        }
        if st.fill.len() + len <= inner.options.buffer_bytes {
            return Ok(());
        }
        st.space_waiters += 1;
        if st.flusher_idle {
            inner.work_cv.notify_one();
        }
        inner.progress_cv.wait(st);
        st.space_waiters -= 1;
    }
}

/// Waits until the chunk holding the batch's last part (generation `generation`) and every
/// one before it is durable; the batch's error if one of them was rejected, or the log's.
fn wait_parts_durable(
    inner: &Inner,
    st: &mut MutexGuard<'_, State>,
    seq: SeqNo,
    generation: u64,
) -> Result<()> {
    loop {
        if let Some((lost, failure)) = &st.split_batch_lost
            && *lost == seq
        {
            return Err(failure.to_error());
        }
        if st.settled_gen >= generation {
            return Ok(());
        }
        if let Some(failure) = &st.failure {
            return Err(failure.to_error());
        }
        // Under `Buffered`/`None` a part that found no space fails the batch (its end is
        // not placed, so the parts that do reach the device later are dropped at recovery).
        if let Some(stalled) = &st.stalled {
            return Err(stalled.to_error());
        }
        if st.closing || st.closed {
            return Err(Error::Closed);
        }
        // Counted as a `sync` caller: the flusher flushes without waiting for its timeout.
        st.sync_waiters += 1;
        if st.flusher_idle {
            inner.work_cv.notify_one();
        }
        inner.progress_cv.wait(st);
        st.sync_waiters -= 1;
    }
}

/// Under `Buffered`/`None`: waits until the batch's final record (sequence number `seq`) is
/// durable. A stall (no space) is waited out, not reported: the record is kept and retried,
/// and would reach the log later, so failing the batch now could bring it back after a
/// restart. Only the log's failure or its close end the wait early (after a close the
/// record is either durable or gone).
fn wait_settled_end(inner: &Inner, seq: SeqNo) -> Result<()> {
    let mut st = inner.state.lock();
    loop {
        if st.durable_seq >= seq {
            return Ok(());
        }
        if let Some(failure) = &st.failure {
            return Err(failure.to_error());
        }
        if st.closed {
            return Err(Error::Closed);
        }
        if st.stalled.is_some() {
            // The flusher retries by itself; asking it would retry without pause.
            inner.progress_cv.wait_for(&mut st, STALL_RECHECK);
            continue;
        }
        st.sync_waiters += 1;
        if st.flusher_idle {
            inner.work_cv.notify_one();
        }
        inner.progress_cv.wait(&mut st);
        st.sync_waiters -= 1;
    }
}
