//! The server's settings, each with its limit.

use std::net::SocketAddr;
use std::time::Duration;

use lamina::Durability;

use crate::item::ITEM_DATA_BYTES_MAX;
use crate::protocol::{GET_KEYS_MAX, KEY_BYTES_MAX};

/// Default listening address: loopback only, memcached's port. Serving other hosts is an
/// explicit choice (`--listen 0.0.0.0:11211`): the protocol has no authentication.
pub const LISTEN_DEFAULT: &str = "127.0.0.1:11211";
/// Default most simultaneous connections (memcached's default is 1024).
pub const CONNECTIONS_MAX_DEFAULT: usize = 1024;
/// Default longest command line: a `get` of [`GET_KEYS_MAX`] keys of the longest length.
pub const LINE_BYTES_MAX_DEFAULT: usize = 16 + GET_KEYS_MAX * (KEY_BYTES_MAX + 1);
/// Default bound on unsent reply bytes of one connection before the server stops reading
/// its requests (the client must read its replies): 4 MiB.
pub const PENDING_REPLY_BYTES_MAX_DEFAULT: usize = 4 << 20;
/// Default time between two passes of the expired-item sweep.
pub const SWEEP_INTERVAL_DEFAULT: Duration = Duration::from_mins(1);
/// Default time shutdown waits for connections to finish their requests.
pub const DRAIN_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);

/// How the server runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// When a reply that acknowledges a write is sent: `Sync` sends it only once the write
    /// is durable (writes of all connections share each sync: group commit); `Buffered`
    /// and `None` as the engine's modes.
    pub durability: Durability,
    /// Most simultaneous connections; one more gets `SERVER_ERROR too many open
    /// connections` and is closed.
    pub connections_max: usize,
    /// Longest command line (see [`crate::protocol::ParseLimits::line_bytes_max`]).
    pub line_bytes_max: usize,
    /// Largest item data: at most [`ITEM_DATA_BYTES_MAX`] (the engine's value limit minus
    /// the item header).
    pub item_bytes_max: usize,
    /// Unsent reply bytes of one connection at which the server stops reading from it.
    pub pending_reply_bytes_max: usize,
    /// Time between sweeps that remove expired and flushed items; zero disables the sweep
    /// (they are still invisible, and removed when touched).
    pub sweep_interval: Duration,
    /// How long shutdown waits for open connections to finish.
    pub drain_timeout: Duration,
    /// Threads of the network runtime (engine calls run on them too); 0: one per core.
    pub threads: usize,
}

impl ServerConfig {
    /// The defaults, listening on `listen`.
    pub fn new(listen: SocketAddr) -> ServerConfig {
        ServerConfig {
            listen,
            durability: Durability::Sync,
            connections_max: CONNECTIONS_MAX_DEFAULT,
            line_bytes_max: LINE_BYTES_MAX_DEFAULT,
            item_bytes_max: ITEM_DATA_BYTES_MAX,
            pending_reply_bytes_max: PENDING_REPLY_BYTES_MAX_DEFAULT,
            sweep_interval: SWEEP_INTERVAL_DEFAULT,
            drain_timeout: DRAIN_TIMEOUT_DEFAULT,
            threads: 0,
        }
    }

    /// Checks every setting; the error names it and its range.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=1_000_000).contains(&self.connections_max) {
            return Err(format!("connections_max {} is outside 1..=1000000", self.connections_max));
        }
        if !(64..=(16 << 20)).contains(&self.line_bytes_max) {
            return Err(format!("line_bytes_max {} is outside 64..=16777216", self.line_bytes_max));
        }
        if self.item_bytes_max > ITEM_DATA_BYTES_MAX {
            return Err(format!(
                "item_bytes_max {} is over {ITEM_DATA_BYTES_MAX} (the engine's value limit \
                 minus the item header)",
                self.item_bytes_max
            ));
        }
        if !((64 << 10)..=(1 << 30)).contains(&self.pending_reply_bytes_max) {
            return Err(format!(
                "pending_reply_bytes_max {} is outside 65536..=1073741824",
                self.pending_reply_bytes_max
            ));
        }
        if self.threads > 1024 {
            return Err(format!("threads {} is over 1024", self.threads));
        }
        Ok(())
    }
}
