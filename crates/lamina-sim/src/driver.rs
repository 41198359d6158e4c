//! One seed's run: a store life of [`CYCLES_PER_SEED`] crash cycles. Each cycle arms a seeded
//! fault plan (a crash at a random storage operation or persist, torn crashing writes,
//! unsynced writes surviving, and sometimes an EIO, an ENOSPC or a bit flip), reopens the
//! engine over what the previous crash left, checks every key of the model with `get` and a
//! full scan, runs the engine's `verify`, and continues the workload until the crash.

use std::collections::BTreeMap;

use lamina_core::{CasOutcome, Error, KeyRange, WriteBatch};
use lamina_storage::FailKind;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::engines::{Engine, EngineName};
use crate::medium::{CyclePlan, Fault, Medium};
use crate::model::{Model, Verdict, show};
use crate::workload::{Op, Workload};

/// Crash cycles per seed: one store life (a fresh store starts each seed).
pub const CYCLES_PER_SEED: u64 = 20;
/// Workload operations per cycle at most (the crash usually strikes first).
pub const OPS_PER_CYCLE: u64 = 48;
/// Page size of the checking scans (small, so paging is exercised).
const SCAN_PAGE: usize = 37;
/// Writes refused with `NoSpace` in a row after space came back before it counts as broken.
const NO_SPACE_AFTER_HEAL_MAX: u32 = 8;

/// What one or more seeds did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Crash cycles run.
    pub crashes: u64,
    /// Crashes that struck while reopening or checking (during recovery).
    pub crashes_in_recovery: u64,
    /// Crashes that struck a workload operation.
    pub crashes_in_workload: u64,
    /// Writes acknowledged (each checked after every later recovery).
    pub writes_acked: u64,
    /// Key checks after recoveries (point reads compared with the model).
    pub keys_checked: u64,
    /// Recoveries that passed the full check (gets, scan, verify).
    pub recoveries_checked: u64,
    /// Cycles with an injected EIO.
    pub eio_cycles: u64,
    /// Cycles with an injected ENOSPC.
    pub enospc_cycles: u64,
    /// Writes refused with `NoSpace`.
    pub no_space_errors: u64,
    /// Cycles where a write was acknowledged after space came back on the same handle.
    pub no_space_recovered: u64,
    /// Cycles with a bit flip.
    pub flip_cycles: u64,
    /// Clear errors (`Io`/`Corruption`) reported for an injected EIO or bit flip.
    pub clear_errors: u64,
    /// Keys found at an older acknowledged state (or absent) after a bit flip: the flip
    /// struck a record recovery then took for a torn tail.
    pub flip_older_keys: u64,
    /// Store lives restarted after a bit flip made the store report damage.
    pub fresh_stores: u64,
    /// Storage operations (or persists) run.
    pub medium_ops: u64,
    /// A digest of every storage operation of every cycle, in order (fptree: its persists'
    /// count): equal digests, the same operations in the same order, so two runs of a seed
    /// that agree here replayed each other exactly.
    pub ops_digest: u64,
}

impl Tally {
    /// Adds `other`.
    pub fn add(&mut self, other: &Tally) {
        self.crashes += other.crashes;
        self.crashes_in_recovery += other.crashes_in_recovery;
        self.crashes_in_workload += other.crashes_in_workload;
        self.writes_acked += other.writes_acked;
        self.keys_checked += other.keys_checked;
        self.recoveries_checked += other.recoveries_checked;
        self.eio_cycles += other.eio_cycles;
        self.enospc_cycles += other.enospc_cycles;
        self.no_space_errors += other.no_space_errors;
        self.no_space_recovered += other.no_space_recovered;
        self.flip_cycles += other.flip_cycles;
        self.clear_errors += other.clear_errors;
        self.flip_older_keys += other.flip_older_keys;
        self.fresh_stores += other.fresh_stores;
        self.medium_ops += other.medium_ops;
        self.ops_digest = fold_digest(self.ops_digest, other.ops_digest);
    }
}

/// Folds `next` into the order-sensitive `digest`.
fn fold_digest(digest: u64, next: u64) -> u64 {
    digest.rotate_left(17) ^ next.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// A failed check: the engine, the seed and what went wrong, with the command replaying it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The engine.
    pub engine: EngineName,
    /// The seed (one store life).
    pub seed: u64,
    /// The crash cycle within the seed (0-based).
    pub cycle: u64,
    /// The cycle's fault plan.
    pub plan: Option<CyclePlan>,
    /// What went wrong.
    pub what: String,
}

