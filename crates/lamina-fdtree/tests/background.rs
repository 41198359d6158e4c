//! Background merges (FD+DS, section 3; FD+FC for the failure cases): the merge thread is held
//! at a hook between merge-execute and the switch, and lookups, scans and modifications
//! complete meanwhile (they never wait for the merge); then the merge switches in and
//! everything is still there. A background merge or flush that fails is reported, sticks,
//! and never hangs anybody.
//!
//! Ported from the v1 tests, adapted to v2 (issue 22):
//! - `L_0`'s memtable is written out as a run (`FdTree::flush` forces it) before a merge
//!   can take it; a merge is due when the runs outgrow `kappa_0`.
//! - v1's `a_writer_waits_only_when_l0_is_full_and_resumes_after_the_switch` no longer
//!   applies: FD+DS writers no longer wait for merges (all of `L_0`'s memory serves
//!   `L_0^new`, whose full memtables become runs, `flush.rs`). Its replacement,
//!   `writers_are_never_held_up_by_a_held_merge`, writes many memtables' worth while the
//!   merge is held.
//! - Counters are upper bounds (blind puts), not exact counts.
//! - v1's `a_failed_background_merge_changes_nothing_and_is_reported` expected the next merge
//!   to succeed after an I/O error. Failures are sticky now (issue 22): after an `EIO` every
//!   modification gets the error, `wait_for_merges`, `verify` and `sync` return it promptly,
//!   lookups and scans still see every acknowledged write. A full disk (`ENOSPC`) is waited
//!   out: the same handle completes every write. Both are checked for FD+DS and FD+FC
//!   (`a_failed_background_..._ds` / `_fc`), with a storage wrapper that injects `ENOSPC`
//!   only into operations that allocate (`FaultyStorage` injects it into reads too); new:
//!   `ENOSPC` on an FD+FC merge's progress record and fences file
//!   (`a_full_disk_writing_...`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use lamina_core::{Error, KeyRange, OrderedIndex, WriteBatch};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions, RUNS_PACE_FLOOR, RUNS_PACE_SPAN, Tree};
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_storage::{FailKind, MemoryStorage, OpenMode, Storage, StorageFile};

fn tiny() -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 2048,
        block_bytes: 512,
        segment_bytes: 512,
        size_ratio: 2,
        key_bytes_max: 8,
        value_bytes_max: 8,
        verify_each_merge: true,
        cache_bytes: 0,
        mode: FcMode::Ds,
        ..FdTreeOptions::default()
    }
}

/// Whether the tree has a merge due or already started (the merge thread may start it at
/// any moment after it is due).
fn merge_due_or_running(db: &FdTree) -> bool {
    db.with_tree(|t| t.merge_due().is_some() || t.merge_in_progress()).unwrap()
}

/// How long a call may take before it counts as a hang.
const CALL_TIME_MAX: Duration = Duration::from_mins(1);
/// How long a modification refused after a failure may take (it must not wait).
const REFUSAL_TIME_MAX: Duration = Duration::from_secs(10);

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn has_extension(name: &str, ext: &str) -> bool {
    std::path::Path::new(name).extension().is_some_and(|e| e == ext)
}

fn all(db: &FdTree) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect()
}

/// Holds the merge thread, then writes odd keys (writing each memtable out) until a merge
/// is due, and waits until the merge is held before its switch.
fn hold_the_next_merge(db: &FdTree, oracle: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
    db.hold_merges(true);
    let mut i = 1u64;
    while !merge_due_or_running(db) {
        db.put(&key(i), b"odd").unwrap();
        oracle.insert(key(i).to_vec(), b"odd".to_vec());
        i += 2;
        if i % 16 == 1 {
            db.flush().unwrap();
        }
        assert!(i < 100_000, "no merge became due");
    }
    db.wait_merge_held();
    assert!(db.with_tree(Tree::merge_in_progress).unwrap());
}

