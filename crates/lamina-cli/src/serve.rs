//! `lamina serve`: the memcached protocol server (crate `lamina-server`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use lamina::Durability;
use lamina_server::config::{
    CONNECTIONS_MAX_DEFAULT, LINE_BYTES_MAX_DEFAULT, LISTEN_DEFAULT, SWEEP_INTERVAL_DEFAULT,
};
use lamina_server::{ServerConfig, engine_durability};

use crate::args::GlobalArgs;

pub const AFTER_HELP: &str = "\
Examples:
  lamina serve --dir /var/lib/lamina --engine trie
  lamina serve --dir db --listen 127.0.0.1:11311 --durability none
Any memcached client works: `printf 'set k 0 0 1\\r\\nv\\r\\nget k\\r\\n' | nc 127.0.0.1 11211`.
SIGTERM or SIGINT: stop accepting, finish open requests, sync and close, exit 0.
Log lines go to stderr (level: --log or RUST_LOG; default info).
Protocol, limits and lamina's `lscan` extension: docs/server.md.";

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. The protocol has no authentication: listen on loopback (the
    /// default) unless the network is trusted.
    #[arg(long, value_name = "ADDR", default_value = LISTEN_DEFAULT)]
    pub listen: SocketAddr,
    /// When a reply acknowledging a write is sent: `sync` (after the write is durable; the
    /// writes of all connections share each sync), `buffered:MS` (durable within MS
    /// milliseconds) or `none` (durable at clean shutdown only).
    #[arg(long, value_name = "MODE", default_value = "sync")]
    pub durability: String,
    /// Most simultaneous connections.
    #[arg(long, value_name = "N", default_value_t = CONNECTIONS_MAX_DEFAULT)]
    pub connections_max: usize,
    /// Longest request line in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = LINE_BYTES_MAX_DEFAULT)]
    pub line_bytes_max: usize,
    /// Seconds between sweeps removing expired and flushed items (0: no sweep).
    #[arg(long, value_name = "SECS", default_value_t = SWEEP_INTERVAL_DEFAULT.as_secs())]
    pub sweep_interval_secs: u64,
    /// Network threads (0: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    /// Memory for the engine's in-memory level or buffers, in bytes (0: the engine's
    /// default).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub memory_budget_bytes: u64,
    /// Log level filter (error, warn, info, debug, trace); overrides RUST_LOG.
    #[arg(long, value_name = "LEVEL")]
    pub log: Option<String>,
}

fn parse_durability(text: &str) -> Result<Durability, String> {
    match text {
        "sync" => Ok(Durability::Sync),
        "none" => Ok(Durability::None),
        _ => {
            let ms =
                text.strip_prefix("buffered:").and_then(|ms| ms.parse::<u64>().ok()).ok_or_else(
                    || format!("--durability {text:?}: expected sync, none or buffered:MS"),
                )?;
            let durability = Durability::Buffered { max_delay: Duration::from_millis(ms) };
            durability.validate().map_err(|e| e.to_string())?;
            Ok(durability)
        }
    }
}

pub fn run(global: &GlobalArgs, args: &ServeArgs) -> Result<ExitCode, String> {
    let filter = args
        .log
        .clone()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info".to_string());
    let filter = tracing_subscriber::EnvFilter::try_new(&filter)
        .map_err(|e| format!("--log {filter:?}: {e}"))?;
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let durability = parse_durability(&args.durability)?;
    let mut config = ServerConfig::new(args.listen);
    config.durability = durability;
    config.connections_max = args.connections_max;
    config.line_bytes_max = args.line_bytes_max;
    config.sweep_interval = Duration::from_secs(args.sweep_interval_secs);
    config.threads = args.threads;
    config.validate()?;
    let db =
        crate::data::open_serving(global, engine_durability(durability), args.memory_budget_bytes)?;
    let running = lamina_server::start(db, config, true).map_err(|e| e.to_string())?;
    running.wait().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}
