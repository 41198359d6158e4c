//! Crash tests with the fault-injecting backend: a workload whose merges grow the tree,
//! shrink it and are triggered by underflow is crashed at every storage operation; after
//! each crash the tree is recovered and must hold every acknowledged write (`Sync`), reflect
//! a prefix of the history, pass `verify()`, and keep no file it does not use.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::testkit::{Subject, dump};
use lamina_core::{OrderedIndex, Result, WriteBatch};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};
use lamina_storage::crash_points::for_each_crash_point;
use lamina_storage::{FaultPlan, FaultyStorage, Storage};

fn tiny() -> FdTreeOptions {
    tiny_in(FcMode::Xm)
}

fn tiny_in(mode: FcMode) -> FdTreeOptions {
    FdTreeOptions {
        mode,
        memory_budget_bytes: 512,
        block_bytes: 512,
        segment_bytes: 512,
        size_ratio: 2,
        key_bytes_max: 8,
        value_bytes_max: 8,
        verify_each_merge: true,
        ..FdTreeOptions::default()
    }
}

/// The workload: batches of puts that make the tree grow to three levels, single overwrites,
/// then batches of deletes that trigger underflow merges and shrink it.
fn steps() -> Vec<WriteBatch> {
    let mut steps = Vec::new();
    for b in 0..12u64 {
        let mut batch = WriteBatch::new();
        for k in b * 10..b * 10 + 10 {
            batch.put(k.to_be_bytes().to_vec(), (k * 3).to_le_bytes()[..4].to_vec());
        }
        steps.push(batch);
    }
    for k in [5u64, 50, 115] {
        let mut batch = WriteBatch::new();
        batch.put(k.to_be_bytes().to_vec(), b"new".to_vec());
        steps.push(batch);
    }
    for b in 0..11u64 {
        let mut batch = WriteBatch::new();
        for k in (b * 10..b * 10 + 10).filter(|k| k % 7 != 0) {
            batch.delete(k.to_be_bytes().to_vec());
        }
        steps.push(batch);
    }
    steps
}

/// The expected content after the first `n` steps.
fn state_after(steps: &[WriteBatch], n: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for batch in &steps[..n] {
        for op in batch.ops() {
            match op {
                lamina_core::BatchOp::Put { key, value } => {
                    m.insert(key.clone(), value.clone());
                }
                lamina_core::BatchOp::Delete { key } => {
                    m.remove(key);
                }
            }
        }
    }
    m
}

#[test]
fn every_crash_point_recovers_acknowledged_writes_xm() {
    every_crash_point_recovers_acknowledged_writes(FcMode::Xm);
}

/// FD+DS: the workload waits for the background merges after each step, so the storage
/// operations (the merge thread's included) come in a deterministic order and every one of
/// them is a crash point.
#[test]
fn every_crash_point_recovers_acknowledged_writes_ds() {
    every_crash_point_recovers_acknowledged_writes(FcMode::Ds);
}

/// FD+FC: as FD+DS, with crashes landing between and within the merge's stages.
#[test]
fn every_crash_point_recovers_acknowledged_writes_fc() {
    every_crash_point_recovers_acknowledged_writes(FcMode::Fc);
}

/// FD+FC with a progress commit (Remark A.6) after every stage that reclaims an old block:
/// crashes land before, between and after progress records, and recovery resumes the merge
/// from the last one (its freed old blocks are gone for good).
#[test]
fn every_crash_point_recovers_acknowledged_writes_fc_resuming_merges() {
    every_crash_point_recovers(|| FdTreeOptions { merge_commit_bytes: 512, ..tiny_in(FcMode::Fc) });
}

fn every_crash_point_recovers_acknowledged_writes(mode: FcMode) {
    every_crash_point_recovers(|| tiny_in(mode));
}