#[test]
fn lookups_and_writes_complete_while_the_merge_is_held() {
    let db = FdTree::volatile(&tiny()).unwrap();
    let mut oracle = BTreeMap::new();
    // Grow the tree to a few levels with merges running freely.
    for i in 0..300u64 {
        db.put(&key(i * 2), &i.to_le_bytes()).unwrap();
        oracle.insert(key(i * 2).to_vec(), i.to_le_bytes().to_vec());
    }
    db.flush().unwrap();
    db.wait_for_merges().unwrap();
    assert!(db.with_tree(|t| t.materialized_labels().len()).unwrap() >= 2);
    let merges_before = db.with_tree(|t| t.merge_counts().overflow).unwrap();
    hold_the_next_merge(&db, &mut oracle);
    // Every lookup completes while the merge is held: through L_0^new, L_0^old's runs and
    // the old levels.
    for (k, v) in &oracle {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {k:?}");
    }
    assert_eq!(db.get(&key(1_000_001)).unwrap(), None);
    assert_eq!(all(&db), oracle);
    // Modifications go to L_0^new (a delete of a key below, an overwrite, new keys) and
    // need no merge.
    assert!(db.delete(&key(0)).unwrap());
    oracle.remove(key(0).as_slice());
    db.put(&key(4), b"new").unwrap();
    oracle.insert(key(4).to_vec(), b"new".to_vec());
    let mut batch = WriteBatch::new();
    for i in 0..20u64 {
        batch.put(key(5_000 + i).to_vec(), b"batch".to_vec());
        oracle.insert(key(5_000 + i).to_vec(), b"batch".to_vec());
    }
    db.write_batch(&batch).unwrap();
    assert_eq!(db.get(&key(0)).unwrap(), None);
    assert_eq!(db.get(&key(4)).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(all(&db), oracle);
    // Written out as a run of L_0^new while the merge is still held.
    db.flush().unwrap();
    assert_eq!(all(&db), oracle);
    assert!(db.with_tree(Tree::merge_in_progress).unwrap());
    assert_eq!(db.with_tree(|t| t.merge_counts().overflow).unwrap(), merges_before);
    // Release: the merge switches in, L_0^new's runs stay L_0's.
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    assert!(db.with_tree(|t| t.merge_counts().overflow).unwrap() > merges_before);
    db.verify().unwrap();
    assert_eq!(all(&db), oracle);
    for (k, v) in &oracle {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {k:?}");
    }
    let keys = db.with_tree(|t| t.counters().live_keys()).unwrap();
    assert!(keys >= oracle.len() as u64, "live keys {keys} < {} (an upper bound)", oracle.len());
}

/// FD+DS writers never wait for a merge below the pacing ceiling (`engine/pacing.rs`): with
/// the merge held for good, they write many memtables' worth, which go to disk as runs of
/// `L_0^new`; lookups meanwhile see all of it.
#[test]
fn writers_are_never_held_up_by_a_held_merge() {
    let db = Arc::new(FdTree::volatile(&tiny()).unwrap());
    let mut oracle = BTreeMap::new();
    hold_the_next_merge(&db, &mut oracle);
    let runs_before = db.with_tree(Tree::run_count).unwrap();
    let target = runs_before + 6;
    assert!(target < RUNS_PACE_FLOOR + RUNS_PACE_SPAN);
    // Two writers at once, on different keys, until `L_0^new` has 6 more runs.
    let writer = |base: u64| {
        let db = db.clone();
        std::thread::spawn(move || {
            // Each writer writes at least one key (the checks below read each one's first):
            // on a loaded machine one may start only after the other reached the target.
            let mut written = 0u64;
            loop {
                assert!(written < 20_000, "memtables were not written out as runs");
                db.put(&key(base + written), b"v").unwrap();
                written += 1;
                if db.with_tree(Tree::run_count).unwrap() >= target {
                    break written;
                }
            }
        })
    };
    let writers = [(1_000_000, writer(1_000_000)), (2_000_000, writer(2_000_000))];
    for (base, w) in writers {
        for i in 0..w.join().unwrap() {
            oracle.insert(key(base + i).to_vec(), b"v".to_vec());
        }
    }
    let runs_after = db.with_tree(Tree::run_count).unwrap();
    assert!(db.with_tree(Tree::merge_in_progress).unwrap(), "the merge is still held");
    assert!(runs_after >= target, "{runs_before} -> {runs_after} runs");
    assert_eq!(db.get(&key(1_000_000)).unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get(&key(2_000_000)).unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(all(&db), oracle);
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    assert_eq!(all(&db), oracle);
}

/// Runs `f` on another thread and fails the test if it takes longer than `limit` (a hang;
/// the thread is left behind).
fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).unwrap_or_else(|_| panic!("{what} hangs (over {limit:?})"))
}

/// Where a [`Faulty`] storage fails.
#[derive(Debug, Clone, Copy)]
struct Plan {
    /// The eligible operation (1-based) that fails; `u64::MAX`: none.
    fail_at: u64,
    kind: FailKind,
    /// Only operations on files whose name ends so are eligible.
    suffix: Option<&'static str>,
}

#[derive(Debug)]
struct Shared {
    inner: Arc<dyn Storage>,
    plan: Plan,
    /// Eligible operations so far.
    ops: AtomicU64,
}

