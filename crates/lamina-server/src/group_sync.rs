//! Group commit for `Sync` durability: connections that wrote wait here, and one engine
//! `sync` on a dedicated thread makes the writes of all of them durable at once.
//!
//! Protocol: a connection applies its writes, then calls [`GroupSync::wait`], which queues a
//! waiter and awaits it. The thread takes every queued waiter, calls `Db::sync` (which makes
//! every write acknowledged by the engine before the call durable), and answers them all.
//! A waiter queued after its writes is always answered by a sync that started after them,
//! so a reply sent after `wait` returns `Ok` acknowledges only durable writes. The waiting
//! connection's task yields, so no runtime thread blocks on the disk.

use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::shared::{Shared, bump};

type Waiter = oneshot::Sender<Result<(), String>>;

/// The handle connections use; cheap to clone.
#[derive(Debug, Clone)]
pub struct GroupSync {
    queue: mpsc::Sender<Waiter>,
}

/// The sync thread; stops when every [`GroupSync`] handle is dropped.
#[derive(Debug)]
pub struct GroupSyncThread {
    thread: JoinHandle<()>,
}

impl GroupSync {
    /// Starts the sync thread for `shared`'s database.
    pub fn start(shared: Arc<Shared>) -> std::io::Result<(GroupSync, GroupSyncThread)> {
        let (queue, waiters) = mpsc::channel::<Waiter>();
        let thread =
            std::thread::Builder::new().name("lamina-serve-sync".to_string()).spawn(move || {
                while let Ok(first) = waiters.recv() {
                    let mut batch = vec![first];
                    batch.extend(waiters.try_iter());
                    let result = shared.db.sync().map_err(|e| {
                        crate::exec::log_error_class(&e);
                        e.to_string()
                    });
                    bump(&shared.counters.syncs);
                    for waiter in batch {
                        // A waiter whose connection went away no longer listens.
                        let _ = waiter.send(result.clone());
                    }
                }
            })?;
        Ok((GroupSync { queue }, GroupSyncThread { thread }))
    }

    /// Waits until every write applied before this call is durable.
    pub async fn wait(&self) -> Result<(), String> {
        let (tx, rx) = oneshot::channel();
        self.queue.send(tx).map_err(|_| "the sync thread has stopped".to_string())?;
        rx.await.map_err(|_| "the sync thread has stopped".to_string())?
    }
}

impl GroupSyncThread {
    /// Waits for the thread to finish (after every handle is dropped).
    pub fn join(self) {
        let _ = self.thread.join();
    }
}
