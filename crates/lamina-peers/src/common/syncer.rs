//! `Durability::Buffered` for peers: writes are acknowledged without a sync and a background
//! thread syncs the peer's log every `max_delay`, which bounds the time from acknowledgement
//! to durability as the mode promises.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

use super::Backend;

/// The background thread; stopping it (or dropping it) joins it.
#[derive(Debug)]
pub(crate) struct Syncer {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Syncer {
    /// Starts syncing `state` every `period`; a failed sync is kept in `failure` for the next
    /// `sync` or `close` to report.
    pub(crate) fn start<B: Backend>(
        name: &'static str,
        state: Arc<RwLock<Option<B>>>,
        failure: Arc<Mutex<Option<String>>>,
        period: Duration,
    ) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("{name}-syncer"))
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                    let guard = state.read();
                    let Some(backend) = guard.as_ref() else { break };
                    if let Err(e) = backend.sync() {
                        failure.lock().get_or_insert_with(|| e.to_string());
                    }
                }
            })
            .ok();
        Syncer { stop: Some(stop), thread }
    }

    /// Whether the thread could be started.
    pub(crate) fn is_running(&self) -> bool {
        self.thread.is_some()
    }

    /// Stops and joins the thread.
    pub(crate) fn stop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            // A panicking syncer already lost its sync; close syncs again anyway.
            let _ = thread.join();
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        self.stop();
    }
}
