//! A write batch larger than the room left in the persistent heap is refused with `NoSpace`
//! before anything is written: the store is unchanged, the handle keeps working, and it
//! reopens. Before the check, such a batch ran the heap out half-way through its apply,
//! poisoned the handle, and every reopen failed redoing the committed batch: a store that no
//! longer opened.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::testkit::dump;
use lamina_core::{Error, OpenIntent, OrderedIndex, WriteBatch};
use lamina_fptree::{FpTreeConfig, FpTreeEngine};
use lamina_storage::pmem::{SimulatedOptions, SimulatedRegion};

fn open(region: &Arc<SimulatedRegion>, config: FpTreeConfig) -> FpTreeEngine<SimulatedRegion> {
    FpTreeEngine::open_region(region.clone(), config, OpenIntent::CreateIfMissing).unwrap()
}

#[test]
fn a_batch_the_heap_cannot_hold_is_refused_and_changes_nothing() {
    for config in [
        FpTreeConfig::default(),
        FpTreeConfig { leaf_groups: true, group_leaves: 4, ..FpTreeConfig::default() },
    ] {
        let region = Arc::new(SimulatedRegion::new(4 << 20, SimulatedOptions::default()).unwrap());
        let db = open(&region, config);
        for i in 0..300u32 {
            db.put(&i.to_be_bytes(), &[1u8; 4000]).unwrap();
        }
        let before: BTreeMap<Vec<u8>, Vec<u8>> = dump(&db);
        let mut batch = WriteBatch::new();
        for i in 300..1100u32 {
            batch.put(i.to_be_bytes().to_vec(), vec![2u8; 2000]);
        }
        batch.delete(7u32.to_be_bytes().to_vec());
        let err = db.write_batch(&batch).unwrap_err();
        assert!(matches!(err, Error::NoSpace { .. }), "{config:?}: {err}");
        assert!(err.to_string().contains("nothing of it was written"), "{err}");
        assert_eq!(dump(&db), before, "{config:?}: a refused batch changes nothing");
        // The handle keeps working: a smaller batch fits.
        let mut small = WriteBatch::new();
        small.put(b"small".to_vec(), b"1".to_vec()).delete(7u32.to_be_bytes().to_vec());
        db.write_batch(&small).unwrap();
        let mut expected = before;
        expected.insert(b"small".to_vec(), b"1".to_vec());
        expected.remove(7u32.to_be_bytes().as_slice());
        assert_eq!(dump(&db), expected);
        db.close().unwrap();
        drop(db);
        let db = open(&region, config);
        assert_eq!(dump(&db), expected, "{config:?}: after a reopen");
        db.close().unwrap();
    }
}
