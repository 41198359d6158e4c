//! The control block shared by writers and the background threads (the flush thread, the
//! merge thread and the commit thread): what work is wanted, whether to stop, the failure
//! state, and the test hooks that hold the merge thread between stages.
//!
//! Failures come in two kinds:
//! - **sticky** (an I/O error other than a full disk, corruption, a panic in a background
//!   thread): after it, every modification is refused with it, `sync` and `verify` return
//!   it, nothing waits for a thread that will not make progress; lookups go on (the tree in
//!   memory stays consistent). Reopening recovers from the last commit and the log.
//! - **no space** (`Error::NoSpace`): background work that needs space waits and retries;
//!   meanwhile writers that need room in `L_0` get the error instead of waiting, and once
//!   space is freed the same handle works again.
//!
//! **Lockstep** (`Storage::lockstep`, asked by the deterministic simulation's storage): the
//! storage operations of the two threads must come in an order the writers' calls fix. The
//! threads then take turns (the flush first when both are wanted; the flush thread makes its
//! own commits, there is no commit thread), writers that start a flush wait for it
//! (`wait_idle`), and work stuck on a full disk retries when a writer
//! kicks it (`kick_retry`) rather than every [`RETRY_INTERVAL`]. Off on real storage.
//!
//! Invariant: `failure` never goes from `Some` back to `None`.

use std::time::Duration;

use lamina_core::{Error, Result};
use parking_lot::{Condvar, Mutex};

/// How long a writer waiting for room re-checks its conditions, and how long background
/// work waits before retrying after running out of space.
pub const RETRY_INTERVAL: Duration = Duration::from_millis(50);

#[derive(Debug, Default)]
#[allow(clippy::struct_excessive_bools)] // independent flags of one state machine
struct State {
    stop: bool,
    flush_wanted: bool,
    merge_wanted: bool,
    commit_wanted: bool,
    /// Sticky failure (module documentation).
    failure: Option<Error>,
    /// The last full-disk error background work met, until it succeeds again.
    no_space: Option<Error>,
    /// A background thread is working (not waiting for work).
    flushing: bool,
    merging: bool,
    committing: bool,
    /// Test hooks: hold the merge thread at its next hold point; steps granted; whether it
    /// is held now.
    hold: bool,
    steps: u64,
    held: bool,
    /// Times the merge thread arrived at a hold point and was held.
    arrivals: u64,
    /// Bumped whenever room may have been made in `L_0` (a run was installed).
    room_epoch: u64,
    /// Writers waiting for room now (test hook).
    room_waiters: u32,
    /// Test hook: how long a writer waits for room before it looks again (`None`:
    /// [`RETRY_INTERVAL`]). A long one shows that writers are woken, not found by the
    /// recheck.
    room_recheck: Option<Duration>,
    /// The storage asks for lockstep (`Storage::lockstep`): background work that met a
    /// full disk retries when a writer kicks it ([`Control::kick_retry`]), not on a timer.
    lockstep: bool,
    /// Kicks given so far (lockstep).
    kicks: u64,
    /// Background threads waiting for a kick: paused inside their work, or idle with a
    /// full-disk retry pending (lockstep).
    kick_waiters: u32,
    /// Kicks those threads have woken up to (a kicker waits for all it woke).
    kick_acks: u64,
    /// Of `kick_waiters`, those paused inside their work.
    paused: u32,
}

/// The control block.
#[derive(Debug, Default)]
pub struct Control {
    state: Mutex<State>,
    /// Background threads wait here for work; writers for room; tests for idleness.
    cv: Condvar,
    /// `State::lockstep`, readable without the lock (every modification asks).
    lockstep: std::sync::atomic::AtomicBool,
}

/// What a background thread should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Run (it was woken or work may be due).
    Work,
    /// Exit.
    Stop,
}

impl Control {
    /// The sticky failure, if any, as an error.
    pub fn check(&self) -> Result<()> {
        match &self.state.lock().failure {
            Some(e) => Err(clone_error(e)),
            None => Ok(()),
        }
    }