impl Failure {
    /// The command that replays exactly this seed.
    pub fn replay_command(&self) -> String {
        format!("scripts/simulate {} {CYCLES_PER_SEED} {}", self.engine.name(), self.seed)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "FAILED engine {} seed {} cycle {}: {}\n  fault plan: {:?}\n  replay: {}",
            self.engine.name(),
            self.seed,
            self.cycle,
            self.what,
            self.plan,
            self.replay_command()
        )
    }
}

/// How an engine error is judged.
enum Judged {
    /// The crash struck: the operation was in flight.
    Crashed,
    /// An injected ENOSPC answered with `NoSpace`.
    NoSpace,
    /// A clear error for an injected EIO or a bit flip.
    Clear,
}

/// How a cycle ended, when not by a failure.
enum CycleEnd {
    /// Crash (planned or forced) after the workload ran or stopped.
    Done,
    /// The damage of a bit flip was reported: the store's life is over.
    Damaged,
}

/// Runs seed `seed` of `engine` for `cycles` crash cycles.
pub fn run_seed(engine: EngineName, seed: u64, cycles: u64) -> Result<Tally, Failure> {
    let mut sim = Sim {
        engine,
        seed,
        rng: ChaCha8Rng::seed_from_u64(seed),
        medium: Medium::new(engine),
        model: Model::new(),
        workload: Workload::new(engine.value_bytes_max()),
        fresh: true,
        damaged: false,
        recovery_ops: 16,
        work_ops: 64,
        plan: None,
        tally: Tally::default(),
    };
    for cycle in 0..cycles {
        let failure = |what: String, plan| Failure { engine, seed, cycle, plan, what };
        let plan = sim.plan_cycle();
        sim.plan = Some(plan);
        sim.medium
            .begin_cycle(&plan)
            .map_err(|e| failure(format!("arming the cycle: {e}"), Some(plan)))?;
        let ops_before = sim.medium.ops();
        if trace_ops() {
            eprintln!("cycle {cycle} begins: {plan:?}");
        }
        let end = sim.cycle().map_err(|what| failure(what, Some(plan)))?;
        if sim.flip_struck() {
            sim.damaged = true; // the flipped bit stays in the store, whatever the cycle did
        }
        if trace() {
            eprintln!(
                "cycle {cycle}: {plan:?} -> crashed {} at op {}; {} keys certain",
                sim.medium.crashed(),
                sim.medium.ops(),
                sim.model.present_count()
            );
        }
        sim.tally.crashes += 1;
        sim.tally.medium_ops += sim.medium.ops() - ops_before;
        sim.tally.ops_digest = fold_digest(sim.tally.ops_digest, sim.medium.ops_digest());
        if let Some(ops) = sim.medium.take_ops_trace() {
            for line in ops {
                eprintln!("  {line}");
            }
        }
        if let CycleEnd::Damaged = end {
            sim.tally.fresh_stores += 1;
            sim.medium = Medium::new(engine);
            sim.model = Model::new();
            sim.fresh = true;
            sim.damaged = false;
        }
    }
    Ok(sim.tally)
}

/// Whether `LAMINA_SIM_TRACE_OPS` asks for a line per storage operation (finding where two
/// runs of a seed part).
pub(crate) fn trace_ops() -> bool {
    // Asked after every operation: read the environment once.
    static TRACE_OPS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE_OPS.get_or_init(|| std::env::var_os("LAMINA_SIM_TRACE_OPS").is_some())
}

/// Whether `LAMINA_SIM_TRACE` asks for a line per cycle (replaying a failing seed).
fn trace() -> bool {
    std::env::var_os("LAMINA_SIM_TRACE").is_some()
}

struct Sim {
    engine: EngineName,
    #[allow(dead_code, reason = "kept for debugging output")]
    seed: u64,
    rng: ChaCha8Rng,
    medium: Medium,
    model: Model,
    workload: Workload,
    /// The store was never opened (fptree formats its region at the next open).
    fresh: bool,
    /// A bit flip struck this store: values may be older (counted) or reads fail clearly.
    damaged: bool,
    /// Storage operations (or persists) of the last complete reopen and check: a quarter of
    /// the crash points are drawn from them.
    recovery_ops: u64,
    /// Storage operations of the last cycle's whole workload: the other crash points are
    /// drawn from them.
    work_ops: u64,
    plan: Option<CyclePlan>,
    tally: Tally,
}

