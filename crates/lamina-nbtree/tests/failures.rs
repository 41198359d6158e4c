//! Injected I/O errors and a full disk at points spread over a workload that flushes and
//! splits (issue 16: bad input "changes nothing", nothing acknowledged lost):
//! - `EIO` is sticky: once a call fails with it, every later modification fails too and
//!   `verify` reports it; after reopening every acknowledged write is there.
//! - `ENOSPC` is waited out: writes may be refused with `NoSpace` while the flush job cannot
//!   run, and the same handle accepts writes again once it can.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{Durability, Error, OrderedIndex};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};
use lamina_storage::{FailKind, FaultPlan, FaultyStorage};

const WRITES: u64 = 900;

fn options() -> NbTreeOptions {
    NbTreeOptions {
        sigma_bytes: SIGMA_BYTES_MIN,
        page_bytes: 512,
        durability: Durability::Sync,
        deamortization: Deamortization::Foreground,
        ..NbTreeOptions::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 8).to_be_bytes().to_vec()
}

/// Runs the workload; returns the acknowledged writes and, per key whose last put failed,
/// the states it may be in.
type Unknown = BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>>;

fn workload(db: &NbTree, kind: FailKind) -> (BTreeMap<Vec<u8>, Vec<u8>>, Unknown, usize) {
    let (mut acked, mut unknown, mut errors) = (BTreeMap::new(), Unknown::new(), 0);
    for i in 0..WRITES {
        let (k, v) = (key(i % 700), vec![(i % 251) as u8; 40]);
        match db.put(&k, &v) {
            Ok(()) => {
                assert!(kind != FailKind::Eio || errors == 0, "put {i} after an I/O error");
                unknown.remove(&k);
                acked.insert(k, v);
            }
            Err(e) => {
                match kind {
                    FailKind::NoSpace => assert!(matches!(e, Error::NoSpace { .. }), "{e}"),
                    FailKind::Eio => {
                        assert!(matches!(e, Error::Io { .. } | Error::Corruption { .. }), "{e}");
                    }
                }
                errors += 1;
                let before = acked.get(&k).cloned();
                unknown.entry(k).or_insert_with(|| vec![before]).push(Some(v));
            }
        }
    }
    (acked, unknown, errors)
}

fn fails_at(kind: FailKind, op: u64) -> bool {
    let storage = FaultyStorage::in_memory(FaultPlan::none().fail_at(op, kind, false));
    let Ok(db) = NbTree::open(Arc::new(storage.clone()), &options()) else {
        let db = NbTree::open(Arc::new(storage), &options()).unwrap();
        db.verify().unwrap();
        return true;
    };
    let (mut acked, mut unknown, errors) = workload(&db, kind);
    if kind == FailKind::NoSpace {
        let mut attempts = 0;
        while let Err(e) = db.put(b"after", b"space") {
            assert!(matches!(e, Error::NoSpace { .. }) && attempts < 100, "put after: {e}");
            attempts += 1;
        }
        acked.insert(b"after".to_vec(), b"space".to_vec());
        unknown.remove(&b"after"[..]);
        db.flush_now().unwrap();
        db.verify().unwrap();
        db.close().unwrap();
    } else {
        if errors > 0 {
            assert!(db.put(b"after", b"error").is_err(), "sticky");
            assert!(db.verify().is_err(), "verify reports the failure");
        }
        let _ = db.close();
    }
    drop(db);
    let db = NbTree::open(Arc::new(storage), &options()).unwrap();
    db.verify().unwrap();
    for (k, v) in &acked {
        if !unknown.contains_key(k) {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "acknowledged key {k:?} lost");
        }
    }
    for (k, allowed) in &unknown {
        let got = db.get(k).unwrap();
        assert!(allowed.contains(&got), "key {k:?}: {got:?}, expected one of {allowed:?}");
    }
    db.close().unwrap();
    errors > 0
}

fn every_point(kind: FailKind) {
    let ops = {
        let storage = FaultyStorage::in_memory(FaultPlan::none());
        let db = NbTree::open(Arc::new(storage.clone()), &options()).unwrap();
        workload(&db, kind);
        db.close().unwrap();
        storage.ops()
    };
    let mut failed = 0;
    for op in (5..ops).step_by((ops as usize / 40).max(1)) {
        failed += usize::from(fails_at(kind, op));
    }
    assert!(failed > 5, "only {failed} injected failures reached the workload");
}

#[test]
fn io_errors_are_sticky_and_lose_nothing() {
    every_point(FailKind::Eio);
}

#[test]
fn a_full_disk_is_waited_out() {
    every_point(FailKind::NoSpace);
}
