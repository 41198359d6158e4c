//! A batch log's block is reused by the next batch log: a crash before the new log's bytes are
//! persisted must not find the old log's commit word there and redo the old batch over newer
//! writes. Found by the crash simulation (`lamina-sim`, fptree seed 65 of its first version:
//! "batch log longer than its block", a torn new log over an old committed one).

mod common;

use std::cell::Cell;
use std::sync::Arc;

use common::{key, value};
use lamina_core::{OpenIntent, OrderedIndex, WriteBatch};
use lamina_fptree::{FpTreeConfig, FpTreeEngine};
use lamina_storage::pmem::SimulatedRegion;
use lamina_storage::pmem::crash_test::for_each_persist_point;

fn batch(keys: std::ops::Range<u64>, version: u64) -> WriteBatch {
    let mut batch = WriteBatch::new();
    for i in keys {
        batch.put(key(i), value(i, version));
    }
    batch
}

fn open(region: Arc<SimulatedRegion>) -> lamina_core::Result<FpTreeEngine<SimulatedRegion>> {
    FpTreeEngine::open_region(region, FpTreeConfig::default(), OpenIntent::CreateIfMissing)
}

#[test]
fn a_crash_writing_a_batch_log_never_redoes_the_previous_batch() {
    let checked = Cell::new(0);
    for_each_persist_point(
        512 << 10,
        &[None, Some(3)],
        |region| {
            let engine = open(region.clone())?;
            engine.write_batch(&batch(0..4, 1))?;
            for i in 0..4 {
                engine.put(&key(i), &value(i, 2))?; // newer than the batch
            }
            Ok(())
        },
        |region| open(region.clone())?.write_batch(&batch(10..14, 1)),
        |recovered, point| {
            let engine = open(Arc::new(recovered))?;
            for i in 0..4 {
                let got = engine.get(&key(i))?;
                assert_eq!(got, Some(value(i, 2)), "crash at {point:?}: key {i} went back");
            }
            checked.set(checked.get() + 1);
            Ok(())
        },
    )
    .unwrap_or_else(|failure| panic!("{failure:?}"));
    assert!(checked.get() > 4);
}
