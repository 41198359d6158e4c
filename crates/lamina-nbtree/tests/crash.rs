//! A crash at every storage operation of a workload that flushes the root, writes and
//! splits d-trees and grows the s-tree (issue 16: "crash at every storage operation of a
//! workload that does flushes and splits"): recovery yields the acknowledged history (or it
//! plus the write in flight), the tree verifies, and no d-tree file leaks.

mod common;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use common::leaked;
use lamina_core::testkit::dump;
use lamina_core::{Durability, OrderedIndex};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};
use lamina_storage::FaultPlan;
use lamina_storage::crash_points::for_each_crash_point;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> NbTreeOptions {
    NbTreeOptions {
        sigma_bytes: SIGMA_BYTES_MIN,
        page_bytes: 512,
        durability: Durability::Sync,
        // No background thread: the crash points are the same in every run.
        deamortization: Deamortization::Foreground,
        ..NbTreeOptions::default()
    }
}

fn step(i: u64) -> (Vec<u8>, Option<Vec<u8>>) {
    let key = format!("key{:04}", (i * 7919) % 500).into_bytes();
    if i % 9 == 4 {
        (key, None)
    } else {
        (key, Some(vec![(i % 251) as u8; 60 + (i as usize * 13) % 140]))
    }
}

#[test]
fn crash_at_every_storage_operation_keeps_acknowledged_writes() {
    const STEPS: u64 = 700;
    let models: RefCell<(Model, Model)> = RefCell::default();
    let runs = for_each_crash_point(
        &FaultPlan::none().with_seed(11),
        |_| Ok(()),
        |storage| {
            *models.borrow_mut() = (Model::new(), Model::new());
            let db = NbTree::open(Arc::clone(storage), &options())?;
            for i in 0..STEPS {
                let (key, value) = step(i);
                {
                    let (_, in_flight) = &mut *models.borrow_mut();
                    match &value {
                        Some(v) => in_flight.insert(key.clone(), v.clone()),
                        None => in_flight.remove(&key),
                    };
                }
                let result = match &value {
                    Some(v) => db.put(&key, v),
                    None => db.delete(&key).map(drop),
                };
                if result.is_err() {
                    db.crash();
                }
                result?;
                let (acked, _) = &mut *models.borrow_mut();
                match value {
                    Some(v) => acked.insert(key, v),
                    None => acked.remove(&key),
                };
            }
            let jobs = db.stats().extra.iter().find(|(n, _)| *n == "flush_jobs").unwrap().1;
            assert!(jobs >= 3, "the workload must flush the root several times");
            db.close()
        },
        |recovered, crash_op| {
            let db = NbTree::open(Arc::clone(recovered), &options())?;
            let state = dump(&db);
            let (acked, with_in_flight) = &*models.borrow();
            assert!(
                state == *acked || state == *with_in_flight,
                "crash at op {crash_op}: recovered state is neither the acknowledged history \
                 nor it plus the write in flight"
            );
            db.verify()?;
            assert_eq!(leaked(recovered, &db), Vec::<u64>::new(), "crash at op {crash_op}");
            db.put(b"after", b"crash")?;
            db.close()?;
            let db = NbTree::open(Arc::clone(recovered), &options())?;
            assert_eq!(db.get(b"after")?.as_deref(), Some(&b"crash"[..]));
            db.close()
        },
    )
    .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(runs.crash_points > 500, "{runs:?}");
}