impl Shared {
    /// Counts an operation; fails it if it is the planned one. `ENOSPC` is injected only
    /// into operations that may need space (writes, length changes, creations, syncs),
    /// `EIO` into any.
    fn op(&self, what: &str, name: &str, needs_space: bool) -> lamina_core::Result<()> {
        let eligible = match self.plan.kind {
            FailKind::Eio => true,
            FailKind::NoSpace => needs_space,
        } && self.plan.suffix.is_none_or(|s| name.ends_with(s));
        if !eligible {
            return Ok(());
        }
        let n = self.ops.fetch_add(1, Ordering::SeqCst) + 1;
        if n != self.plan.fail_at {
            return Ok(());
        }
        let context = format!("{what} {name} (injected failure at eligible op {n})");
        Err(match self.plan.kind {
            FailKind::Eio => Error::io(context, std::io::Error::other("injected EIO")),
            FailKind::NoSpace => Error::NoSpace { context },
        })
    }
}

/// A storage that fails one operation (a device error or a full disk), then works again.
/// Unlike `FaultyStorage`, it can keep `ENOSPC` to operations that really allocate.
#[derive(Debug, Clone)]
struct Faulty(Arc<Shared>);

#[derive(Debug)]
struct FaultyFile(Arc<Shared>, Arc<dyn StorageFile>);

impl Faulty {
    fn new(plan: Plan) -> Self {
        Faulty(Arc::new(Shared {
            inner: Arc::new(MemoryStorage::new()),
            plan,
            ops: AtomicU64::new(0),
        }))
    }

    fn ops(&self) -> u64 {
        self.0.ops.load(Ordering::SeqCst)
    }
}

impl Storage for Faulty {
    fn open(&self, name: &str, mode: OpenMode) -> lamina_core::Result<Arc<dyn StorageFile>> {
        let creates = !matches!(mode, OpenMode::Existing);
        self.0.op("opening", name, creates)?;
        let file = self.0.inner.open(name, mode)?;
        Ok(Arc::new(FaultyFile(self.0.clone(), file)))
    }
    fn remove(&self, name: &str) -> lamina_core::Result<()> {
        self.0.op("removing", name, false)?;
        self.0.inner.remove(name)
    }
    fn rename(&self, from: &str, to: &str) -> lamina_core::Result<()> {
        self.0.op("renaming", from, true)?;
        self.0.inner.rename(from, to)
    }
    fn list(&self) -> lamina_core::Result<Vec<String>> {
        self.0.op("listing", "", false)?;
        self.0.inner.list()
    }
    fn exists(&self, name: &str) -> lamina_core::Result<bool> {
        self.0.op("looking for", name, false)?;
        self.0.inner.exists(name)
    }
    fn sync_dir(&self) -> lamina_core::Result<()> {
        self.0.op("syncing the directory", "", true)?;
        self.0.inner.sync_dir()
    }
    fn io_stats(&self) -> lamina_core::IoStats {
        self.0.inner.io_stats()
    }
    fn path_of(&self, name: &str) -> std::path::PathBuf {
        self.0.inner.path_of(name)
    }
}

