//! The listener: accepts connections up to the limit, runs each as a task, and shuts down
//! in order: stop accepting, let connections finish the requests they have, wait for them
//! (up to `drain_timeout`), stop the sweep and the sync thread, sync and close the engine.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;

use lamina::{Db, Durability};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::config::ServerConfig;
use crate::conn::{Ended, serve};
use crate::group_sync::GroupSync;
use crate::shared::Shared;
use crate::sweep::Sweeper;

/// Why the server could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A setting is out of range.
    #[error("invalid server setting: {0}")]
    Config(String),
    /// The listening socket or a thread could not be set up.
    #[error("{context}: {source}")]
    Io {
        /// What the server was doing (binding an address, starting a thread, ...).
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The engine failed (opening the server state, or the final sync and close).
    #[error(transparent)]
    Engine(#[from] lamina::Error),
}

/// The engine durability to open the database with for a server durability: under `Sync`
/// the server makes writes durable itself with group syncs (one sync for the writes of all
/// connections), so the engine need not sync each write.
pub fn engine_durability(server: Durability) -> Durability {
    match server {
        Durability::Sync => Durability::None,
        other => other,
    }
}

/// A running server.
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: JoinHandle<Result<(), ServerError>>,
}

impl Running {
    /// The address it listens on (with the port chosen if the setting's was 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Shuts down (as on SIGTERM) and waits for the engine to be synced and closed.
    pub fn shutdown(self) -> Result<(), ServerError> {
        let _ = self.stop.send(true);
        self.wait()
    }

    /// Waits until the server stops (on SIGTERM or SIGINT when started with signals).
    pub fn wait(self) -> Result<(), ServerError> {
        self.thread.join().unwrap_or_else(|_| {
            Err(ServerError::Io {
                context: "the server thread".to_string(),
                source: std::io::Error::other("panicked"),
            })
        })
    }
}

/// Starts serving `db` (opened with [`engine_durability`] of `config.durability`). With
/// `signals`, SIGTERM and SIGINT shut the server down.
pub fn start(db: Db, config: ServerConfig, signals: bool) -> Result<Running, ServerError> {
    config.validate().map_err(ServerError::Config)?;
    let io = |context: &str| {
        let context = context.to_string();
        move |source| ServerError::Io { context, source }
    };
    let threads = if config.threads == 0 {
        std::thread::available_parallelism().map_or(2, std::num::NonZero::get)
    } else {
        config.threads
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("lamina-serve")
        .enable_all()
        .build()
        .map_err(io("starting the network runtime"))?;
    let listen = config.listen;
    let listener = runtime
        .block_on(TcpListener::bind(listen))
        .map_err(io(&format!("listening on {listen}")))?;
    let addr = listener.local_addr().map_err(io("reading the listening address"))?;
    let shared = Arc::new(Shared::new(db, config)?);
    let (stop, stopped) = watch::channel(false);
    if signals {
        let stop = stop.clone();
        runtime.spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let (Ok(mut term), Ok(mut int)) =
                (signal(SignalKind::terminate()), signal(SignalKind::interrupt()))
            else {
                tracing::error!("cannot install the SIGTERM/SIGINT handlers");
                return;
            };
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            tracing::info!(signal = name, "shutting down");
            let _ = stop.send(true);
        });
    }
    tracing::info!(
        %addr,
        engine = %shared.db.engine(),
        dir = %shared.db.dir().display(),
        durability = ?shared.config.durability,
        connections_max = shared.config.connections_max,
        "lamina serve listening"
    );
    let thread = std::thread::Builder::new()
        .name("lamina-serve-main".to_string())
        .spawn(move || runtime.block_on(run(listener, shared, stopped)))
        .map_err(io("starting the server thread"))?;
    Ok(Running { addr, stop, thread })
}

async fn run(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), ServerError> {
    let io = |context: &str, source| ServerError::Io { context: context.to_string(), source };
    let (group_sync, sync_thread) =
        GroupSync::start(Arc::clone(&shared)).map_err(|e| io("starting the sync thread", e))?;
    let sweeper =
        Sweeper::start(Arc::clone(&shared)).map_err(|e| io("starting the sweep thread", e))?;
    let mut connections = JoinSet::new();
    let counters = &shared.counters;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.changed() => break,
        };
        // Reap finished connections so the set does not grow with closed ones.
        while connections.try_join_next().is_some() {}
        let (mut stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: log, pause briefly, keep serving.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        if counters.curr_connections.load(Ordering::Relaxed) as usize
            >= shared.config.connections_max
        {
            counters.rejected_connections.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(%peer, limit = shared.config.connections_max, "connection refused: too many");
            let _ = stream.write_all(b"SERVER_ERROR too many open connections\r\n").await;
            continue;
        }
        counters.curr_connections.fetch_add(1, Ordering::Relaxed);
        counters.total_connections.fetch_add(1, Ordering::Relaxed);
        let shared = Arc::clone(&shared);
        let group_sync = group_sync.clone();
        let stopped = stopped.clone();
        connections.spawn(async move {
            let ended = serve(stream, Arc::clone(&shared), group_sync, stopped).await;
            shared.counters.curr_connections.fetch_sub(1, Ordering::Relaxed);
            match ended {
                Ended::Normally | Ended::Refused => {}
                Ended::Io(e) => tracing::debug!(%peer, error = %e, "connection I/O error"),
                Ended::SyncFailed(e) => {
                    tracing::error!(%peer, error = %e, "sync failed: connection closed unacknowledged");
                }
            }
        });
    }
    drop(listener);
    let open = connections.len();
    let drain_timeout = shared.config.drain_timeout;
    let drained = tokio::time::timeout(drain_timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await
    .is_ok();
    if !drained {
        tracing::warn!(open, ?drain_timeout, "connections still open after the drain timeout");
        connections.abort_all();
        while connections.join_next().await.is_some() {}
    }
    if let Some(sweeper) = sweeper {
        tokio::task::block_in_place(|| sweeper.stop());
    }
    drop(group_sync);
    tokio::task::block_in_place(|| sync_thread.join());
    let result = shared.db.sync().and_then(|()| shared.db.close());
    let c = &shared.counters;
    tracing::info!(
        connections = c.total_connections.load(Ordering::Relaxed),
        gets = c.cmd_get.load(Ordering::Relaxed),
        sets = c.cmd_set.load(Ordering::Relaxed),
        ok = result.is_ok(),
        "lamina serve stopped"
    );
    result.map_err(ServerError::from)
}