impl Sim {
    fn plan_cycle(&mut self) -> CyclePlan {
        let rng = &mut self.rng;
        let crash_at = if rng.random_ratio(1, 4) {
            rng.random_range(1..=self.recovery_ops.max(1))
        } else {
            self.recovery_ops + rng.random_range(1..=self.work_ops + self.work_ops / 4 + 1)
        };
        let unsynced_survival_percent = [0, 0, 20, 50, 100][rng.random_range(0..5)];
        let on_storage = self.engine.on_storage();
        let fault = match rng.random_range(0..100) {
            0..6 if on_storage => Fault::Fail {
                at: rng.random_range(1..=crash_at),
                kind: FailKind::Eio,
                sticky: rng.random_bool(0.5),
            },
            6..12 if on_storage => Fault::Fail {
                at: rng.random_range(1..=crash_at),
                kind: FailKind::NoSpace,
                sticky: rng.random_bool(0.5),
            },
            12..16 => Fault::Flip {
                at: if on_storage { rng.random_range(1..=crash_at) } else { rng.random() },
            },
            _ => Fault::None,
        };
        match fault {
            Fault::Fail { kind: FailKind::Eio, .. } => self.tally.eio_cycles += 1,
            Fault::Fail { kind: FailKind::NoSpace, .. } => self.tally.enospc_cycles += 1,
            Fault::Flip { .. } => self.tally.flip_cycles += 1,
            Fault::None => {}
        }
        CyclePlan { seed: rng.random(), crash_at, unsynced_survival_percent, fault }
    }

    /// Whether the cycle's flip has struck (storage: its operation was reached; a region is
    /// flipped before the cycle).
    fn flip_struck(&self) -> bool {
        match self.plan.map(|p| p.fault) {
            Some(Fault::Flip { at }) => !self.engine.on_storage() || self.medium.ops() >= at,
            _ => false,
        }
    }

    /// Judges an engine error: `Err` is a failure.
    fn judge(&mut self, e: &Error, during: &str) -> Result<Judged, String> {
        if self.medium.crashed() {
            return Ok(Judged::Crashed);
        }
        if self.flip_struck() {
            self.damaged = true;
        }
        let injected = match self.plan.map(|p| p.fault) {
            Some(Fault::Fail { at, kind, .. }) if self.medium.ops() >= at => Some(kind),
            _ => None,
        };
        match (e, injected) {
            (Error::NoSpace { .. }, Some(FailKind::NoSpace)) => {
                self.tally.no_space_errors += 1;
                Ok(Judged::NoSpace)
            }
            (Error::Io { .. } | Error::Corruption { .. }, Some(FailKind::Eio)) => {
                self.tally.clear_errors += 1;
                Ok(Judged::Clear)
            }
            (Error::Io { .. } | Error::Corruption { .. }, _) if self.damaged => {
                self.tally.clear_errors += 1;
                Ok(Judged::Clear)
            }
            // A store never opened yet is opened as one that may be created: a flip in its
            // region's header magic makes it a file of another kind, which is refused
            // (`Incompatible`) rather than formatted over (as `lamina::Db` does for a store
            // whose creation was not yet recorded).
            (Error::Incompatible { .. }, _) if self.damaged && self.fresh => {
                self.tally.clear_errors += 1;
                Ok(Judged::Clear)
            }
            _ => Err(format!("{during}: unexpected error {e:?}")),
        }
    }

    fn cycle(&mut self) -> Result<CycleEnd, String> {
        let db = match self.medium.open(self.engine, self.fresh) {
            Ok(db) => db,
            Err(e) => {
                return match self.judge(&e, "opening")? {
                    Judged::Crashed => {
                        self.tally.crashes_in_recovery += 1;
                        Ok(CycleEnd::Done)
                    }
                    Judged::Clear if self.damaged => Ok(CycleEnd::Damaged),
                    Judged::NoSpace | Judged::Clear => {
                        self.medium.crash().map_err(|e| e.to_string())?;
                        Ok(CycleEnd::Done)
                    }
                };
            }
        };
        // A region keeps running past its crash point: the store exists only if its
        // creation was durable before the crash.
        if !self.medium.crashed() {
            self.fresh = false;
        }
        let end = self.check_then_work(&db);
        let crash = self.medium.crash();
        db.abandon();
        crash.map_err(|e| format!("crashing: {e}"))?;
        end
    }

