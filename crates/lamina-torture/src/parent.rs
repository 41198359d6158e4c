//! The parent: runs the child, kills it with SIGKILL at a random moment, and checks the
//! reopened store against the ledger, cycle after cycle over the same directory.
//!
//! After each kill: `Db::verify` of the crash image (read-only: recovery in memory), then a
//! real open, and
//! - every key the ledger knows holds what its last acknowledged operation left, except the
//!   keys of an operation in flight at the kill (at most one per writer thread), which hold
//!   its old or its new outcome, all keys of an in-flight batch the same way;
//! - a full scan returns exactly the keys the ledger says are present, with those values
//!   (the scan agrees with the point reads).
//!
//! Then the in-flight operations are resolved as found and the next cycle starts.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use lamina::{Db, EngineKind, KeyRange};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::ledger::{Line, Op, Outcome};
use crate::settings::options;
use crate::value::value;

/// One torture run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The engine.
    pub engine: EngineKind,
    /// The store (created by the first cycle; must not hold another store).
    pub dir: PathBuf,
    /// Kill-and-check cycles.
    pub cycles: u64,
    /// Seeds the kill times and every writer's choices.
    pub seed: u64,
    /// The child runs this long (uniformly chosen) before it is killed.
    pub kill_after_ms: std::ops::Range<u64>,
    /// The `lamina-torture` binary (re-run as the child).
    pub exe: PathBuf,
}

/// What a run checked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Cycles run.
    pub cycles: u64,
    /// Acknowledged operations checked.
    pub acknowledged: u64,
    /// Operations in flight at a kill (each found applied or not, never half).
    pub in_flight: u64,
    /// Of those, found applied.
    pub in_flight_applied: u64,
    /// Keys present at the end.
    pub keys_present: u64,
}

/// The state the ledger implies: each key's outcome.
pub type Model = BTreeMap<Vec<u8>, Outcome>;

/// A crash image: the store of `Config::dir` after one child, started on a new store, was
/// killed; with what its ledger says the store must hold.
#[derive(Debug, Clone)]
pub struct CrashImage {
    /// Each key's outcome after the acknowledged operations.
    pub model: Model,
    /// The operations in flight at the kill (each may be found applied or not, never half).
    pub pending: Vec<Op>,
    /// Acknowledged operations.
    pub acknowledged: u64,
}

/// Makes a crash image in `config.dir` (which must not hold a store): one child runs for
/// `run_ms` and is killed with SIGKILL. The image is left as the kill left it (not opened).
pub fn crash_image(config: &Config, run_ms: u64) -> Result<CrashImage, String> {
    check_dir(&config.dir)?;
    let lines = run_child(config, 0, run_ms)?;
    let (mut model, mut summary) = (Model::new(), Summary::default());
    let pending = apply_ledger(&lines, &mut model, &mut summary)?;
    Ok(CrashImage { model, pending, acknowledged: summary.acknowledged })
}

/// Checks an open store against a crash image's ledger: every acknowledged key, the
/// in-flight operations applied whole or not at all, and a full scan equal to the point
/// reads (as every torture cycle does).
pub fn check_image(db: &Db, image: &CrashImage) -> Result<(), String> {
    let mut model = image.model.clone();
    check(db, &mut model, &image.pending, &mut Summary::default())
}

/// Runs `config.cycles` cycles; the first problem found is the error.
pub fn run(config: &Config) -> Result<Summary, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut model = Model::new();
    let mut summary = Summary::default();
    for cycle in 0..config.cycles {
        let at = |e: String| format!("{} cycle {cycle}: {e}", config.engine);
        let run_ms = rng.random_range(config.kill_after_ms.clone());
        let lines = run_child(config, cycle, run_ms).map_err(at)?;
        let pending = apply_ledger(&lines, &mut model, &mut summary).map_err(at)?;
        Db::verify(&config.dir, options(config.engine))
            .map_err(|e| at(format!("verify of the crash image: {e}")))?;
        let db = Db::open(&config.dir, options(config.engine))
            .map_err(|e| at(format!("reopen: {e}")))?;
        let checked = check(&db, &mut model, &pending, &mut summary).map_err(at);
        let closed = db.close().map_err(|e| at(format!("close: {e}")));
        checked?;
        closed?;
        summary.cycles += 1;
    }
    summary.keys_present = model.values().filter(|o| o.is_some()).count() as u64;
    Ok(summary)
}