fn every_crash_point_recovers(tiny: impl Fn() -> FdTreeOptions) {
    let steps = steps();
    let acked = Cell::new(0usize);
    let runs = for_each_crash_point(
        &FaultPlan::none(),
        |_| Ok(()),
        |storage| {
            acked.set(0);
            let db = FdTree::open(storage.clone(), &tiny())?;
            for (i, batch) in steps.iter().enumerate() {
                db.write_batch(batch)?;
                acked.set(i + 1);
                db.wait_for_merges()?;
            }
            db.close()
        },
        |recovered, crash_op| {
            let db = FdTree::open(recovered.clone(), &tiny())?;
            db.verify()?;
            let got = dump(&db);
            let n = acked.get();
            let ok = got == state_after(&steps, n)
                || (n < steps.len() && got == state_after(&steps, n + 1));
            assert!(ok, "crash at op {crash_op}: state is not that after {n} or {} steps", n + 1);
            let levels = db.with_tree(|t| t.materialized_labels().len() - 1 + t.run_count())?;
            let files = recovered.list()?;
            let count = |suffix: &str| {
                files.iter().filter(|n| n.starts_with("fd-") && n.ends_with(suffix)).count()
            };
            assert_eq!(count(".lvl"), levels, "crash at op {crash_op}: leaked levels {files:?}");
            assert_eq!(count(".idx"), levels, "crash at op {crash_op}: leaked indexes {files:?}");
            assert!(count(".fen") <= 1, "crash at op {crash_op}: leaked fences {files:?}");
            assert_eq!(count(".mrg"), 0, "crash at op {crash_op}: leaked progress {files:?}");
            db.close()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{runs:?}");
    assert!(runs.crash_points > 50, "{runs:?}");
    // The uncrashed run really exercised the merge cases.
    let storage: Arc<dyn Storage> = Arc::new(lamina_storage::MemoryStorage::new());
    let db = FdTree::open(storage, &tiny()).unwrap();
    for batch in &steps {
        db.write_batch(batch).unwrap();
        db.wait_for_merges().unwrap();
    }
    let m = db.with_tree(lamina_fdtree::Tree::merge_counts).unwrap();
    assert!(m.grew >= 2 && m.shrank >= 1 && m.underflow >= 1, "{m:?}");
}

/// The conformance kit's crash case (and the rest of the kit) over the faulty backend.
struct Crashable {
    storage: FaultyStorage,
    mode: FcMode,
}

impl Subject for Crashable {
    type Index = FdTree;

    fn open(&mut self) -> Result<FdTree> {
        if self.storage.crashed() {
            self.storage = self.storage.reopen_after_crash()?;
        }
        let options = FdTreeOptions {
            memory_budget_bytes: 64 << 10,
            mode: self.mode,
            ..FdTreeOptions::default()
        };
        FdTree::open(Arc::new(self.storage.clone()), &options)
    }

    fn durable(&self) -> bool {
        true
    }

    fn can_crash(&self) -> bool {
        true
    }

    fn crash(&mut self, index: FdTree) {
        self.storage.crash().unwrap();
        drop(index);
    }
}

lamina_core::conformance_tests!(super::Crashable {
    storage: lamina_storage::FaultyStorage::in_memory(lamina_storage::FaultPlan::none()),
    mode: lamina_fdtree::FcMode::Xm,
});

/// The kit over the faulty backend in FD+DS (crashes land wherever the merge thread is).
mod crashable_ds {
    lamina_core::conformance_tests!(super::super::Crashable {
        storage: lamina_storage::FaultyStorage::in_memory(lamina_storage::FaultPlan::none()),
        mode: lamina_fdtree::FcMode::Ds,
    });
}

/// The kit over the faulty backend in FD+FC.
mod crashable_fc {
    lamina_core::conformance_tests!(super::super::Crashable {
        storage: lamina_storage::FaultyStorage::in_memory(lamina_storage::FaultPlan::none()),
        mode: lamina_fdtree::FcMode::Fc,
    });
}

#[test]
fn unsynced_tail_is_lost_but_synced_writes_survive() {
    let faulty = FaultyStorage::in_memory(FaultPlan::none());
    let options = FdTreeOptions { durability: lamina_core::Durability::None, ..tiny() };
    let db = FdTree::open(Arc::new(faulty.clone()), &options).unwrap();
    for k in 0..100u64 {
        db.put(&k.to_be_bytes(), b"v").unwrap();
    }
    db.sync().unwrap();
    faulty.crash().unwrap();
    drop(db);
    let recovered = faulty.reopen_after_crash().unwrap();
    let db = FdTree::open(Arc::new(recovered), &options).unwrap();
    db.verify().unwrap();
    assert_eq!(dump(&db).len(), 100);
}

#[test]
fn file_backend_persists_across_reopen_xm() {
    file_backend_persists_across_reopen(FcMode::Xm);
}

#[test]
fn file_backend_persists_across_reopen_ds() {
    file_backend_persists_across_reopen(FcMode::Ds);
}

#[test]
fn file_backend_persists_across_reopen_fc() {
    file_backend_persists_across_reopen(FcMode::Fc);
}

fn file_backend_persists_across_reopen(mode: FcMode) {
    let dir = tempfile::tempdir().unwrap();
    let options = tiny_in(mode);
    let db = FdTree::open_dir(dir.path(), &options).unwrap();
    for k in 0..120u64 {
        db.put(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    for k in (0..120u64).step_by(4) {
        assert!(db.delete(&k.to_be_bytes()).unwrap());
    }
    db.close().unwrap();
    let db = FdTree::open_dir(dir.path(), &options).unwrap();
    db.verify().unwrap();
    let all = dump(&db);
    assert_eq!(all.len(), 90);
    assert_eq!(all.get(7u64.to_be_bytes().as_slice()), Some(&7u64.to_le_bytes().to_vec()));
    // Reopen without close: everything was acknowledged under Sync, so it is all there.
    db.put(b"late", b"v").unwrap();
    drop(db);
    let db = FdTree::open_dir(dir.path(), &options).unwrap();
    assert_eq!(db.get(b"late").unwrap().as_deref(), Some(&b"v"[..]));
    db.close().unwrap();
}
