//! The flags of `lamina bench` (db_bench-like names where db_bench has one).

use std::path::PathBuf;

use clap::Args;

/// Printed after the flags by `lamina bench --help`.
pub const AFTER_HELP: &str = "\
With no flags: the contest mix against every available engine, 100,000 requests over
100,000 preloaded keys, one client thread, printed as a table. Engine E keeps its files in
--dir DIR/E, otherwise in a temporary directory. `fdtree` (the default engine) may be given
for `fdtree-fc`; reports call it `fdtree-fc`.

An engine that fails (opening, a request, a full disk, closing) does not stop the benchmark:
its row shows the error, the other engines run and are reported, and the command exits with
status 2 after writing every report (JSON: `failed`, docs/bench-json.md).

Experiments (--experiment NAME --out DIR; docs/results/bench-experiments.md):
  fdfc-figure1, nbtree-insert, fdfc-vs-btree, fdfc-figure6, contest
      scaled-down reproductions of the papers' figures (sizes scale with --ops, --preload)
  scale
      into one empty store per engine: --ops N uniform random inserts (default 1,000,000)
      of 8-byte keys and 128-byte values from one thread, then min(N, 1,000,000) lookups of
      inserted keys, then min(N, 200,000) inserts from 2 threads, then close and a timed
      reopen that reads back 1,000 of the keys. Every engine gets a 64 MiB cache and a
      32 MiB memory budget (--cache-bytes, --memory-budget-bytes override) and durability
      none (--durability overrides). Engines: fdtree-fc, fdtree-xm, nbtree, latree, trie,
      mem and every peer built in (rocksdb-tuned, leveldb-tuned, lmdb, bdb,
      wiredtiger-btree, wiredtiger-lsm); --engines overrides, --rounds repeats with the engine order
      alternating. Reports inserts/s, insert p99, p99.99 and max, the max insert per 1% of
      the inserts (plot), inserts/s over time (plot), lookups/s and p99.99, write
      amplification, disk and memory bytes per record, peak disk and RSS, the 2-thread
      inserts/s and p99.99, close and reopen time, each rate and tail also as a ratio to the
      best peer.

Server load (--server HOST:PORT; docs/results/server.md, scripts/bench-server):
  drives a memcached text-protocol server (`lamina serve`, memcached) over --connections
  N connections (default 8, one client thread each), --pipeline D requests in flight per
  connection (default 1). Phases (--phases, default set,get,mixed): set stores each of
  --keys N records once (default 100,000; --key-bytes default 16, --value-bytes default
  100), get reads uniformly random records, mixed reads and sets them (--get-percent,
  default 90). Get and mixed run --ops requests each (default 100,000) or --duration SECS.
  Every get is checked (key, flags, value): a miss of a set record, a wrong value or an
  error reply is counted and reported, and the command then exits with status 2. Prints
  requests/s, mean, p50, p99, p99.9 and max latency per phase and request kind; --json
  FILE writes them (schema lamina-bench-memcached, docs/bench-json.md). --seed applies;
  the engine flags do not.";

