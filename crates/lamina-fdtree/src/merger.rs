//! The background merge thread of FD+DS (section 3) and its coordination with writers.
//!
//! - Writers apply their modification to `L_0` (`L_0^new` during a merge) and wake the
//!   thread when a merge is due; they never merge themselves. A writer waits only when
//!   `L_0^old` and `L_0^new` together fill `L_0`'s memory (`Tree::top_is_full`), until the
//!   running merge switches in.
//! - The thread runs merges while one is due: start (short write lock), merge-execute with
//!   no lock held (lookups and writers proceed), switch (short write lock), then verify (if
//!   configured) and checkpoint a persistent tree.
//! - A failed merge leaves the old levels in place (see `merge/background.rs`); its error is
//!   kept and returned by the next modification, `wait_for_merges`, `sync` or `close`, and
//!   the thread retries when a writer wakes it again.
//!
//! Lock order: the control mutex is only held for short bookkeeping and never while taking
//! the tree lock; a thread holding the tree lock may take the control mutex (it never waits
//! on the condition variable then). So the two cannot deadlock, and a writer waiting for
//! room holds neither lock while it sleeps.

use lamina_core::{Error, Result};
use parking_lot::{Condvar, Mutex};

/// Shared state between writers, the merge thread and the control calls.
#[derive(Debug, Default)]
pub(crate) struct Control {
    state: Mutex<ControlState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
#[allow(clippy::struct_excessive_bools)] // independent flags of one small state machine
struct ControlState {
    /// Merges switched in or abandoned so far (writers waiting for room watch it).
    epoch: u64,
    /// A writer asked for a merge.
    wake: bool,
    /// The thread is running merges.
    busy: bool,
    /// The thread must exit.
    stop: bool,
    /// The error of the last failed background merge, not yet reported.
    error: Option<Error>,
    /// Test hook: hold the merge thread after merge-execute, before the switch.
    hold: bool,
    /// Test hook: the thread is held.
    held: bool,
    /// Test hook: hold points the thread may pass while `hold` is set (FD+FC stages).
    passes: u64,
    /// Test hook: times the thread was held.
    holds: u64,
}

/// What the merge thread should do next.
pub(crate) enum Next {
    Merge,
    Stop,
}

impl Control {
    /// The current epoch, or the pending merge error.
    pub(crate) fn epoch(&self) -> Result<u64> {
        let mut s = self.state.lock();
        match s.error.take() {
            Some(e) => Err(e),
            None => Ok(s.epoch),
        }
    }

    /// Waits until the epoch moves past `epoch` (a merge switched in or failed); `false` if
    /// the thread stopped instead (the tree is closing: no merge will make room).
    pub(crate) fn wait_for_room(&self, epoch: u64) -> bool {
        let mut s = self.state.lock();
        while s.epoch == epoch && !s.stop {
            self.changed.wait(&mut s);
        }
        !s.stop
    }

    /// Wakes the merge thread.
    pub(crate) fn wake(&self) {
        self.state.lock().wake = true;
        self.changed.notify_all();
    }

    /// The thread's wait for work.
    pub(crate) fn next(&self) -> Next {
        let mut s = self.state.lock();
        while !s.wake && !s.stop {
            self.changed.wait(&mut s);
        }
        if s.stop {
            return Next::Stop;
        }
        s.wake = false;
        s.busy = true;
        Next::Merge
    }

    /// A merge switched in (or was abandoned): waiting writers retry.
    pub(crate) fn switched(&self) {
        self.state.lock().epoch += 1;
        self.changed.notify_all();
    }

    /// The thread finished a round of merges.
    pub(crate) fn idle(&self, result: Result<()>) {
        let mut s = self.state.lock();
        s.busy = false;
        s.epoch += 1;
        if let Err(e) = result {
            s.error = Some(e);
        }
        self.changed.notify_all();
    }

    /// The merge thread died (a panic, i.e. a bug): no merge will run again. Waiting writers
    /// and `wait_for_merges` are released with an error instead of waiting forever.
    pub(crate) fn poison(&self, error: Error) {
        let mut s = self.state.lock();
        s.stop = true;
        s.busy = false;
        s.wake = false;
        s.error = Some(error);
        self.changed.notify_all();
    }

    /// Asks the thread to stop.
    pub(crate) fn stop(&self) {
        self.state.lock().stop = true;
        self.changed.notify_all();
    }

    /// Whether the thread is running or about to run merges; takes a pending error.
    pub(crate) fn busy(&self) -> Result<bool> {
        let mut s = self.state.lock();
        if let Some(e) = s.error.take() {
            return Err(e);
        }
        Ok(s.busy || s.wake)
    }

    /// Waits for the thread to become idle (or stop).
    pub(crate) fn wait_idle(&self) {
        let mut s = self.state.lock();
        while (s.busy || s.wake) && !s.stop {
            self.changed.wait(&mut s);
        }
    }

    /// Test hook: hold (or release) the merge thread between merge-execute and the switch.
    pub(crate) fn set_hold(&self, hold: bool) {
        let mut s = self.state.lock();
        s.hold = hold;
        s.passes = 0;
        self.changed.notify_all();
    }

    /// Test hook: waits until the merge thread is held.
    pub(crate) fn wait_held(&self) {
        let mut s = self.state.lock();
        while !s.held {
            self.changed.wait(&mut s);
        }
    }

    /// Called by the thread at a hold point: between merge-execute and the switch (FD+DS),
    /// after each stage (FD+FC).
    pub(crate) fn hold_point(&self) {
        let mut s = self.state.lock();
        if !s.hold {
            return;
        }
        if s.passes > 0 {
            s.passes -= 1; // a step granted before the thread got here
            return;
        }
        s.held = true;
        s.holds += 1;
        self.changed.notify_all();
        while s.hold && s.passes == 0 && !s.stop {
            self.changed.wait(&mut s);
        }
        if s.passes > 0 {
            s.passes -= 1;
        }
        s.held = false;
    }

    /// Test hook: lets a held thread run to its next hold point (or finish its merges);
    /// returns once it is there.
    pub(crate) fn step(&self) {
        let mut s = self.state.lock();
        let holds = s.holds;
        s.passes += 1;
        self.changed.notify_all();
        while s.holds == holds && (s.busy || s.wake) && !s.stop {
            self.changed.wait(&mut s);
        }
    }
}
