//! A writer that finds both memtables full waits for room (`Control::wait_room`). Room is
//! made when the flush thread installs the frozen memtable's run. Two things used to stand
//! between the two at 10M keys (`docs/results/scale.md`, session 18): the run's two syncs
//! (10-15 ms each beside a merge), made before it was installed, and the commit after it
//! (superblock syncs, removals, the log's truncation), before which the writer was not
//! woken: it slept until its 50-ms recheck, giving insert maxima of exactly 50, 100 and
//! 150 ms.
//!
//! Here the run's syncs and the superblock's sync never finish while the writer waits, and
//! the recheck is 10 minutes: the writer must be woken by the run's installation itself.
//!
//! And a writer must not wait for the flush thread to freeze the memtable it filled: at 3M
//! keys the flush thread, committing the previous run behind the merge's commit lock, left
//! the active memtable growing to the whole budget, and the writer then waited for a whole
//! run to be written (session 20). The writer that crosses the freeze threshold freezes it.
//!
//! And the flush thread must not wait for a commit: at 50M keys a commit beside a merge
//! into the bottom level took up to 765 ms, and the memtable the writers froze meanwhile
//! waited for it (every insert maximum of 60-500 ms, sessions 21-22). A commit thread
//! commits the runs the flush thread installs; with every commit held, runs are still
//! written and installed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lamina_core::{KeyRange, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};
use lamina_storage::{FileOp, Hook, HookedStorage, MemoryStorage};
use parking_lot::{Condvar, Mutex};

/// How long a step may take before it counts as a hang.
const STEP_TIME_MAX: Duration = Duration::from_mins(1);

/// Puts the writer makes: many memtables' worth.
const PUTS: u64 = 3_000;

/// What is held: writes and syncs of the tree's files (`fd-*`: runs, levels, indexes), and
/// the superblock's syncs (every commit).
#[derive(Debug, Default)]
struct Holds {
    run_writes: bool,
    run_syncs: bool,
    commits: bool,
}

#[derive(Debug, Default)]
struct Gate {
    holds: Mutex<Holds>,
    cv: Condvar,
}

impl Gate {
    fn set(&self, f: impl FnOnce(&mut Holds)) {
        f(&mut self.holds.lock());
        self.cv.notify_all();
    }

    fn pass(&self, name: &str, op: FileOp) {
        let mut holds = self.holds.lock();
        loop {
            let tree_file = name.starts_with("fd-");
            let held = match op {
                FileOp::Read => false,
                FileOp::Write => tree_file && holds.run_writes,
                FileOp::Sync => {
                    (tree_file && holds.run_syncs) || (name == "fdtree.super" && holds.commits)
                }
            };
            if !held {
                return;
            }
            self.cv.wait(&mut holds);
        }
    }
}

/// Waits until `done` holds, polling; panics naming `what` past [`STEP_TIME_MAX`].
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(start.elapsed() < STEP_TIME_MAX, "{what}: not within {STEP_TIME_MAX:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

/// A memory storage whose writes and syncs wait at the gate.
fn gated_storage(gate: &Arc<Gate>) -> Arc<HookedStorage> {
    let gate = gate.clone();
    let hook: Hook = Arc::new(move |name, op| gate.pass(name, op));
    Arc::new(HookedStorage::new(Arc::new(MemoryStorage::new()), hook))
}

/// A small FD+FC tree on gated storage whose writers look for room again only when woken
/// (a 10-minute recheck).
fn gated_tree() -> (Arc<Gate>, Arc<FdTree>) {
    let gate = Arc::new(Gate::default());
    let storage = gated_storage(&gate);
    let db = Arc::new(FdTree::with_storage(storage, &tiny_options(), true).unwrap());
    db.set_room_recheck(Duration::from_mins(10));
    (gate, db)
}

fn tiny_options() -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 4096,
        block_bytes: 512,
        segment_bytes: 512,
        size_ratio: 2,
        key_bytes_max: 8,
        value_bytes_max: 8,
        cache_bytes: 0,
        mode: FcMode::Fc,
        ..FdTreeOptions::default()
    }
}

/// A thread putting keys `0..PUTS`, counting them in `puts`.
fn spawn_writer(db: &Arc<FdTree>, puts: &Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    let (db, puts) = (db.clone(), puts.clone());
    std::thread::spawn(move || {
        for i in 0..PUTS {
            db.put(&key(i), b"value").unwrap();
            puts.fetch_add(1, Ordering::SeqCst);
        }
    })
}