/// Benchmark engines with the papers' workloads (and YCSB), side by side.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Engines to compare, comma-separated, in order (ratios are to the first) [default: all
    /// that accept the settings].
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    pub engines: Vec<String>,
    /// Workload: gr, tpcc, contest, ltu, insert, insert-query, ycsb-a ... ycsb-f, replay.
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
    /// Run a named experiment into --out DIR: the scaled-down paper experiments
    /// fdfc-figure1, nbtree-insert, fdfc-vs-btree, fdfc-figure6, contest (sizes scale with
    /// --ops and --preload), and scale (N = --ops inserts, lookups, 2-thread inserts and a
    /// reopen on one store per engine; see below).
    #[arg(long, value_name = "NAME")]
    pub experiment: Option<String>,
    /// Output directory of --experiment (report.md, report.json, timeline.csv, plots/).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// gr: lookup:insert:delete proportion, integers or decimals [default: 50:25:25].
    #[arg(long, value_name = "L:I:D")]
    pub mix: Option<String>,
    /// tpcc: warehouses, 1..=255 [default: 1].
    #[arg(long, value_name = "N")]
    pub warehouses: Option<u32>,
    /// ltu: lookups per 100 updates (lookup-to-update ratio in percent) [default: 100].
    #[arg(long, value_name = "PERCENT")]
    pub ltu: Option<f64>,
    /// replay: the trace file to replay.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write the workload (preload, warm-up and --ops requests) to FILE and exit.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Records loaded before measuring [default: per workload].
    #[arg(long, value_name = "N")]
    pub preload: Option<u64>,
    /// Measured requests [default: 100000].
    #[arg(long, value_name = "N")]
    pub ops: Option<u64>,
    /// Measure for SECS seconds instead of a number of requests.
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Unmeasured requests before measuring [default: 5% of --ops, at most 10000].
    #[arg(long, value_name = "N")]
    pub warmup: Option<u64>,
    /// Key size in bytes [default: per workload].
    #[arg(long, value_name = "N")]
    pub key_bytes: Option<usize>,
    /// Value size in bytes [default: per workload].
    #[arg(long, value_name = "N")]
    pub value_bytes: Option<usize>,
    /// Seed of every random choice; the same seed replays the same requests.
    #[arg(long, value_name = "N", default_value_t = 42)]
    pub seed: u64,
    /// Durability: sync, buffered[:MS] or none [default: none].
    #[arg(long, value_name = "MODE")]
    pub durability: Option<String>,
    /// Device profile from lamina-storage whose modeled time is reported.
    #[arg(long, value_name = "PROFILE")]
    pub device: Option<String>,
    /// Impose the --device profile's latency for real.
    #[arg(long)]
    pub emulate: bool,
    /// Closed loop: client threads [default: 1].
    #[arg(long, value_name = "T")]
    pub threads: Option<usize>,
    /// Open system (FD+FC section 5): T_r threads serving the lookup queue Q_r.
    #[arg(long, value_name = "T_R")]
    pub readers: Option<usize>,
    /// Open system: T_w threads serving the modification queue Q_w.
    #[arg(long, value_name = "T_W")]
    pub writers: Option<usize>,
    /// Open system: arrival rate (requests/s) of the schedule R_o is measured against.
    #[arg(long, value_name = "V")]
    pub rate: Option<f64>,
    /// Open system: |Q_r| + |Q_w| [default: 5000].
    #[arg(long, value_name = "N")]
    pub queue_slots: Option<usize>,
    /// Runs of every engine; the engine order alternates between rounds.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub rounds: u32,
    /// K of the max-latency-per-bucket series [default: ops/500, at most 10000].
    #[arg(long, value_name = "K")]
    pub bucket_ops: Option<u64>,
    /// Throughput timeline interval in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100)]
    pub interval_ms: u64,
    /// Memory budget of an engine's in-memory level or buffers, bytes.
    #[arg(long, value_name = "BYTES")]
    pub memory_budget_bytes: Option<u64>,
    /// FD+tree size ratio gamma between adjacent levels, 2..=1024 [default: the engine's];
    /// engines without levels are skipped (or refused if named).
    #[arg(long, value_name = "GAMMA")]
    pub fdtree_size_ratio: Option<u32>,
    /// FD+tree's longest key in bytes [default: the API limit]; a large
    /// --fdtree-size-ratio needs it lowered (a block holds 2 * gamma + 1 fences).
    #[arg(long, value_name = "BYTES")]
    pub fdtree_key_bytes_max: Option<usize>,
    /// NB-tree s-tree fanout f, 3..=64 [default: the engine's, 3]; other engines are skipped
    /// (or refused if named).
    #[arg(long, value_name = "F")]
    pub nbtree_fanout: Option<u32>,
    /// Block cache size, bytes.
    #[arg(long, value_name = "BYTES")]
    pub cache_bytes: Option<u64>,
    /// Keep the temporary directory (its path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Write the report as JSON (schema in docs/bench-json.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write latency and throughput over time as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv_timeline: Option<PathBuf>,
    /// Write PNG and SVG charts into DIR.
    #[arg(long, value_name = "DIR")]
    pub plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Load a memcached-protocol server at HOST:PORT (`lamina serve`, memcached) instead
    /// of benchmarking engines in-process; see below.
    #[arg(long, value_name = "HOST:PORT")]
    pub server: Option<String>,
    /// --server: connections, each driven by its own client thread [default: 8].
    #[arg(long, value_name = "N")]
    pub connections: Option<usize>,
    /// --server: requests in flight per connection [default: 1].
    #[arg(long, value_name = "N")]
    pub pipeline: Option<usize>,
    /// --server: records set by the set phase and read by the others [default: 100000].
    #[arg(long, value_name = "N")]
    pub keys: Option<u64>,
    /// --server: phases, in order, from set, get, mixed [default: set,get,mixed].
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    pub phases: Vec<String>,
    /// --server: percent of the mixed phase's requests that are gets [default: 90].
    #[arg(long, value_name = "PERCENT")]
    pub get_percent: Option<u32>,
}
