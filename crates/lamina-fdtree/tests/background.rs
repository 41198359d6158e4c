//! FD+DS (section 3): the merge thread is held at a hook between merge-execute and the
//! switch, and lookups, scans and modifications complete meanwhile (so they never wait for
//! the merge to finish); then the merge switches in and everything is still there.

use std::collections::BTreeMap;

use lamina_core::{KeyRange, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};

fn tiny() -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 512,
        block_bytes: 512,
        size_ratio: 2,
        key_bytes_max: 8,
        value_bytes_max: 8,
        verify_each_merge: true,
        mode: FcMode::Ds,
        ..FdTreeOptions::default()
    }
}

/// Whether the tree has a merge due or already started (the merge thread may start it at
/// any moment after it is due).
fn merge_due_or_running(db: &FdTree) -> bool {
    db.with_tree(|t| t.background_merge_due().is_some() || t.merge_in_progress()).unwrap()
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
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
    db.wait_for_merges().unwrap();
    let merges_before = db.with_tree(|t| t.merge_counts().overflow).unwrap();
    // Hold the next merge before its switch, then write until it is due (the writer that
    // makes it due wakes the merge thread; writing on could fill L_0 and wait for it).
    db.hold_merges(true);
    let mut i = 1u64;
    while !merge_due_or_running(&db) {
        db.put(&key(i), b"odd").unwrap();
        oracle.insert(key(i).to_vec(), b"odd".to_vec());
        i += 2;
    }
    db.wait_merge_held();
    // Every lookup completes while the merge is held: through L_0^new, L_0^old and the old
    // levels.
    for (k, v) in &oracle {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {k:?}");
    }
    assert_eq!(db.get(&key(1_000_001)).unwrap(), None);
    let all: BTreeMap<_, _> = db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(all, oracle);
    // Modifications go to L_0^new while there is room (a delete of a key below, an
    // overwrite): they need no merge either.
    assert!(!db.with_tree(lamina_fdtree::Tree::top_is_full).unwrap());
    assert!(db.delete(&key(0)).unwrap());
    oracle.remove(key(0).as_slice());
    db.put(&key(4), b"new").unwrap();
    oracle.insert(key(4).to_vec(), b"new".to_vec());
    assert_eq!(db.get(&key(0)).unwrap(), None);
    assert_eq!(db.get(&key(4)).unwrap().as_deref(), Some(&b"new"[..]));
    assert!(db.with_tree(lamina_fdtree::Tree::merge_in_progress).unwrap());
    assert_eq!(db.with_tree(|t| t.merge_counts().overflow).unwrap(), merges_before);
    // Release: the merge switches in and L_0^new joins the new L_0.
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    assert!(db.with_tree(|t| t.merge_counts().overflow).unwrap() > merges_before);
    db.verify().unwrap();
    let all: BTreeMap<_, _> = db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
    assert_eq!(all, oracle);
    let keys = db.with_tree(|t| t.counters().live_keys()).unwrap();
    assert_eq!(keys, oracle.len() as u64);
}

#[test]
fn a_writer_waits_only_when_l0_is_full_and_resumes_after_the_switch() {
    let db = std::sync::Arc::new(FdTree::volatile(&tiny()).unwrap());
    db.hold_merges(true);
    let mut i = 0u64;
    while !merge_due_or_running(&db) {
        db.put(&key(i), b"v").unwrap();
        i += 1;
    }
    db.wait_merge_held();
    // Fill L_0^new until it is full; the next writer then waits for the switch.
    while !db.with_tree(lamina_fdtree::Tree::top_is_full).unwrap() {
        db.put(&key(i), b"v").unwrap();
        i += 1;
    }
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || db.put(&key(i), b"last").unwrap())
    };
    // Lookups still complete while the writer waits.
    assert_eq!(db.get(&key(0)).unwrap().as_deref(), Some(&b"v"[..]));
    db.hold_merges(false);
    writer.join().unwrap();
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    assert_eq!(db.get(&key(i)).unwrap().as_deref(), Some(&b"last"[..]));
    assert_eq!(db.scan(&KeyRange::all(), 1 << 20).unwrap().len() as u64, i + 1);
}

/// A background merge that fails (an I/O error or a full device at any one storage
/// operation) leaves the tree as it was plus the writes made meanwhile: `L_0^old` goes back
/// under `L_0^new`, the new files are removed (or a replaced file leaks if its removal
/// failed), the error is reported once, and the next
/// merge succeeds. Operations are made deterministic by waiting for merges after each put.
#[test]
fn a_failed_background_merge_changes_nothing_and_is_reported() {
    use lamina_storage::{FailKind, FaultPlan, FaultyStorage, Storage};
    let workload = |storage: &FaultyStorage| -> (u32, BTreeMap<Vec<u8>, Vec<u8>>, FdTree) {
        let db =
            FdTree::with_storage(std::sync::Arc::new(storage.clone()), &tiny(), false).unwrap();
        let mut oracle = BTreeMap::new();
        let mut reported = 0;
        for i in 0..120u64 {
            let (k, v) = (key(i * 7 % 50), i.to_le_bytes());
            // A put fails only if the fault hits its own lookup, or if it reports the failed
            // merge before it is applied; either way it changed nothing and is retried.
            while let Err(e) = db.put(&k, &v) {
                assert!(
                    matches!(e, lamina_core::Error::Io { .. } | lamina_core::Error::NoSpace { .. }),
                    "{e}"
                );
                reported += 1;
            }
            oracle.insert(k.to_vec(), v.to_vec());
            if db.wait_for_merges().is_err() {
                reported += 1;
            }
        }
        db.wait_for_merges().unwrap();
        (reported, oracle, db)
    };
    let clean = FaultyStorage::in_memory(FaultPlan::none());
    let (reported, oracle, db) = workload(&clean);
    assert_eq!(reported, 0);
    let total_ops = clean.ops();
    let merges = db.with_tree(|t| t.merge_counts().overflow).unwrap();
    assert!(merges >= 5, "{merges}");
    drop(db);
    let mut failures_seen = 0;
    for op in (1..total_ops).step_by(7) {
        for kind in [FailKind::Eio, FailKind::NoSpace] {
            let storage = FaultyStorage::in_memory(FaultPlan::none().fail_at(op, kind, false));
            let (reported, got_oracle, db) = workload(&storage);
            assert_eq!(got_oracle, oracle);
            failures_seen += reported;
            db.verify().unwrap();
            let all: BTreeMap<_, _> =
                db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect();
            assert_eq!(all, oracle, "fault at op {op}");
            // No file of a failed merge-execute is left behind; only a failed removal of a
            // replaced file (after the switch) can leave that one file (volatile trees;
            // persistent ones remove unknown files at recovery).
            let levels = db.with_tree(|t| t.materialized_labels().len() - 1).unwrap();
            let files = storage.list().unwrap();
            assert!(files.len() <= levels + 1, "fault at op {op}: {files:?}");
        }
    }
    assert!(failures_seen > 0);
}