    /// Records a sticky failure (the first one wins) and wakes everyone.
    pub fn fail(&self, err: &Error) {
        let mut st = self.state.lock();
        if st.failure.is_none() {
            st.failure = Some(clone_error(err));
        }
        self.cv.notify_all();
    }

    /// Records the outcome of background work that may run out of space: a full disk is
    /// remembered (writers needing room get it), any other error becomes sticky, success
    /// clears the full-disk state.
    pub fn background_result(&self, result: &Result<()>) {
        let mut st = self.state.lock();
        match result {
            Ok(()) => st.no_space = None,
            Err(e @ Error::NoSpace { .. }) => st.no_space = Some(clone_error(e)),
            Err(e) => {
                if st.failure.is_none() {
                    st.failure = Some(clone_error(e));
                }
            }
        }
        self.cv.notify_all();
    }

    /// The full-disk error background work is stuck on, if any.
    pub fn no_space(&self) -> Option<Error> {
        self.state.lock().no_space.as_ref().map(clone_error)
    }

    /// Asks the flush thread to run.
    pub fn want_flush(&self) {
        let mut st = self.state.lock();
        if !st.flush_wanted {
            st.flush_wanted = true;
            self.cv.notify_all();
        }
    }

    /// Asks the merge thread to run.
    pub fn want_merge(&self) {
        let mut st = self.state.lock();
        if !st.merge_wanted {
            st.merge_wanted = true;
            self.cv.notify_all();
        }
    }

    /// Asks the commit thread to commit the runs installed since the last commit.
    pub fn want_commit(&self) {
        let mut st = self.state.lock();
        if !st.commit_wanted {
            st.commit_wanted = true;
            self.cv.notify_all();
        }
    }

    /// The commit thread's wait (it runs only outside lockstep).
    pub fn next_commit(&self, timeout: Option<Duration>) -> Next {
        self.next(|st| &mut st.commit_wanted, |st| &mut st.committing, timeout, false)
    }

    /// The flush thread's wait: until wanted (or `timeout`, to retry after a full disk),
    /// or stopped.
    pub fn next_flush(&self, timeout: Option<Duration>) -> Next {
        self.next(|st| &mut st.flush_wanted, |st| &mut st.flushing, timeout, false)
    }

    /// The merge thread's wait.
    pub fn next_merge(&self, timeout: Option<Duration>) -> Next {
        self.next(|st| &mut st.merge_wanted, |st| &mut st.merging, timeout, true)
    }

    fn next(
        &self,
        wanted: impl Fn(&mut State) -> &mut bool,
        busy: impl Fn(&mut State) -> &mut bool,
        timeout: Option<Duration>,
        yields_to_flush: bool,
    ) -> Next {
        let mut st = self.state.lock();
        *busy(&mut st) = false;
        self.cv.notify_all();
        loop {
            if st.stop {
                return Next::Stop;
            }
            // In lockstep the two threads take turns: their storage operations never
            // interleave (this thread's own flag was cleared above).
            // When both are wanted the flush goes first, whichever thread looks first.
            let other_busy =
                st.lockstep && (st.flushing || st.merging || (yields_to_flush && st.flush_wanted));
            if !other_busy && std::mem::take(wanted(&mut st)) {
                *busy(&mut st) = true;
                return Next::Work;
            }
            match timeout {
                Some(_) if st.lockstep => {
                    // Registering and leaving happen under the lock, so a kicker counts
                    // exactly the threads its kick wakes.
                    let kicks = st.kicks;
                    st.kick_waiters += 1;
                    self.cv.wait(&mut st);
                    st.kick_waiters -= 1;
                    if st.kicks != kicks {
                        st.kick_acks += 1;
                        self.cv.notify_all();
                        if !st.stop {
                            *busy(&mut st) = true;
                            return Next::Work;
                        }
                    }
                }
                Some(t) => {
                    if self.cv.wait_for(&mut st, t).timed_out() {
                        *busy(&mut st) = true;
                        return Next::Work;
                    }
                }
                None => self.cv.wait(&mut st),
            }
        }
    }

