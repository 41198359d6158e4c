//! What every connection shares: the database, the CAS clock, the counters and the settings.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use lamina::Db;

use crate::config::ServerConfig;
use crate::state::Clock;

/// Counters reported by `stats` (memcached's names where memcached has the counter).
#[derive(Debug, Default)]
pub struct Counters {
    /// Connections open now.
    pub curr_connections: AtomicU64,
    /// Connections accepted since the start.
    pub total_connections: AtomicU64,
    /// Connections refused because the connection limit was reached.
    pub rejected_connections: AtomicU64,
    /// Items stored since the start (memcached's `total_items`).
    pub total_items: AtomicU64,
    /// Keys looked up by retrieval commands (one per key of `get`/`gets`/`gat`/`gats`, and `mg`).
    pub cmd_get: AtomicU64,
    /// Store requests.
    pub cmd_set: AtomicU64,
    /// `flush_all` commands.
    pub cmd_flush: AtomicU64,
    /// Touch requests (`touch`, each key of `gat`/`gats`, `mg` with a touch flag).
    pub cmd_touch: AtomicU64,
    /// Meta commands `mg`, `ms`, `md` and `ma` (`mn` is not counted).
    pub cmd_meta: AtomicU64,
    /// `lscan` commands (lamina's extension).
    pub cmd_scan: AtomicU64,
    /// Lookups (`get`/`gets`/`mg`) that found a live item.
    pub get_hits: AtomicU64,
    /// Lookups (`get`/`gets`/`mg`) that found no live item (absent, expired or flushed).
    pub get_misses: AtomicU64,
    /// Reads that found an item past its expiry time (answered as absent).
    pub get_expired: AtomicU64,
    /// Reads that found an item invalidated by `flush_all` (answered as absent).
    pub get_flushed: AtomicU64,
    /// Deletes of a live item.
    pub delete_hits: AtomicU64,
    /// Deletes of an absent item.
    pub delete_misses: AtomicU64,
    /// `incr` of a live item.
    pub incr_hits: AtomicU64,
    /// `incr` of an absent item.
    pub incr_misses: AtomicU64,
    /// `decr` of a live item.
    pub decr_hits: AtomicU64,
    /// `decr` of an absent item.
    pub decr_misses: AtomicU64,
    /// `cas` commands that stored (the token matched).
    pub cas_hits: AtomicU64,
    /// `cas` commands on an absent item.
    pub cas_misses: AtomicU64,
    /// `cas` commands refused because the token did not match.
    pub cas_badval: AtomicU64,
    /// Touches (`touch`, `gat`, `gats`) of a live item.
    pub touch_hits: AtomicU64,
    /// Touches (`touch`, `gat`, `gats`) of an absent item.
    pub touch_misses: AtomicU64,
    /// Bytes read from clients.
    pub bytes_read: AtomicU64,
    /// Bytes written to clients.
    pub bytes_written: AtomicU64,
    /// Expired or flushed items removed (lazily on access, or by the sweep).
    pub reclaimed: AtomicU64,
    /// Requests refused as malformed or over a limit.
    pub protocol_errors: AtomicU64,
    /// Engine errors answered with `SERVER_ERROR`.
    pub engine_errors: AtomicU64,
    /// Group syncs run for `Sync` durability.
    pub syncs: AtomicU64,
    /// Replies that waited for a group sync before they were sent.
    pub sync_waits: AtomicU64,
    /// Sweep passes completed.
    pub sweeps: AtomicU64,
}

/// Adds one to a counter.
pub fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The server's shared state.
#[derive(Debug)]
pub struct Shared {
    /// The database.
    pub db: Db,
    /// CAS tokens and the flush epoch.
    pub clock: Clock,
    /// `stats` counters.
    pub counters: Counters,
    /// The settings.
    pub config: ServerConfig,
    /// `verbosity` level (accepted and reported; logging is set by `RUST_LOG`).
    pub verbosity: AtomicU32,
    /// When the server started.
    pub started: Instant,
    /// The process id, for `stats`.
    pub pid: u32,
}

impl Shared {
    /// Opens the clock on `db` and bundles everything.
    pub fn new(db: Db, config: ServerConfig) -> lamina::Result<Shared> {
        let clock = Clock::open(&db, unix_now_secs())?;
        Ok(Shared {
            db,
            clock,
            counters: Counters::default(),
            config,
            verbosity: AtomicU32::new(0),
            started: Instant::now(),
            pid: std::process::id(),
        })
    }

    /// Whether a reply acknowledging a write waits for the write to be durable.
    pub fn sync_replies(&self) -> bool {
        self.config.durability == lamina::Durability::Sync
    }
}

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
