//! What every connection shares: the database, the CAS clock, the counters and the settings.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use lamina::Db;

use crate::config::ServerConfig;
use crate::state::Clock;

/// Counters reported by `stats` (memcached's names where memcached has the counter).
#[derive(Debug, Default)]
pub struct Counters {
    pub curr_connections: AtomicU64,
    pub total_connections: AtomicU64,
    pub rejected_connections: AtomicU64,
    /// Items stored since the start (memcached's `total_items`).
    pub total_items: AtomicU64,
    pub cmd_get: AtomicU64,
    pub cmd_set: AtomicU64,
    pub cmd_flush: AtomicU64,
    pub cmd_touch: AtomicU64,
    pub cmd_meta: AtomicU64,
    pub cmd_scan: AtomicU64,
    pub get_hits: AtomicU64,
    pub get_misses: AtomicU64,
    pub get_expired: AtomicU64,
    pub get_flushed: AtomicU64,
    pub delete_hits: AtomicU64,
    pub delete_misses: AtomicU64,
    pub incr_hits: AtomicU64,
    pub incr_misses: AtomicU64,
    pub decr_hits: AtomicU64,
    pub decr_misses: AtomicU64,
    pub cas_hits: AtomicU64,
    pub cas_misses: AtomicU64,
    pub cas_badval: AtomicU64,
    pub touch_hits: AtomicU64,
    pub touch_misses: AtomicU64,
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    /// Expired or flushed items removed (lazily on access, or by the sweep).
    pub reclaimed: AtomicU64,
    /// Requests refused as malformed or over a limit.
    pub protocol_errors: AtomicU64,
    /// Engine errors answered with `SERVER_ERROR`.
    pub engine_errors: AtomicU64,
    /// Group syncs run for `Sync` durability, and replies that waited for them.
    pub syncs: AtomicU64,
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
