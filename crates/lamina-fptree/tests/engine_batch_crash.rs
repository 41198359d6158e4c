//! Write batches are atomic across crashes: a crash at every persist point of a batch (which
//! splits a leaf and removes another) recovers to all of it or none of it, leak-free.

mod common;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;

use common::{check_tree, key, value};
use lamina_core::{OpenIntent, OrderedIndex, WriteBatch};
use lamina_fptree::engine::BATCH_COMMITTED;
use lamina_fptree::layout::BATCH_LOG_PPTR;
use lamina_fptree::{FpTreeConfig, FpTreeEngine};
use lamina_storage::pmem::crash_test::for_each_persist_point;
use lamina_storage::pmem::{PmemRegion, SimulatedRegion};

#[test]
fn a_batch_is_all_or_nothing_at_every_crash_point() {
    for config in [
        FpTreeConfig::default(),
        FpTreeConfig { leaf_groups: true, group_leaves: 2, ..FpTreeConfig::default() },
    ] {
        let mut before = BTreeMap::new();
        for i in 0..73 {
            before.insert(key(i), value(i, 0));
        }
        for i in 48..72 {
            before.remove(&key(i));
        }
        let mut batch = WriteBatch::new();
        batch.delete(key(72)); // empties the last leaf: it is removed
        for i in 100..130 {
            batch.put(key(i), value(i, 1)); // fills the new last leaf past a split
        }
        batch.put(key(3), value(3, 9));
        let mut after = before.clone();
        after.remove(&key(72));
        for i in 100..130 {
            after.insert(key(i), value(i, 1));
        }
        after.insert(key(3), value(3, 9));
        let (saw_before, saw_after) = (Cell::new(0), Cell::new(0));
        let damaged_commits = Cell::new(0);
        for_each_persist_point(
            512 << 10,
            &[None, Some(5)],
            |region| {
                let engine = FpTreeEngine::<SimulatedRegion>::open_region(
                    region.clone(),
                    config,
                    OpenIntent::CreateIfMissing,
                )?;
                for i in 0..73 {
                    engine.put(&key(i), &value(i, 0))?;
                }
                for i in 48..72 {
                    engine.delete(&key(i))?;
                }
                Ok(())
            },
            |region| {
                let engine = FpTreeEngine::<SimulatedRegion>::open_region(
                    region.clone(),
                    config,
                    OpenIntent::CreateIfMissing,
                )?;
                engine.write_batch(&batch)
            },
            |recovered, point| {
                // A committed batch log whose commit word is damaged must not read as
                // uncommitted (recovery would leave the batch partly applied): Corruption.
                let log = recovered.load_u64(BATCH_LOG_PPTR + 8)?;
                if log != 0 && recovered.load_u64(log)? == BATCH_COMMITTED {
                    for bit in [0, 17, 63] {
                        let damaged = recovered.crash();
                        damaged.store_u64(log, BATCH_COMMITTED ^ (1 << bit))?;
                        let result = FpTreeEngine::<SimulatedRegion>::open_region(
                            Arc::new(damaged),
                            config,
                            OpenIntent::MustExist,
                        );
                        assert!(
                            matches!(&result, Err(lamina_core::Error::Corruption { .. })),
                            "crash at {point:?}, commit word bit {bit}: {:?}",
                            result.map(|_| ())
                        );
                        damaged_commits.set(damaged_commits.get() + 1);
                    }
                }
                let engine = FpTreeEngine::<SimulatedRegion>::open_region(
                    Arc::new(recovered),
                    config,
                    OpenIntent::MustExist,
                )?;
                let got = check_tree(engine.tree())?;
                if got == before {
                    saw_before.set(saw_before.get() + 1);
                } else {
                    assert!(
                        got == after,
                        "crash at {point:?}: a partial batch ({} records)",
                        got.len()
                    );
                    saw_after.set(saw_after.get() + 1);
                }
                Ok(())
            },
        )
        .unwrap_or_else(|failure| panic!("{failure:?}"));
        assert!(saw_before.get() > 0 && saw_after.get() > 10);
        assert!(damaged_commits.get() > 0, "no crash image had a committed batch log");
    }
}