    fn check_then_work(&mut self, db: &Engine) -> Result<CycleEnd, String> {
        let checked = self.check_recovered(db);
        if let Some(ops) = self.medium.take_ops_trace() {
            for line in ops {
                eprintln!("  {line}");
            }
            eprintln!("recovery checked -> {}", if checked.is_ok() { "ok" } else { "error" });
        }
        match checked {
            Ok(observed) => {
                self.model.check_groups(&observed).map_err(|e| format!("after recovery: {e}"))?;
                self.model.resolve(&observed);
                self.tally.recoveries_checked += 1;
            }
            Err(Checked::Wrong(what)) => return Err(format!("after recovery: {what}")),
            Err(Checked::Engine(e)) => {
                return match self.judge(&e, "checking the recovered store")? {
                    Judged::Crashed => {
                        self.tally.crashes_in_recovery += 1;
                        Ok(CycleEnd::Done)
                    }
                    Judged::Clear if self.damaged => Ok(CycleEnd::Damaged),
                    Judged::NoSpace | Judged::Clear => Ok(CycleEnd::Done),
                };
            }
        }
        self.work(db)
    }

    /// Every key of the model by `get`, then a full scan in pages that must agree, then
    /// `verify`. Returns what the store holds.
    fn check_recovered(&mut self, db: &Engine) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, Checked> {
        let index = db.index();
        let mut observed = BTreeMap::new();
        let keys: Vec<Vec<u8>> = self.model.keys().cloned().collect();
        for key in keys {
            let got = index.get(&key).map_err(Checked::Engine)?;
            self.judge_value(&key, got.as_deref())?;
            self.tally.keys_checked += 1;
            if let Some(v) = got {
                observed.insert(key, v);
            }
        }
        let scanned = self.scan_all(db)?;
        if scanned != observed {
            let differs = scanned
                .keys()
                .chain(observed.keys())
                .find(|k| scanned.get(*k) != observed.get(*k))
                .map(|k| show(k))
                .unwrap_or_default();
            return Err(Checked::Wrong(format!(
                "the full scan ({} keys) disagrees with the point reads ({} keys), first at {differs}",
                scanned.len(),
                observed.len()
            )));
        }
        db.verify().map_err(Checked::Engine)?;
        Ok(observed)
    }

    fn judge_value(&mut self, key: &[u8], got: Option<&[u8]>) -> Result<(), Checked> {
        match self.model.check(key, got, self.damaged || self.flip_struck()) {
            Verdict::Expected => Ok(()),
            Verdict::Older => {
                self.tally.flip_older_keys += 1;
                Ok(())
            }
            Verdict::Wrong(what) => Err(Checked::Wrong(what)),
        }
    }

    /// A full scan in pages, checked for order and against the model.
    fn scan_all(&mut self, db: &Engine) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, Checked> {
        let mut range = KeyRange::all();
        let mut scanned = BTreeMap::new();
        loop {
            let page = db.index().scan(&range, SCAN_PAGE).map_err(Checked::Engine)?;
            for (k, v) in &page {
                if scanned.last_key_value().is_some_and(|(last, _)| last >= k) {
                    return Err(Checked::Wrong(format!(
                        "the scan returned {} out of order",
                        show(k)
                    )));
                }
                self.judge_value(k, Some(v))?;
                scanned.insert(k.clone(), v.clone());
            }
            match page.last() {
                Some((last, _)) if page.len() == SCAN_PAGE => range = range.resume_after(last),
                _ => return Ok(scanned),
            }
        }
    }

