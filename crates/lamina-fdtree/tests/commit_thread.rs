//! The commit thread (`engine/background.rs`): the flush thread never waits for a commit.
//!
//! A storage whose superblock syncs wait at a gate holds every commit where it names the
//! new state; meanwhile the flush thread must still write and install memtable after
//! memtable as runs. When the flush thread made its own commits, a frozen memtable waited
//! for the commit in front of it, and writers ran out of room behind it (at 50M keys a
//! commit beside a merge into the bottom level took up to 765 ms: every insert maximum of
//! 60-500 ms, `docs/results/scale.md`, sessions 21-22).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use lamina_core::{KeyRange, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};
use lamina_storage::{MemoryStorage, OpenMode, Storage, StorageFile};
use parking_lot::{Condvar, Mutex};

/// How long a call may take before it counts as a hang.
const CALL_TIME_MAX: Duration = Duration::from_mins(1);

/// The file whose syncs wait at the gate: every commit syncs it last.
const GATED_FILE: &str = "fdtree.super";

#[derive(Debug, Default)]
struct GateState {
    closed: bool,
    /// Syncs waiting at the gate now.
    waiting: u32,
}

#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

impl Gate {
    fn set_closed(&self, closed: bool) {
        self.state.lock().closed = closed;
        self.cv.notify_all();
    }

    fn pass(&self) {
        let mut st = self.state.lock();
        st.waiting += 1;
        self.cv.notify_all();
        while st.closed {
            self.cv.wait(&mut st);
        }
        st.waiting -= 1;
    }

    /// Waits until a sync waits at the gate (or fails the test after [`CALL_TIME_MAX`]).
    fn wait_for_a_waiter(&self) {
        let mut st = self.state.lock();
        let deadline = std::time::Instant::now() + CALL_TIME_MAX;
        while st.waiting == 0 {
            assert!(
                !self.cv.wait_until(&mut st, deadline).timed_out(),
                "no commit reached the gate"
            );
        }
    }
}

/// Memory storage whose [`GATED_FILE`] syncs wait at a gate.
#[derive(Debug)]
struct Gated {
    inner: MemoryStorage,
    gate: Arc<Gate>,
}

#[derive(Debug)]
struct GatedFile {
    inner: Arc<dyn StorageFile>,
    gate: Option<Arc<Gate>>,
}

impl Storage for Gated {
    fn open(&self, name: &str, mode: OpenMode) -> lamina_core::Result<Arc<dyn StorageFile>> {
        let inner = self.inner.open(name, mode)?;
        let gate = (name == GATED_FILE).then(|| self.gate.clone());
        Ok(Arc::new(GatedFile { inner, gate }))
    }
    fn remove(&self, name: &str) -> lamina_core::Result<()> {
        self.inner.remove(name)
    }
    fn rename(&self, from: &str, to: &str) -> lamina_core::Result<()> {
        self.inner.rename(from, to)
    }
    fn list(&self) -> lamina_core::Result<Vec<String>> {
        self.inner.list()
    }
    fn exists(&self, name: &str) -> lamina_core::Result<bool> {
        self.inner.exists(name)
    }
    fn sync_dir(&self) -> lamina_core::Result<()> {
        self.inner.sync_dir()
    }
    fn io_stats(&self) -> lamina_core::IoStats {
        self.inner.io_stats()
    }
    fn path_of(&self, name: &str) -> std::path::PathBuf {
        self.inner.path_of(name)
    }
}

impl StorageFile for GatedFile {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> lamina_core::Result<()> {
        self.inner.read_exact_at(offset, buf)
    }
    fn write_all_at(&self, offset: u64, data: &[u8]) -> lamina_core::Result<()> {
        self.inner.write_all_at(offset, data)
    }
    fn len(&self) -> lamina_core::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> lamina_core::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> lamina_core::Result<()> {
        if let Some(gate) = &self.gate {
            gate.pass();
        }
        self.inner.sync_data()
    }
    fn punch_hole(&self, offset: u64, len: u64) -> lamina_core::Result<()> {
        self.inner.punch_hole(offset, len)
    }
    fn allocated_bytes(&self) -> lamina_core::Result<u64> {
        self.inner.allocated_bytes()
    }
}

fn options() -> FdTreeOptions {
    FdTreeOptions {
        // Room for many runs in L_0: no merge (and no merge commit) in this test.
        memory_budget_bytes: 1 << 20,
        block_bytes: 4096,
        segment_bytes: 4096,
        key_bytes_max: 8,
        value_bytes_max: 8,
        cache_bytes: 0,
        mode: FcMode::Fc,
        ..FdTreeOptions::default()
    }
}

fn put_range(db: &FdTree, oracle: &mut BTreeMap<Vec<u8>, Vec<u8>>, keys: std::ops::Range<u64>) {
    for i in keys {
        db.put(&i.to_be_bytes(), &i.to_le_bytes()).unwrap();
        oracle.insert(i.to_be_bytes().to_vec(), i.to_le_bytes().to_vec());
    }
}

fn runs(db: &FdTree) -> usize {
    db.with_tree(lamina_fdtree::Tree::run_count).unwrap()
}

#[test]
fn runs_are_written_and_installed_while_a_commit_waits() {
    let gate = Arc::new(Gate::default());
    let storage = Arc::new(Gated { inner: MemoryStorage::new(), gate: gate.clone() });
    let db = Arc::new(FdTree::open(storage.clone(), &options()).unwrap());
    let mut oracle = BTreeMap::new();
    gate.set_closed(true);

    put_range(&db, &mut oracle, 0..100);
    db.flush().unwrap();
    // The run is installed; its commit waits at the gate.
    gate.wait_for_a_waiter();
    let runs_before = runs(&db);
    for round in 1..=3u64 {
        put_range(&db, &mut oracle, round * 100..round * 100 + 100);
        let flushing = db.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(flushing.flush());
        });
        rx.recv_timeout(CALL_TIME_MAX)
            .unwrap_or_else(|_| panic!("flush {round} waits for the commit held at the gate"))
            .unwrap();
    }
    assert_eq!(runs(&db), runs_before + 3, "three more runs installed while the commit waits");
    assert!(!db.with_tree(|t| t.merge_due().is_some() || t.merge_in_progress()).unwrap());
    let got: BTreeMap<_, _> = db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(got, oracle);

    gate.set_closed(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    db.close().unwrap();
    drop(db);

    let db = FdTree::open(storage, &options()).unwrap();
    let got: BTreeMap<_, _> = db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(got, oracle);
    db.close().unwrap();
}