    /// Tells the background threads to exit once their current work is done.
    pub fn stop(&self) {
        self.state.lock().stop = true;
        self.cv.notify_all();
    }

    /// Whether the background threads are told to stop.
    pub fn stopping(&self) -> bool {
        self.state.lock().stop
    }

    /// A run was installed: writers waiting for room look again.
    pub fn room_made(&self) {
        let mut st = self.state.lock();
        st.room_epoch += 1;
        self.cv.notify_all();
    }

    /// The room epoch (see [`Control::wait_room`]).
    pub fn room_epoch(&self) -> u64 {
        self.state.lock().room_epoch
    }

    /// Waits until room may have been made since `epoch`, a failure, a stop, or
    /// [`RETRY_INTERVAL`].
    pub fn wait_room(&self, epoch: u64) {
        let mut st = self.state.lock();
        if st.room_epoch == epoch && st.failure.is_none() && !st.stop {
            st.room_waiters += 1;
            let recheck = st.room_recheck.unwrap_or(RETRY_INTERVAL);
            self.cv.wait_for(&mut st, recheck);
            st.room_waiters -= 1;
        }
    }

    /// Sleeps up to `duration`, less if room is made since `epoch` (or on a failure or a
    /// stop): the flush spacing's sleeps (`flush_rate.rs`).
    pub fn sleep_unless_room(&self, epoch: u64, duration: Duration) {
        let deadline = std::time::Instant::now() + duration;
        let mut st = self.state.lock();
        while st.room_epoch == epoch && st.failure.is_none() && !st.stop {
            if self.cv.wait_until(&mut st, deadline).timed_out() {
                return;
            }
        }
    }

    /// Test hook: writers waiting for room now.
    pub fn room_waiters(&self) -> u32 {
        self.state.lock().room_waiters
    }

    /// Test hook: how long writers wait for room before they look again.
    pub fn set_room_recheck(&self, recheck: Duration) {
        self.state.lock().room_recheck = Some(recheck);
    }

    /// Waits until no background thread is working or wanted (tests, benchmarks),
    /// or, in lockstep, until the working one is paused for a kick after a full disk (the
    /// other cannot start meanwhile).
    pub fn wait_idle(&self) -> Result<()> {
        let mut st = self.state.lock();
        loop {
            let working = u32::from(st.flushing) + u32::from(st.merging) + u32::from(st.committing);
            let wanted = st.flush_wanted || st.merge_wanted || st.commit_wanted;
            let settled = st.stop
                || (working == 0 && !wanted)
                || (st.held && st.hold)
                || (st.lockstep && working > 0 && st.paused == working);
            if let Some(e) = &st.failure {
                // In lockstep only once the failed work has also cleaned up after itself.
                if !st.lockstep || settled {
                    return Err(clone_error(e));
                }
            } else if settled {
                return Ok(());
            }
            self.cv.wait_for(&mut st, RETRY_INTERVAL);
        }
    }

    /// Puts the control block in lockstep (`Storage::lockstep`; set once, at open).
    pub fn set_lockstep(&self, lockstep: bool) {
        self.state.lock().lockstep = lockstep;
        self.lockstep.store(lockstep, std::sync::atomic::Ordering::Release);
    }

