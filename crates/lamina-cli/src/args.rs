//! Command-line arguments.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// lamina: an embeddable, crash-safe, ordered key-value store.
#[derive(Debug, Parser)]
#[command(name = "lamina", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by the data commands.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Database directory (created on first write).
    #[arg(long, global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Engine for a new database; an existing one is opened with the engine that created it.
    #[arg(long, global = true, value_name = "NAME")]
    pub engine: Option<String>,
    /// Keys and values are given and printed as hexadecimal instead of UTF-8 text.
    #[arg(long, global = true)]
    pub hex: bool,
    /// Most disk bytes the database may take (every engine; 0: no cap). Writes
    /// that add data past it fail; deletes still work. May change from one command to the next.
    #[arg(long, global = true, value_name = "BYTES", default_value_t = 0)]
    pub disk_budget_bytes: u64,
    /// Most memory bytes the database's data may take (engines mem and trie; 0: no limit).
    #[arg(long, global = true, value_name = "BYTES", default_value_t = 0)]
    pub memory_limit_bytes: u64,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process; boxing buys nothing
pub enum Command {
    /// Store VALUE under KEY (insert or overwrite).
    Put {
        /// The key (1 to 1024 bytes).
        key: String,
        /// The value (0 to 4096 bytes).
        value: String,
    },
    /// Print the value stored under KEY; exit code 1 if there is none.
    Get {
        /// The key.
        key: String,
    },
    /// Remove KEY; exit code 1 if it did not exist.
    Delete {
        /// The key.
        key: String,
    },
    /// Print `key<TAB>value` lines in key order.
    Scan {
        /// First key (inclusive).
        #[arg(long, value_name = "KEY")]
        from: Option<String>,
        /// Last key (exclusive).
        #[arg(long, value_name = "KEY")]
        to: Option<String>,
        /// Print at most N pairs.
        #[arg(long, value_name = "N")]
        limit: Option<u64>,
    },
    /// Check a closed database without changing it: every file the engine reads, its
    /// structural invariants, and a full scan against point reads. Prints a summary and exits
    /// 0 when clean; prints the first problem (file, offset, what) and exits 2 otherwise.
    Verify,
    /// List the engines this build contains.
    Engines,
    /// Benchmark engines with the papers' workloads (see `lamina bench --help`).
    #[command(after_help = crate::bench::AFTER_HELP)]
    Bench(crate::bench::BenchArgs),
    /// Serve the database over the memcached text protocol (classic and meta commands), for
    /// memcached clients, load generators and proxies such as nutcracker. `--dir` is
    /// required; a new database is created with `--engine` (default fdtree).
    #[command(after_help = crate::serve::AFTER_HELP)]
    Serve(crate::serve::ServeArgs),
}