#[test]
fn a_writer_waiting_for_room_is_woken_when_the_run_is_installed_before_any_sync() {
    let (gate, db) = gated_tree();
    // The first run's write waits, so the writer fills both memtables and waits for room.
    gate.set(|h| {
        h.run_writes = true;
        h.run_syncs = true;
        h.commits = true;
    });
    let puts = Arc::new(AtomicU64::new(0));
    let writer = spawn_writer(&db, &puts);
    wait_until("the writer waits for room", || db.room_waiters() > 0);
    let waited_at = puts.load(Ordering::SeqCst);
    assert!(waited_at < PUTS, "the writer waits with puts left to do");
    // The run is written and installed; its syncs and its commit wait.
    gate.set(|h| h.run_writes = false);
    wait_until("the writer resumes once the run is installed", || {
        puts.load(Ordering::SeqCst) > waited_at
    });
    gate.set(|h| {
        h.run_syncs = false;
        h.commits = false;
    });
    wait_until("the writer finishes", || writer.is_finished());
    writer.join().unwrap();
    let expected: BTreeMap<Vec<u8>, Vec<u8>> =
        (0..PUTS).map(|i| (key(i).to_vec(), b"value".to_vec())).collect();
    let found: BTreeMap<Vec<u8>, Vec<u8>> =
        db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(found, expected);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
}

#[test]
fn a_writer_freezes_the_memtable_while_the_flush_thread_is_committing() {
    let (gate, db) = gated_tree();
    // Every commit stays in its superblock sync: the flush thread, once it commits a run,
    // freezes nothing more.
    gate.set(|h| h.commits = true);
    let puts = Arc::new(AtomicU64::new(0));
    let writer = spawn_writer(&db, &puts);
    wait_until("the writer waits for room", || db.room_waiters() > 0);
    let (active, frozen) = db.memtables_bytes();
    // Frozen by the writer at the threshold, a fresh memtable filled behind it; without
    // the writer's freeze, one memtable holds everything and nothing is frozen.
    assert!(frozen > 0, "the writer froze the memtable (active {active} B, frozen {frozen} B)");
    gate.set(|h| h.commits = false);
    wait_until("the writer finishes", || writer.is_finished());
    writer.join().unwrap();
    let found: BTreeMap<Vec<u8>, Vec<u8>> =
        db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(found.len() as u64, PUTS);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
}

#[test]
fn runs_are_written_and_installed_while_every_commit_waits() {
    let gate = Arc::new(Gate::default());
    let storage = gated_storage(&gate);
    // Room for many runs in `L_0`: no merge in this test.
    let options = FdTreeOptions { memory_budget_bytes: 1 << 20, ..tiny_options() };
    let db = Arc::new(FdTree::open(storage.clone(), &options).unwrap());
    let mut oracle = BTreeMap::new();
    let mut put_range = |db: &FdTree, keys: std::ops::Range<u64>| {
        for i in keys {
            db.put(&key(i), &i.to_le_bytes()).unwrap();
            oracle.insert(key(i).to_vec(), i.to_le_bytes().to_vec());
        }
    };
    let runs = |db: &FdTree| db.with_tree(lamina_fdtree::Tree::run_count).unwrap();
    gate.set(|h| h.commits = true);
    put_range(&db, 0..100);
    db.flush().unwrap();
    // That run is installed; its commit waits at the superblock's sync.
    let runs_before = runs(&db);
    for round in 1..=3u64 {
        put_range(&db, round * 100..round * 100 + 100);
        let flushing = db.clone();
        let flushed = std::thread::spawn(move || flushing.flush());
        // With the flush thread committing, it stays in the first commit: this hangs.
        wait_until(&format!("flush {round} behind the held commit"), || flushed.is_finished());
        flushed.join().unwrap().unwrap();
    }
    assert_eq!(runs(&db), runs_before + 3, "three more runs installed while commits wait");
    assert!(!db.with_tree(|t| t.merge_due().is_some() || t.merge_in_progress()).unwrap());
    let found: BTreeMap<Vec<u8>, Vec<u8>> =
        db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(found, oracle);

    gate.set(|h| h.commits = false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    db.close().unwrap();
    drop(db);
    let db = FdTree::open(storage, &options).unwrap();
    let found: BTreeMap<Vec<u8>, Vec<u8>> =
        db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(found, oracle, "after reopening");
    db.close().unwrap();
}
