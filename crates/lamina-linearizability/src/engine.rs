//! One round on an engine: open a fresh store through `lamina::Db`, record a history,
//! read every key once more after all clients are done, close, reopen and read every key
//! again (both reads join the history, so the store after a clean reopen must agree with
//! some linearization too), then check it.

use std::path::Path;

use lamina::{Db, Durability, EngineKind, Options};

use crate::checker::{self, Limits, Report};
use crate::history::{History, Operation};
use crate::model::Op;
use crate::recorder::{self, Clock, Recording, Workload};
use crate::store::{NonAtomicCas, StaleReads, Store};

/// Memory budget of the stores: lamina's smallest (64 KiB), so flushes, merges and buffer
/// emptying run all the time.
pub const MEMORY_BUDGET_BYTES: u64 = 64 << 10;
/// Block cache of the stores that have one (small, so reads go to storage).
pub const CACHE_BYTES: u64 = 256 << 10;

/// The options every round opens its store with (one place, so API changes touch one
/// function).
pub fn options_for(engine: EngineKind, durability: Durability) -> Options {
    Options {
        engine,
        durability,
        memory_budget_bytes: MEMORY_BUDGET_BYTES,
        cache_bytes: CACHE_BYTES,
        ..Options::default()
    }
}

/// The durability of round `round`: even rounds `None` (the most operations per second,
/// so the most overlap), odd rounds `Sync` (the group-commit paths).
pub fn durability_of(round: u64) -> Durability {
    if round.is_multiple_of(2) { Durability::None } else { Durability::Sync }
}

/// Engine counters (`Stats::extra`) that count structural work: fdtree's runs written and
/// merges, nbtree's flush jobs, the LA-tree's buffer emptyings and checkpoints, the
/// B+trees' splits, fptree's leaf splits and removals, the log rings' cleaning.
pub const BACKGROUND_COUNTERS: &[&str] = &[
    "runs_written",
    "merges_overflow",
    "merges_full",
    "flush_jobs",
    "emptyings",
    "splits",
    "checkpoints",
    "leaf_removals",
    "log_gc_records_copied",
];

/// Whether the round's calls go straight to `Db` or through a wrapper that breaks
/// linearizability on purpose (to show the check can fail).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Straight through `Db`.
    None,
    /// Gets served from a stale snapshot ([`StaleReads`]).
    StaleReads,
    /// Compare-and-swap as get-then-put without a lock ([`NonAtomicCas`]).
    NonAtomicCas,
}

impl Fault {
    /// The fault named `name` (`none`, `stale-reads`, `non-atomic-cas`).
    pub fn from_name(name: &str) -> Option<Fault> {
        match name {
            "none" => Some(Fault::None),
            "stale-reads" => Some(Fault::StaleReads),
            "non-atomic-cas" => Some(Fault::NonAtomicCas),
            _ => None,
        }
    }
}

/// What one round recorded and what the checker said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundSummary {
    /// The engine.
    pub engine: EngineKind,
    /// The round's durability.
    pub durability: Durability,
    /// The workload (its seed is the round's).
    pub workload: Workload,
    /// Writes to other keys that ran beside the history.
    pub filler_ops: u64,
    /// Bytes the engine wrote to storage during the round.
    pub bytes_written: u64,
    /// The engine's counters of structural work done during the round (those named in
    /// [`BACKGROUND_COUNTERS`] that it reports), evidence that flushes, merges, buffer
    /// emptying, splits or log cleaning ran while the history was recorded.
    pub background: Vec<(&'static str, u64)>,
    /// Operations that overlap another on the same key ([`History::overlapping_operations`]).
    pub overlapping: usize,
    /// The checker's report.
    pub report: Report,
}

/// Every key read by `client`, one after another.
fn read_all<S: Store>(
    store: &S,
    clock: &Clock,
    keys: u32,
    client: u32,
) -> Result<Vec<Operation>, String> {
    (0..keys).map(|key| recorder::timed(store, clock, client, key, Op::Get)).collect()
}

/// The workload's recording, then every key read once more.
fn recorded<S: Store>(
    store: &S,
    workload: &Workload,
    clock: &Clock,
) -> Result<(Recording, Vec<Operation>), String> {
    let recording = recorder::record(store, workload, clock)?;
    let after = read_all(store, clock, workload.keys, workload.clients)?;
    Ok((recording, after))
}

fn opened(dir: &Path, options: Options) -> Result<Db, String> {
    Db::open(dir, options).map_err(|e| format!("open {}: {e}", dir.display()))
}

/// Records and checks one history of `workload` on a fresh `engine` store.
pub fn run_round(
    engine: EngineKind,
    durability: Durability,
    workload: &Workload,
    fault: Fault,
    limits: &Limits,
) -> Result<RoundSummary, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let options = options_for(engine, durability);
    let clock = Clock::start();
    let db = opened(dir.path(), options)?;
    let (recording, mut after) = match fault {
        Fault::None => recorded(&db, workload, &clock)?,
        Fault::StaleReads => recorded(&StaleReads::new(&db), workload, &clock)?,
        Fault::NonAtomicCas => recorded(&NonAtomicCas::new(&db), workload, &clock)?,
    };
    let stats = db.stats();
    let bytes_written = stats.io.bytes_written;
    let background =
        stats.extra.into_iter().filter(|(name, _)| BACKGROUND_COUNTERS.contains(name)).collect();
    db.close().map_err(|e| format!("close: {e}"))?;
    drop(db);
    let reopened = opened(dir.path(), options)?;
    after.extend(read_all(&reopened, &clock, workload.keys, workload.clients + 1)?);
    reopened.close().map_err(|e| format!("close after reopen: {e}"))?;
    let mut history: History = recording.history;
    history.operations.extend(after);
    history.validate()?;
    let report = checker::check(&history, limits);
    let overlapping = history.overlapping_operations();
    Ok(RoundSummary {
        engine,
        durability,
        workload: *workload,
        filler_ops: recording.filler_ops,
        bytes_written,
        background,
        overlapping,
        report,
    })
}
