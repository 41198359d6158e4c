//! A crash at any persist of a new region's formatting and the tree's initialization, torn or
//! not: the next open (allowed to create) gives an empty store that works. Found by the crash
//! simulation (`lamina-sim`, fptree seeds 8 and 1 of its first version): a torn header write
//! left header words without the magic ("not a formatted persistent region"), or the tree
//! header's magic with the rest missing ("tree header checksum mismatch"), and every later
//! open failed.

use std::cell::Cell;
use std::sync::Arc;

use lamina_core::{OpenIntent, OrderedIndex};
use lamina_fptree::{FpTreeConfig, FpTreeEngine};
use lamina_storage::pmem::SimulatedRegion;
use lamina_storage::pmem::crash_test::for_each_persist_point;

#[test]
fn a_crash_while_creating_the_store_leaves_one_that_opens_empty() {
    let checked = Cell::new(0);
    let tears: Vec<Option<u64>> = std::iter::once(None).chain((1..8).map(Some)).collect();
    for_each_persist_point(
        512 << 10,
        &tears,
        |_| Ok(()),
        |region| {
            FpTreeEngine::<SimulatedRegion>::open_region(
                region.clone(),
                FpTreeConfig::default(),
                OpenIntent::CreateIfMissing,
            )
            .map(drop)
        },
        |recovered, point| {
            let engine = FpTreeEngine::<SimulatedRegion>::open_region(
                Arc::new(recovered),
                FpTreeConfig::default(),
                OpenIntent::CreateIfMissing,
            )
            .unwrap_or_else(|e| panic!("crash at {point:?}: reopen: {e}"));
            assert_eq!(engine.get(b"k")?, None);
            engine.put(b"k", b"v")?;
            assert_eq!(engine.get(b"k")?.as_deref(), Some(&b"v"[..]));
            checked.set(checked.get() + 1);
            Ok(())
        },
    )
    .unwrap_or_else(|failure| panic!("{failure:?}"));
    assert!(checked.get() > 8);
}