/// Runs the child for `run_ms`, kills it, and returns the complete ledger lines.
fn run_child(config: &Config, cycle: u64, run_ms: u64) -> Result<Vec<String>, String> {
    let mut child = Command::new(&config.exe)
        .arg("child")
        .arg("--dir")
        .arg(&config.dir)
        .args(["--engine", config.engine.name()])
        .args(["--seed", &config.seed.to_string(), "--cycle", &cycle.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the child: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    std::thread::sleep(Duration::from_millis(run_ms));
    let exited = child.try_wait().map_err(|e| e.to_string())?;
    if exited.is_none() {
        child.kill().map_err(|e| format!("killing the child: {e}"))?;
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let bytes = reader.join().expect("reader thread");
    if let Some(status) = exited {
        let mut stderr = String::new();
        let _ = child.stderr.take().expect("piped").read_to_string(&mut stderr);
        return Err(format!("the child ended by itself ({status}): {}", stderr.trim()));
    }
    debug_assert!(!status.success());
    let text = String::from_utf8_lossy(&bytes);
    // The part after the last newline was cut by the kill: not a line.
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    Ok(complete.lines().map(str::to_owned).collect())
}

/// Applies acknowledged operations to `model`; returns the operations in flight.
fn apply_ledger(
    lines: &[String],
    model: &mut Model,
    summary: &mut Summary,
) -> Result<Vec<Op>, String> {
    let mut pending: HashMap<u64, Op> = HashMap::new();
    for text in lines {
        match Line::decode(text).ok_or_else(|| format!("bad ledger line {text:?}"))? {
            Line::Begin { thread, op } => {
                if pending.insert(thread, op).is_some() {
                    return Err(format!("thread {thread} began twice without an ack"));
                }
            }
            Line::Ack { thread } => {
                let op = pending.remove(&thread).ok_or(format!("ack of thread {thread}"))?;
                for (key, outcome) in op.effects() {
                    model.insert(key, outcome);
                }
                summary.acknowledged += 1;
            }
        }
    }
    Ok(pending.into_values().collect())
}

fn bytes_of(key: &[u8], outcome: Outcome) -> Option<Vec<u8>> {
    outcome.map(|version| value(key, version))
}

fn check(db: &Db, model: &mut Model, pending: &[Op], summary: &mut Summary) -> Result<(), String> {
    let show = |key: &[u8]| String::from_utf8_lossy(key).into_owned();
    let mut in_flight_keys = std::collections::BTreeSet::new();
    for op in pending {
        let mut applied: Option<bool> = None;
        let mut found = Vec::new();
        for (key, new) in op.effects() {
            let old = model.get(&key).copied().flatten();
            let actual = db.get(&key).map_err(|e| format!("get {}: {e}", show(&key)))?;
            let (is_old, is_new) = (actual == bytes_of(&key, old), actual == bytes_of(&key, new));
            if !is_old && !is_new {
                return Err(format!(
                    "{} holds {:?} bytes: neither before ({old:?}) nor after ({new:?}) the \
                     operation in flight {}",
                    show(&key),
                    actual.map(|v| v.len()),
                    op.encode()
                ));
            }
            if is_old != is_new {
                if applied.is_some_and(|a| a != is_new) {
                    return Err(format!("batch in flight half applied: {}", op.encode()));
                }
                applied = Some(is_new);
            }
            found.push((key.clone(), if is_new { new } else { old }));
            in_flight_keys.insert(key);
        }
        summary.in_flight += 1;
        summary.in_flight_applied += u64::from(applied == Some(true));
        model.extend(found);
    }
    for (key, outcome) in model.iter() {
        if in_flight_keys.contains(key) {
            continue;
        }
        let actual = db.get(key).map_err(|e| format!("get {}: {e}", show(key)))?;
        if actual != bytes_of(key, *outcome) {
            return Err(format!(
                "acknowledged state of {} lost: expected {outcome:?} ({:?} bytes), found {:?} \
                 bytes",
                show(key),
                bytes_of(key, *outcome).map(|v| v.len()),
                actual.map(|v| v.len())
            ));
        }
    }
    let mut present = model.iter().filter(|(_, o)| o.is_some());
    for entry in db.iter(KeyRange::all()) {
        let (key, bytes) = entry.map_err(|e| format!("scan: {e}"))?;
        match present.next() {
            Some((expected, outcome)) if *expected == key => {
                if Some(bytes) != bytes_of(&key, *outcome) {
                    return Err(format!("the scan's value of {} differs", show(&key)));
                }
            }
            Some((expected, _)) => {
                return Err(format!(
                    "the scan returned {} where the ledger expects {} next",
                    show(&key),
                    show(expected)
                ));
            }
            None => return Err(format!("the scan returned {} past the last key", show(&key))),
        }
    }
    if let Some((missing, _)) = present.next() {
        return Err(format!("the scan ended before {}", show(missing)));
    }
    Ok(())
}

/// The directory a run uses when none is given.
pub fn default_dir(engine: EngineKind, seed: u64) -> PathBuf {
    std::env::temp_dir().join(format!("lamina-torture-{}-{seed}", engine.name()))
}

/// Refuses a directory that holds anything but a store of `engine` (a previous run's).
pub fn check_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() && Db::engine_of(dir).map_err(|e| e.to_string())?.is_some() {
        return Err(format!(
            "{} already holds a store: the ledger starts empty, so give a new directory",
            dir.display()
        ));
    }
    Ok(())
}
