//! The closed loop: each client thread issues its next request when the previous one
//! returns (db_bench; the SIGMOD 2011 contest driver, prefix-tree paper section 4).
//!
//! The threads draw their requests, in batches, from the one numbered stream of the
//! workload's generator ([`super::OpSource`]), so every engine receives the same requests
//! (and the same request numbers, which the max-latency buckets use) whatever the
//! interleaving; only which thread runs which request differs between runs.

use std::time::Instant;

use lamina_core::Result;

use super::{
    exec::{Scratch, execute},
    recorder::ThreadRecorder,
    run::Shared,
    source::BATCH_OPS,
};

/// One client thread.
pub(crate) fn closed_worker(shared: &Shared<'_>) -> Result<ThreadRecorder> {
    let mut rec = ThreadRecorder::new(shared.bucket_ops, shared.interval_ns);
    let mut batch = Vec::with_capacity(BATCH_OPS);
    let mut scratch = Scratch::default();
    loop {
        if let Err(e) = shared.source.next_batch(&mut batch, BATCH_OPS) {
            shared.source.stop();
            return Err(e);
        }
        if batch.is_empty() {
            return Ok(rec);
        }
        let n = batch.len() as u64;
        for (request, op) in batch.drain(..) {
            scratch.prepare(&op);
            let start = Instant::now();
            let result = execute(shared.db, &op, &scratch);
            let end = Instant::now();
            if let Err(e) = result {
                shared.source.stop();
                return Err(e);
            }
            if request >= shared.warmup_ops {
                let latency_ns = end.duration_since(start).as_nanos() as u64;
                rec.processing.record(op.kind(), latency_ns);
                let completed_ns =
                    end.saturating_duration_since(shared.origin(start)).as_nanos() as u64;
                rec.timeline.record(request - shared.warmup_ops, completed_ns, latency_ns);
                rec.span(start, end);
                rec.user_bytes_written += op.user_bytes_written();
            }
        }
        shared.done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
}