    /// Whether background work runs in lockstep with the writers.
    pub fn lockstep(&self) -> bool {
        self.lockstep.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Background work that met a full disk waits before it retries: [`RETRY_INTERVAL`],
    /// or in lockstep until a writer kicks it (or the threads stop).
    pub fn retry_pause(&self) {
        let mut st = self.state.lock();
        // Only the background threads wait for a kick: a caller's own thread (recovery,
        // close) would wait for itself.
        if !st.lockstep || !ON_BACKGROUND_THREAD.get() {
            drop(st);
            std::thread::sleep(RETRY_INTERVAL);
            return;
        }
        let kicks = st.kicks;
        st.paused += 1;
        st.kick_waiters += 1;
        self.cv.notify_all();
        while st.kicks == kicks && !st.stop {
            self.cv.wait(&mut st);
        }
        st.paused -= 1;
        st.kick_waiters -= 1;
        if st.kicks != kicks {
            st.kick_acks += 1;
            self.cv.notify_all();
        }
    }

    /// Lockstep: a writer found background work stuck on a full disk; lets it retry once
    /// and waits until it finished or is stuck again, so the retry's storage operations come
    /// before the writer's own.
    pub fn kick_retry(&self) -> Result<()> {
        let mut st = self.state.lock();
        let (woken, acks) = (st.kick_waiters, st.kick_acks);
        if woken > 0 {
            st.kicks += 1;
            self.cv.notify_all();
            while st.kick_acks < acks + u64::from(woken) && !st.stop && st.failure.is_none() {
                self.cv.wait(&mut st);
            }
        }
        drop(st);
        self.wait_idle()
    }

    /// Test hook: whether the merge thread is held now.
    pub fn held(&self) -> bool {
        let st = self.state.lock();
        st.held && st.hold
    }

    /// Test hook: hold (or release) the merge thread at its hold points.
    pub fn set_hold(&self, hold: bool) {
        let mut st = self.state.lock();
        st.hold = hold;
        self.cv.notify_all();
    }

    /// Test hook: lets a held merge thread run to its next hold point, and waits until it
    /// is there or idle.
    pub fn step(&self) {
        let mut st = self.state.lock();
        let arrivals = st.arrivals;
        st.steps += 1;
        self.cv.notify_all();
        // Until the thread is held again at a later point, or has nothing more to do.
        while st.arrivals == arrivals
            && (st.merging || st.merge_wanted || st.held)
            && !st.stop
            && st.failure.is_none()
        {
            self.cv.wait_for(&mut st, RETRY_INTERVAL);
        }
    }

    /// Test hook: waits until the merge thread is held.
    pub fn wait_held(&self) {
        let mut st = self.state.lock();
        while !st.held && !st.stop && st.failure.is_none() {
            self.cv.wait_for(&mut st, RETRY_INTERVAL);
        }
    }

    /// The merge thread's hold point: waits while held (tests), unless granted a step.
    pub fn hold_point(&self) {
        let mut st = self.state.lock();
        if !st.hold {
            return;
        }
        st.held = true;
        st.arrivals += 1;
        self.cv.notify_all();
        let steps = st.steps;
        while st.hold && st.steps == steps && !st.stop {
            self.cv.wait(&mut st);
        }
        st.held = false;
        self.cv.notify_all();
    }
}

thread_local! {
    /// Whether this thread is one of the engine's background threads.
    static ON_BACKGROUND_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as a background thread (the flush and merge threads, at their
/// start).
pub fn mark_background_thread() {
    ON_BACKGROUND_THREAD.set(true);
}

/// A copy of an error to hand to another caller (errors are not `Clone`: an I/O source is
/// kept as its kind and message).
pub fn clone_error(e: &Error) -> Error {
    match e {
        Error::Io { context, source } => {
            Error::io(context.clone(), std::io::Error::new(source.kind(), source.to_string()))
        }
        Error::NoSpace { context } => Error::NoSpace { context: context.clone() },
        Error::Corruption { file, offset, reason } => {
            Error::corruption(file.clone(), *offset, reason.clone())
        }
        Error::Closed => Error::Closed,
        other => Error::io("fdtree background failure", std::io::Error::other(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flush spacing sleep, however long its schedule says, ends when a run is installed
    /// (a sleep of 586 ms outlasted the flush it was spacing at 50M keys).
    #[test]
    fn a_spacing_sleep_ends_when_room_is_made() {
        let control = std::sync::Arc::new(Control::default());
        let epoch = control.room_epoch();
        let sleeper = control.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            sleeper.sleep_unless_room(epoch, Duration::from_hours(1));
            let _ = tx.send(());
        });
        control.room_made();
        rx.recv_timeout(Duration::from_mins(1)).expect("the sleep outlasted the install");
        // Room made before the sleep began: no sleep at all.
        control.sleep_unless_room(epoch, Duration::from_hours(1));
    }
}
