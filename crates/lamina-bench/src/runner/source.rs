//! The shared request stream: one generator behind a lock handing out numbered batches,
//! so every engine sees the same requests in the same order of generation (the thread
//! that runs each one may differ).

use std::sync::atomic::{AtomicBool, Ordering};

use lamina_core::Result;
use parking_lot::Mutex;

use crate::{Op, workload::Workload};

/// Requests handed out per lock acquisition.
pub const BATCH_OPS: usize = 64;

/// A numbered, bounded, stoppable stream of requests.
pub struct OpSource {
    state: Mutex<State>,
    stop: AtomicBool,
}

struct State {
    workload: Box<dyn Workload>,
    next_request: u64,
    limit: Option<u64>,
    exhausted: bool,
}

impl std::fmt::Debug for OpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpSource").field("stop", &self.stop).finish_non_exhaustive()
    }
}

impl OpSource {
    /// A stream of at most `limit` requests (`None`: until stopped or exhausted).
    pub fn new(workload: Box<dyn Workload>, limit: Option<u64>) -> Self {
        OpSource {
            state: Mutex::new(State { workload, next_request: 0, limit, exhausted: false }),
            stop: AtomicBool::new(false),
        }
    }

    /// Fills `out` with up to `max` `(request number, request)` pairs; leaves it empty
    /// when the stream is over.
    pub fn next_batch(&self, out: &mut Vec<(u64, Op)>, max: usize) -> Result<()> {
        out.clear();
        if self.is_stopped() {
            return Ok(());
        }
        let mut state = self.state.lock();
        while out.len() < max && !state.exhausted {
            if state.limit.is_some_and(|limit| state.next_request >= limit) {
                state.exhausted = true;
                break;
            }
            match state.workload.next_op() {
                Ok(Some(op)) => {
                    out.push((state.next_request, op));
                    state.next_request += 1;
                }
                Ok(None) => state.exhausted = true,
                Err(e) => {
                    state.exhausted = true;
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Ends the stream (duration reached or a worker failed).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Whether [`OpSource::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// Requests handed out so far.
    pub fn issued(&self) -> u64 {
        self.state.lock().next_request
    }
}
