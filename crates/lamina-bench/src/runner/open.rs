//! The open system of FD+FC section 5: a workload injection thread fills two bounded
//! request queues, Q_r for lookups and Q_w for insertions and deletions (blocking when one
//! is full), and T_r / T_w worker threads serve them. Per request it measures
//! - R_p: from the worker's dequeue to completion (computation, I/O and lock waits);
//! - R_q: R_p plus the time spent waiting in the queue;
//! - R_o: R_q plus the lateness w of the request's entry into its queue against an
//!   arrival schedule of v requests per second from time 0 (`--rate v`), as Remark A.9
//!   computes it: the injector runs at full speed and may run ahead of the schedule;
//!   w > 0 only when the system falls behind. Without `--rate`, R_o = R_q.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use crossbeam_channel::{Receiver, Sender, bounded};
use lamina_core::{Error, Result};
use parking_lot::Mutex;

use super::{
    exec::{Scratch, execute},
    recorder::ThreadRecorder,
    run::Shared,
    source::BATCH_OPS,
};
use crate::Op;

/// A request in a queue.
struct Queued {
    request: u64,
    op: Op,
    enqueued: Instant,
}

/// Splits `slots` between Q_r and Q_w in the proportion `reads : (1 - reads)` (section 5:
/// "divided ... according to the ratio W_l : (W_i + W_d)"), each at least 1.
pub(crate) fn split_slots(slots: usize, read_fraction: Option<f64>) -> (usize, usize) {
    let reads = read_fraction.unwrap_or(0.5).clamp(0.0, 1.0);
    let read_slots = ((slots as f64 * reads).round() as usize).clamp(1, slots - 1);
    (read_slots, slots - read_slots)
}

/// Runs the injection thread and the workers; returns the workers' recorders.
pub(crate) fn run_open(
    shared: &Shared<'_>,
    readers: usize,
    writers: usize,
    rate_per_s: Option<f64>,
    queue_slots: usize,
    read_fraction: Option<f64>,
    monitor: &mut dyn FnMut(&dyn Fn() -> bool),
) -> Result<Vec<ThreadRecorder>> {
    let (read_slots, write_slots) = split_slots(queue_slots, read_fraction);
    let (qr_tx, qr_rx) = bounded::<Queued>(read_slots);
    let (qw_tx, qw_rx) = bounded::<Queued>(write_slots);
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let fail = |e: Error| {
        shared.source.stop();
        failure.lock().get_or_insert(e);
    };
    let recorders = std::thread::scope(|scope| {
        let injector = scope.spawn(move || inject(shared, &qr_tx, &qw_tx, readers, writers, &fail));
        let mut workers = Vec::new();
        for _ in 0..readers {
            let rx = qr_rx.clone();
            workers.push(scope.spawn(move || serve(shared, &rx, rate_per_s, &fail)));
        }
        for _ in 0..writers {
            let rx = qw_rx.clone();
            workers.push(scope.spawn(move || serve(shared, &rx, rate_per_s, &fail)));
        }
        drop((qr_rx, qw_rx));
        monitor(&|| {
            injector.is_finished() && workers.iter().all(std::thread::ScopedJoinHandle::is_finished)
        });
        injector.join().expect("injection thread does not panic");
        workers
            .into_iter()
            .map(|w| w.join().expect("worker threads do not panic"))
            .collect::<Vec<_>>()
    });
    if let Some(e) = failure.into_inner() {
        return Err(e);
    }
    Ok(recorders)
}

fn inject(
    shared: &Shared<'_>,
    qr: &Sender<Queued>,
    qw: &Sender<Queued>,
    readers: usize,
    writers: usize,
    fail: &dyn Fn(Error),
) {
    let mut batch = Vec::with_capacity(BATCH_OPS);
    loop {
        if let Err(e) = shared.source.next_batch(&mut batch, BATCH_OPS) {
            return fail(e);
        }
        if batch.is_empty() {
            return;
        }
        for (request, op) in batch.drain(..) {
            let read = op.kind().is_read();
            if (read && readers == 0) || (!read && writers == 0) {
                let which = if read { "--readers" } else { "--writers" };
                return fail(Error::option(
                    "readers",
                    format!("the workload issued a {} request but {which} is 0", op.kind().name()),
                ));
            }
            let queued = Queued { request, op, enqueued: Instant::now() };
            let sent = if read { qr.send(queued) } else { qw.send(queued) };
            if sent.is_err() {
                return; // every worker of that queue is gone: a failure was recorded
            }
        }
    }
}

fn serve(
    shared: &Shared<'_>,
    rx: &Receiver<Queued>,
    rate_per_s: Option<f64>,
    fail: &dyn Fn(Error),
) -> ThreadRecorder {
    let mut rec = ThreadRecorder::new(shared.bucket_ops, shared.interval_ns);
    let mut scratch = Scratch::default();
    let mut failed = false;
    while let Ok(Queued { request, op, enqueued }) = rx.recv() {
        if failed {
            continue; // drain so the injector never blocks on a queue nobody serves
        }
        scratch.prepare(&op);
        let start = Instant::now();
        let result = execute(shared.db, &op, &scratch);
        let end = Instant::now();
        shared.done.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = result {
            failed = true;
            fail(e);
            continue;
        }
        if request < shared.warmup_ops {
            continue;
        }
        let processing_ns = end.duration_since(start).as_nanos() as u64;
        let queued_ns = end.duration_since(enqueued).as_nanos() as u64;
        let lateness_ns = rate_per_s.map_or(0, |rate| {
            let arrival = shared.run_start + Duration::from_secs_f64(request as f64 / rate);
            enqueued.saturating_duration_since(arrival).as_nanos() as u64
        });
        let kind = op.kind();
        rec.processing.record(kind, processing_ns);
        rec.queued.record(kind, queued_ns);
        rec.overall.record(kind, queued_ns + lateness_ns);
        let completed_ns = end.saturating_duration_since(shared.origin(start)).as_nanos() as u64;
        rec.timeline.record(request - shared.warmup_ops, completed_ns, processing_ns);
        rec.span(start, end);
        rec.user_bytes_written += op.user_bytes_written();
    }
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_read_write_proportion() {
        assert_eq!(split_slots(5000, Some(0.5)), (2500, 2500));
        assert_eq!(split_slots(5000, Some(0.0)), (1, 4999));
        assert_eq!(split_slots(5000, Some(1.0)), (4999, 1));
        assert_eq!(split_slots(2, None), (1, 1));
    }
}
