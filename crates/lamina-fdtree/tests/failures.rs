//! Failures of the device under a running tree, per scheme: one storage operation fails
//! with `EIO` or `ENOSPC`, at many points of a workload that writes runs and merges them.
//!
//! - `EIO` is sticky: once an error is returned, every later modification gets one too,
//!   lookups keep answering with acknowledged values, nothing spins; after reopening, every
//!   acknowledged write is there.
//! - `ENOSPC` (a full disk) is waited out: writers may be refused with `NoSpace` while the
//!   background work that needs the space cannot run, and the same handle accepts writes
//!   again once it can; nothing acknowledged is lost and `close` succeeds.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{Durability, Error, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};
use lamina_storage::{FailKind, FaultPlan, FaultyStorage};

fn options(mode: FcMode) -> FdTreeOptions {
    FdTreeOptions {
        mode,
        memory_budget_bytes: 2048,
        block_bytes: 512,
        segment_bytes: 512,
        size_ratio: 2,
        key_bytes_max: 8,
        value_bytes_max: 16,
        durability: Durability::Sync,
        merge_commit_bytes: 1024,
        verify_each_merge: true,
        ..FdTreeOptions::default()
    }
}

fn key(i: u64) -> [u8; 8] {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8).to_be_bytes()
}

const WRITES: u64 = 600;

/// What a key may hold after failed puts: its last acknowledged state, or a failed value.
type Unknown = BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>>;

/// The workload: puts (overwriting now and then) with a lookup of an acknowledged key after
/// each; returns the oracle of acknowledged writes, the keys whose last put failed (their
/// state is one of two), and the errors seen.
fn workload(db: &FdTree, kind: FailKind) -> (BTreeMap<Vec<u8>, Vec<u8>>, Unknown, Vec<String>) {
    let mut acked = BTreeMap::new();
    let mut unknown: Unknown = BTreeMap::new();
    let mut errors: Vec<String> = Vec::new();
    let mut read_failed = false;
    for i in 0..WRITES {
        let k = key(i % 450).to_vec();
        let v = i.to_le_bytes().to_vec();
        match db.put(&k, &v) {
            Ok(()) => {
                assert!(
                    kind != FailKind::Eio || errors.is_empty(),
                    "put {i} succeeded after an I/O error: the failure is not sticky"
                );
                unknown.remove(&k);
                acked.insert(k, v);
            }
            Err(e) => {
                match kind {
                    FailKind::Eio => assert!(
                        matches!(e, Error::Io { .. } | Error::Corruption { .. }),
                        "put {i}: {e}"
                    ),
                    FailKind::NoSpace => {
                        assert!(matches!(e, Error::NoSpace { .. }), "put {i}: {e}");
                        // Waited out: the background work retries.
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                }
                let mut allowed = match acked.remove(&k) {
                    Some(before) => vec![Some(before)],
                    None => unknown.remove(&k).unwrap_or_else(|| vec![None]),
                };
                allowed.push(Some(v));
                unknown.insert(k, allowed);
                errors.push(e.to_string());
            }
        }
        // Lookups keep working, failure or not; a lookup's own read may be the one that
        // fails (an `EIO` plan), which it reports and which changes nothing.
        if let Some((k, v)) = acked.iter().next() {
            match db.get(k) {
                Ok(got) => assert_eq!(got.as_ref(), Some(v), "lookup after put {i}"),
                Err(e) => {
                    assert!(kind == FailKind::Eio && !read_failed, "lookup after put {i}: {e}");
                    assert!(e.to_string().contains("reading"), "lookup after put {i}: {e}");
                    read_failed = true;
                    assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "lookup retried");
                }
            }
        }
    }
    (acked, unknown, errors)
}

fn fails_at(mode: FcMode, kind: FailKind, op: u64) -> bool {
    let storage = FaultyStorage::in_memory(FaultPlan::none().fail_at(op, kind, false));
    let db = match FdTree::open(Arc::new(storage.clone()), &options(mode)) {
        Ok(db) => db,
        Err(e) => {
            // The failure hit the first open: a clear error, and a later open works.
            assert!(matches!(e, Error::Io { .. } | Error::NoSpace { .. }), "open: {e}");
            let db = FdTree::open(Arc::new(storage), &options(mode)).unwrap();
            db.verify().unwrap();
            db.close().unwrap();
            return true;
        }
    };
    let (acked, unknown, errors) = workload(&db, kind);
    if kind == FailKind::NoSpace {
        // The same handle works again (the put may itself meet the full disk once).
        let mut attempts = 0;
        while let Err(e) = db.put(b"after", b"space") {
            assert!(matches!(e, Error::NoSpace { .. }) && attempts < 100, "put after: {e}");
            attempts += 1;
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        db.wait_for_merges().unwrap();
        db.close().unwrap();
    } else {
        if !errors.is_empty() {
            assert!(db.put(b"after", b"error").is_err(), "sticky");
            assert!(db.verify().is_err(), "verify reports the failure");
        }
        let _ = db.close();
    }
    drop(db);
    // The failure may land in this reopen (when the workload stopped early): a clear error,
    // and the next open works.
    let db = FdTree::open(Arc::new(storage.clone()), &options(mode))
        .or_else(|e| {
            assert!(e.to_string().contains("injected failure"), "reopen: {e}");
            FdTree::open(Arc::new(storage), &options(mode))
        })
        .unwrap();
    db.verify().unwrap();
    for (k, v) in &acked {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "acknowledged key {k:?} lost");
    }
    for (k, allowed) in &unknown {
        let got = db.get(k).unwrap();
        assert!(allowed.contains(&got), "key {k:?}: {got:?}, expected one of {allowed:?}");
    }
    db.close().unwrap();
    !errors.is_empty()
}

fn every_point(mode: FcMode, kind: FailKind) {
    // The operations of the workload: failures land in log appends and syncs, run writes,
    // commits and merges.
    let ops = {
        let storage = FaultyStorage::in_memory(FaultPlan::none());
        let db = FdTree::open(Arc::new(storage.clone()), &options(mode)).unwrap();
        workload(&db, kind);
        db.close().unwrap();
        storage.ops()
    };
    let mut failed = 0;
    for op in (5..ops).step_by((ops as usize / 40).max(1)) {
        failed += usize::from(fails_at(mode, kind, op));
    }
    assert!(failed > 5, "only {failed} injected failures reached the workload");
}

#[test]
fn io_errors_are_sticky_and_lose_nothing_xm() {
    every_point(FcMode::Xm, FailKind::Eio);
}

#[test]
fn io_errors_are_sticky_and_lose_nothing_ds() {
    every_point(FcMode::Ds, FailKind::Eio);
}

#[test]
fn io_errors_are_sticky_and_lose_nothing_fc() {
    every_point(FcMode::Fc, FailKind::Eio);
}

#[test]
fn a_full_disk_is_waited_out_xm() {
    every_point(FcMode::Xm, FailKind::NoSpace);
}

#[test]
fn a_full_disk_is_waited_out_ds() {
    every_point(FcMode::Ds, FailKind::NoSpace);
}

#[test]
fn a_full_disk_is_waited_out_fc() {
    every_point(FcMode::Fc, FailKind::NoSpace);
}