    /// The workload until the crash strikes (or `OPS_PER_CYCLE` operations ran).
    fn work(&mut self, db: &Engine) -> Result<CycleEnd, String> {
        let ops_at_start = self.medium.ops();
        if !self.medium.crashed() {
            self.recovery_ops = ops_at_start;
        }
        let mut space_back = false;
        let mut refused_since_back = 0;
        for _ in 0..OPS_PER_CYCLE {
            if self.medium.crashed() {
                break;
            }
            let op = self.workload.next(&mut self.rng, &self.model);
            let result = self.execute(db, &op).and_then(|()| db.settle().map_err(Checked::Engine));
            let crashed = self.medium.crashed();
            if let Some(ops) = self.medium.take_ops_trace() {
                let outcome = result.as_ref().map_err(|e| match e {
                    Checked::Engine(e) => e.to_string(),
                    Checked::Wrong(what) => what.clone(),
                });
                for line in ops {
                    eprintln!("  {line}");
                }
                let keys: Vec<String> = op
                    .effects()
                    .iter()
                    .map(|(k, v)| format!("{}{}", show(k), if v.is_some() { "" } else { "(del)" }))
                    .collect();
                eprintln!("{} {} -> {outcome:?}", op.kind(), keys.join(" "));
            }
            let effects = op.effects();
            match result {
                Ok(()) if crashed && !self.medium.acks_after_crash_count() => {
                    self.model.unknown(&effects);
                    self.tally.crashes_in_workload += 1;
                    break;
                }
                Ok(()) => {
                    if !effects.is_empty() {
                        self.model.ack(&effects);
                        self.tally.writes_acked += 1;
                        if space_back && refused_since_back < u32::MAX {
                            self.tally.no_space_recovered += 1;
                            refused_since_back = u32::MAX; // counted once per cycle
                        }
                    }
                    if crashed {
                        self.tally.crashes_in_workload += 1;
                        break;
                    }
                }
                Err(Checked::Wrong(what)) => return Err(format!("{op:?}: {what}")),
                Err(Checked::Engine(e)) => {
                    self.model.unknown(&effects);
                    match self.judge(&e, &format!("{op:?}"))? {
                        Judged::Crashed => {
                            self.tally.crashes_in_workload += 1;
                            break;
                        }
                        Judged::NoSpace => {
                            if space_back {
                                refused_since_back += 1;
                                if refused_since_back > NO_SPACE_AFTER_HEAL_MAX {
                                    return Err(format!(
                                        "{refused_since_back} writes refused with NoSpace after \
                                         space came back (last: {e})"
                                    ));
                                }
                            }
                            self.medium.stop_failing();
                            space_back = true;
                        }
                        Judged::Clear if self.damaged => return Ok(CycleEnd::Damaged),
                        Judged::Clear => break,
                    }
                }
            }
        }
        if !self.medium.crashed() {
            self.work_ops = (self.medium.ops() - ops_at_start).max(8);
        }
        Ok(CycleEnd::Done)
    }

    /// Runs `op`, checking what it returns against the model.
    fn execute(&mut self, db: &Engine, op: &Op) -> Result<(), Checked> {
        let index = db.index();
        match op {
            Op::Put(k, v) => index.put(k, v).map_err(Checked::Engine),
            Op::Delete(k) => {
                let existed = index.delete(k).map_err(Checked::Engine)?;
                match self.model.certain(k) {
                    Some(current) if current.is_some() != existed && !self.damaged => {
                        Err(Checked::Wrong(format!(
                            "delete of {} returned {existed}, the model says {}",
                            show(k),
                            current.is_some()
                        )))
                    }
                    _ => Ok(()),
                }
            }
            Op::Cas { key, expected, new, swaps } => {
                let outcome = index
                    .compare_and_swap(key, expected.as_deref(), new.as_deref())
                    .map_err(Checked::Engine)?;
                match (outcome, swaps) {
                    (CasOutcome::Swapped, true) => Ok(()),
                    (CasOutcome::Mismatch { current }, false) => {
                        self.judge_value(key, current.as_deref())
                    }
                    (outcome, _) if !self.damaged => Err(Checked::Wrong(format!(
                        "compare-and-swap of {} gave {outcome:?}, the model says swapped={swaps}",
                        show(key)
                    ))),
                    _ => Ok(()),
                }
            }
            Op::Batch(effects) => {
                let mut batch = WriteBatch::new();
                for (k, v) in effects {
                    match v {
                        Some(v) => batch.put(k.clone(), v.clone()),
                        None => batch.delete(k.clone()),
                    };
                }
                index.write_batch(&batch).map_err(Checked::Engine)
            }
            Op::Get(k) => {
                let got = index.get(k).map_err(Checked::Engine)?;
                self.judge_value(k, got.as_deref())
            }
            Op::Scan => {
                let scanned = self.scan_all(db)?;
                for key in self.model.keys().cloned().collect::<Vec<_>>() {
                    if !scanned.contains_key(&key) {
                        self.judge_value(&key, None)?;
                    }
                }
                Ok(())
            }
            Op::Maintain => db.maintain().map_err(Checked::Engine),
        }
    }
}

/// Why a check did not pass.
enum Checked {
    /// The engine returned an error (judged by the caller).
    Engine(Error),
    /// The engine returned something the model does not allow.
    Wrong(String),
}