impl StorageFile for FaultyFile {
    fn name(&self) -> &str {
        self.1.name()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> lamina_core::Result<()> {
        self.0.op("reading", self.name(), false)?;
        self.1.read_exact_at(offset, buf)
    }
    fn write_all_at(&self, offset: u64, data: &[u8]) -> lamina_core::Result<()> {
        self.0.op("writing", self.name(), true)?;
        self.1.write_all_at(offset, data)
    }
    fn len(&self) -> lamina_core::Result<u64> {
        self.0.op("sizing", self.name(), false)?;
        self.1.len()
    }
    fn set_len(&self, len: u64) -> lamina_core::Result<()> {
        self.0.op("resizing", self.name(), true)?;
        self.1.set_len(len)
    }
    fn sync_data(&self) -> lamina_core::Result<()> {
        self.0.op("syncing", self.name(), true)?;
        self.1.sync_data()
    }
    fn punch_hole(&self, offset: u64, len: u64) -> lamina_core::Result<()> {
        self.0.op("punching", self.name(), false)?;
        self.1.punch_hole(offset, len)
    }
    fn allocated_bytes(&self) -> lamina_core::Result<u64> {
        self.1.allocated_bytes()
    }
}

/// What a workload under one injected fault saw.
struct Outcome {
    db: Arc<FdTree>,
    /// Every acknowledged write.
    oracle: BTreeMap<Vec<u8>, Vec<u8>>,
    /// The sticky failure, if one was reported.
    failure: Option<Error>,
    /// Full-disk errors writers got (each retried).
    no_space: u32,
}

/// Puts of `steps` values to `keys` keys, each third step writing the memtable out, each step
/// waiting for the merges it makes due (so the storage operations come in a deterministic
/// order). A full disk is retried; any other error ends the workload.
fn workload(db: FdTree, steps: u64, keys: u64, at: &str) -> Outcome {
    let db = Arc::new(db);
    let mut oracle = BTreeMap::new();
    let mut no_space = 0;
    let mut failure = None;
    'ops: for i in 0..steps {
        let (k, v) = (key(i * 7 % keys), i.to_le_bytes());
        let mut attempts = 0;
        loop {
            match db.put(&k, &v) {
                Ok(()) => break,
                Err(Error::NoSpace { .. }) if attempts < 200 => {
                    no_space += 1;
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => {
                    failure = Some(e);
                    break 'ops;
                }
            }
        }
        oracle.insert(k.to_vec(), v.to_vec());
        if i % 3 == 2 {
            let d = db.clone();
            let flushed =
                within(&format!("{at}: flush at step {i}"), CALL_TIME_MAX, move || d.flush());
            match flushed {
                Ok(()) | Err(Error::NoSpace { .. }) => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let d = db.clone();
        let waited =
            within(&format!("{at}: wait_for_merges at step {i}"), CALL_TIME_MAX, move || {
                d.wait_for_merges()
            });
        if let Err(e) = waited {
            failure = Some(e);
            break;
        }
    }
    Outcome { db, oracle, failure, no_space }
}

/// Checks what a workload under a fault left: lookups and scans see exactly the acknowledged
/// writes; after a sticky failure, every modification gets an error and nothing waits;
/// without one, the tree verifies. Returns whether the failure was sticky.
fn check_outcome(out: &Outcome, expected: &BTreeMap<Vec<u8>, Vec<u8>>, at: &str) -> bool {
    let db = out.db.clone();
    let scanned =
        within(&format!("{at}: scan"), CALL_TIME_MAX, move || db.scan(&KeyRange::all(), 1 << 20));
    let scanned: BTreeMap<_, _> =
        scanned.unwrap_or_else(|e| panic!("{at}: scan failed: {e}")).into_iter().collect();
    assert_eq!(scanned, out.oracle, "{at}");
    for (k, v) in &out.oracle {
        assert_eq!(out.db.get(k).unwrap().as_ref(), Some(v), "{at}: key {k:?}");
    }
    let Some(e) = &out.failure else {
        // A full disk (or a failure nobody needed to report) was waited out.
        assert_eq!(&out.oracle, expected, "{at}");
        let db = out.db.clone();
        within(&format!("{at}: verify"), CALL_TIME_MAX, move || db.verify())
            .unwrap_or_else(|e| panic!("{at}: verify: {e}"));
        return false;
    };
    assert!(matches!(e, Error::Io { .. }), "{at}: {e}");
    // Sticky: every modification gets the error; nothing waits or spins.
    let db = out.db.clone();
    let refused = within(&format!("{at}: a put after the failure"), REFUSAL_TIME_MAX, {
        move || db.put(&key(7), b"after")
    });
    assert!(refused.is_err(), "{at}: a put was accepted after {e}");
    assert!(out.db.delete(&key(7)).is_err(), "{at}: a delete after {e}");
    let mut batch = WriteBatch::new();
    batch.put(key(8).to_vec(), b"after".to_vec());
    assert!(out.db.write_batch(&batch).is_err(), "{at}: a batch after {e}");
    for (what, check) in [
        ("wait_for_merges", FdTree::wait_for_merges as fn(&FdTree) -> lamina_core::Result<()>),
        ("verify", FdTree::verify),
        ("sync", |db: &FdTree| db.sync()),
    ] {
        let db = out.db.clone();
        let r = within(&format!("{at}: {what}"), REFUSAL_TIME_MAX, move || check(&db));
        assert!(r.is_err(), "{at}: {what} succeeded after {e}");
    }
    assert_eq!(out.db.get(&key(7)).unwrap(), out.oracle.get(&key(7)[..]).cloned());
    true
}

const STEPS: u64 = 150;

fn volatile_on(storage: &Faulty, mode: FcMode) -> FdTree {
    let options = FdTreeOptions { mode, ..tiny() };
    FdTree::with_storage(Arc::new(storage.clone()), &options, false).unwrap()
}

fn a_failed_background_merge_or_flush(mode: FcMode) {
    let clean = Faulty::new(Plan { fail_at: u64::MAX, kind: FailKind::Eio, suffix: None });
    let reference = workload(volatile_on(&clean, mode), STEPS, 50, "no fault");
    assert!(reference.failure.is_none() && reference.no_space == 0);
    let merges = reference.db.with_tree(|t| t.merge_counts().overflow).unwrap();
    assert!(merges >= 5, "{merges} merges");
    let expected = reference.oracle.clone();
    drop(reference);
    let mut sticky_seen = 0;
    let mut no_space_seen = 0;
    let mut leaks = Vec::new();
    for kind in [FailKind::Eio, FailKind::NoSpace] {
        let counting = Faulty::new(Plan { fail_at: u64::MAX, kind, suffix: None });
        drop(workload(volatile_on(&counting, mode), STEPS, 50, "no fault"));
        let total_ops = counting.ops();
        // About 40 fault points spread over the whole workload (runs, merges, removals).
        let step = (total_ops / 40).max(1);
        for op in (1..=total_ops).step_by(step as usize) {
            let storage = Faulty::new(Plan { fail_at: op, kind, suffix: None });
            let at = format!("{mode:?}, {kind:?} at eligible op {op} of {total_ops}");
            let out = workload(volatile_on(&storage, mode), STEPS, 50, &at);
            if check_outcome(&out, &expected, &at) {
                assert!(matches!(kind, FailKind::Eio), "{at}: a full disk became sticky");
                sticky_seen += 1;
                continue;
            }
            no_space_seen += out.no_space;
            // No file of a failed merge or run is left behind (a failed removal of a
            // replaced file could leave that one file).
            let parts =
                out.db.with_tree(|t| t.materialized_labels().len() - 1 + t.run_count()).unwrap();
            let files = storage.list().unwrap();
            let lvl = files.iter().filter(|n| has_extension(n, "lvl")).count();
            let idx = files.iter().filter(|n| has_extension(n, "idx")).count();
            if lvl > parts + 1 || idx > parts + 1 {
                leaks.push(format!("{at}: {parts} levels and runs, files {files:?}"));
            }
        }
    }
    assert!(sticky_seen > 0, "no I/O error was ever reported");
    assert!(leaks.is_empty(), "files left behind:\n{}", leaks.join("\n"));
    eprintln!("{mode:?}: {sticky_seen} sticky failures, {no_space_seen} full-disk refusals");
}

#[test]
fn a_failed_background_merge_or_flush_is_sticky_and_a_full_disk_is_waited_out_ds() {
    a_failed_background_merge_or_flush(FcMode::Ds);
}

#[test]
fn a_failed_background_merge_or_flush_is_sticky_and_a_full_disk_is_waited_out_fc() {
    a_failed_background_merge_or_flush(FcMode::Fc);
}

/// A full disk while an FD+FC merge of a persistent tree writes its progress record
/// (`.mrg`, Remark A.6) or `L_0`'s new fences file (`.fen`, at its end) must be waited out
/// like one in a level write (or become a sticky failure): never a merge abandoned half way,
/// which leaves the tree mid-merge for good (no later merge, `wait_for_merges` spinning).
///
/// Failed before the fix, for both files: `wait_for_merges` never returns (the `.mrg` case at step 287,
/// the `.fen` case at step 71). `fc/run.rs` writes both with `BlockStore::write_file`, outside
/// the retry policy the level writers use; the `NoSpace` error ends `run_fc_merge`, and
/// `Inner::fc_merge_once` (`engine/background.rs`) neither records it as a failure (a full
/// disk is not sticky) nor keeps the merge to resume: `Tree::fc` stays set, so
/// `merge_in_progress()` is true forever, `merge_due()` is `None` forever, and
/// `wait_for_merges` loops.
fn a_full_disk_writing(suffix: &'static str) {
    let storage = Faulty::new(Plan { fail_at: 1, kind: FailKind::NoSpace, suffix: Some(suffix) });
    let options = FdTreeOptions {
        mode: FcMode::Fc,
        merge_commit_bytes: 512,
        durability: lamina_core::Durability::None,
        ..tiny()
    };
    let db = FdTree::with_storage(Arc::new(storage.clone()), &options, true).unwrap();
    let at = format!("ENOSPC writing the first {suffix} file");
    let out = workload(db, 4000, 3001, &at);
    assert!(storage.ops() >= 1, "{at}: the fault was not hit");
    let mut expected = BTreeMap::new();
    for i in 0..4000u64 {
        expected.insert(key(i * 7 % 3001).to_vec(), i.to_le_bytes().to_vec());
    }
    check_outcome(&out, &expected, &at);
}

#[test]

fn a_full_disk_writing_a_merge_progress_record_is_waited_out() {
    a_full_disk_writing(".mrg");
}

#[test]

fn a_full_disk_writing_the_fences_file_is_waited_out() {
    a_full_disk_writing(".fen");
}
