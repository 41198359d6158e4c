//! The allocator under a simulated crash at every persist point, with and without torn
//! writes: recovery must leave no block both free and referenced, no leak, and a state that
//! one prefix of the completed operations explains.

use std::collections::BTreeSet;
use std::sync::Arc;

use lamina_core::{Error, Result};

use crate::pmem::crash_test::for_each_persist_point;
use crate::pmem::*;

const REGION_BYTES: u64 = 16384;
const ROOT_SLOTS: u64 = 4;
/// Offset of the nested pointer inside the block of root slot 1.
const NESTED_AT: u64 = 16;

fn slot(i: u64) -> u64 {
    128 + 16 * i
}

/// The pointers the data structure owns, as (location, value) where set; the nested pointer
/// counts only while its enclosing block is referenced.
type Snapshot = Vec<(u64, PPtr)>;

fn snapshot(region: &impl PmemRegion) -> Snapshot {
    let mut out = Vec::new();
    for i in 0..ROOT_SLOTS {
        let p = PPtr::read_from(region, slot(i)).unwrap();
        if !p.is_null() {
            out.push((slot(i), p));
        }
    }
    let outer = PPtr::read_from(region, slot(1)).unwrap();
    if !outer.is_null() {
        let nested = PPtr::read_from(region, outer.offset + NESTED_AT).unwrap();
        if !nested.is_null() {
            out.push((outer.offset + NESTED_AT, nested));
        }
    }
    out
}

/// Runs a fixed sequence of allocations and deallocations on a formatted region, recording
/// the owned pointers after each completed operation.
fn workload(region: &Arc<SimulatedRegion>, states: &mut Vec<Snapshot>) -> Result<()> {
    let a = PmemAllocator::open(region.clone())?;
    states.push(snapshot(&**region));
    let mut step = |op: &dyn Fn(&PmemAllocator<SimulatedRegion>) -> Result<()>| -> Result<()> {
        op(&a)?;
        states.push(snapshot(&**region));
        Ok(())
    };
    step(&|a| a.allocate(slot(0), 100).map(drop))?;
    step(&|a| a.allocate(slot(1), 64 * 5).map(drop))?;
    step(&|a| {
        let outer = PPtr::read_from(&**a.region(), slot(1))?;
        // The nested pointer location must hold null: the block's content is unspecified.
        PPtr::NULL.write_to(&**a.region(), outer.offset + NESTED_AT)?;
        a.region().persist(outer.offset + NESTED_AT, 16)?;
        a.allocate(outer.offset + NESTED_AT, 64).map(drop)
    })?;
    step(&|a| a.deallocate(slot(0)))?;
    step(&|a| a.allocate(slot(2), 130).map(drop))?;
    step(&|a| {
        let outer = PPtr::read_from(&**a.region(), slot(1))?;
        a.deallocate(outer.offset + NESTED_AT)
    })?;
    step(&|a| a.allocate(slot(3), 64 * 70).map(drop))?; // spans bitmap words
    step(&|a| a.deallocate(slot(1)))?;
    step(&|a| a.deallocate(slot(3)))?;
    Ok(())
}

fn format(region: &Arc<SimulatedRegion>) -> Result<()> {
    PmemAllocator::format(region.clone(), 7, 64).map(drop)
}

fn fresh() -> Arc<SimulatedRegion> {
    Arc::new(SimulatedRegion::new(REGION_BYTES, SimulatedOptions::default()).unwrap())
}

/// Recovers the crashed image and checks the allocator's guarantees; the recovered state.
fn recover_and_check(crashed: SimulatedRegion, states: &[Snapshot], what: &str) -> Snapshot {
    let region = Arc::new(crashed);
    let a = PmemAllocator::open(region.clone())
        .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"));
    a.check().unwrap_or_else(|e| panic!("{what}: {e}"));
    let owned = snapshot(&*region);
    // Every owned pointer names an allocated block (nothing referenced is free) ...
    let mut referenced: Vec<u64> = owned
        .iter()
        .map(|(at, p)| a.resolve(*p).unwrap_or_else(|e| panic!("{what}: pointer at {at}: {e}")))
        .collect();
    referenced.sort_unstable();
    // ... and every allocated block is owned by exactly one pointer (nothing leaked).
    let allocated: Vec<u64> = a.allocated_blocks().iter().map(|&(offset, _)| offset).collect();
    assert_eq!(referenced, allocated, "{what}: leak or dangling pointer");
    assert!(
        states.contains(&owned),
        "{what}: recovered state {owned:?} is not a prefix state {states:?}"
    );
    assert_eq!(a.stats().used_chunks, a.allocated_blocks().iter().map(|b| b.1 / 64).sum::<u64>());
    // The recovered heap keeps working.
    let free_slot = (0..ROOT_SLOTS).find(|&i| owned.iter().all(|(at, _)| *at != slot(i))).unwrap();
    a.allocate(slot(free_slot), 64).unwrap();
    a.check().unwrap();
    owned
}

#[test]
fn allocator_recovers_at_every_persist_point() {
    // The prefix states, from a run without crash.
    let clean = fresh();
    format(&clean).unwrap();
    let mut states = Vec::new();
    workload(&Arc::new(clean.crash()), &mut states).unwrap();
    let mut seen = BTreeSet::new();
    let runs = for_each_persist_point(
        REGION_BYTES,
        &[None, Some(1), Some(0x5555)],
        format,
        |region| workload(region, &mut Vec::new()),
        |recovered, point| {
            let what = format!("{point:?}");
            let owned = recover_and_check(recovered, &states, &what);
            seen.insert(states.iter().position(|s| *s == owned).unwrap());
            Ok(())
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Each of the 9 operations is 6 persists (log body, log op, two bitmaps, pointer, log
    // clear), plus the nested pointer's initialization.
    assert_eq!(runs.ops_to_complete, 9 * 6 + 1);
    assert_eq!(runs.crash_points, runs.ops_to_complete);
    assert_eq!(seen.len(), states.len(), "every prefix state is reached by some crash");
}

#[test]
fn a_crash_while_formatting_leaves_a_refused_or_empty_region() {
    // Persists: the header zeroed, the metadata zeroed, the header's fields, its magic.
    for persist_no in 1..=5 {
        for tear_seed in [None, Some(persist_no), Some(99)] {
            let region = fresh();
            region.set_crash_point(Some(CrashPoint { persist_no, tear_seed }));
            format(&region).unwrap();
            let recovered = region.crash();
            match PmemAllocator::open(Arc::new(recovered)) {
                Ok(a) => {
                    assert!(persist_no >= 4, "header durable only at persist 4");
                    assert!(a.allocated_blocks().is_empty());
                }
                // The magic is written last, alone: a torn header never has it (formatting
                // starts over on such a region).
                Err(Error::Incompatible { .. }) => assert!(persist_no <= 4),
                Err(e) => panic!("{e}"),
            }
        }
    }
}

#[test]
fn recovery_redoes_an_interrupted_operation() {
    // Crash right after the log's op word is durable (persist 2 of the first allocation):
    // the allocation is completed at recovery, pointer included.
    let region = fresh();
    let a = PmemAllocator::format(region.clone(), 7, 64).unwrap();
    let base = region.persist_count();
    region.set_crash_point(Some(CrashPoint { persist_no: base + 3, tear_seed: None }));
    let p = a.allocate(slot(0), 64).unwrap();
    let recovered = PmemAllocator::open(Arc::new(region.crash())).unwrap();
    assert_eq!(recovered.stats().recovered_op, Some(LogOp::Alloc));
    assert_eq!(PPtr::read_from(&**recovered.region(), slot(0)).unwrap(), p);
    assert_eq!(recovered.allocated_blocks(), [(p.offset, 64)]);
    // A crash after the log body but before its op word: nothing happened.
    let region = fresh();
    let a = PmemAllocator::format(region.clone(), 7, 64).unwrap();
    region.set_crash_point(Some(CrashPoint {
        persist_no: region.persist_count() + 2,
        tear_seed: None,
    }));
    a.allocate(slot(0), 64).unwrap();
    let recovered = PmemAllocator::open(Arc::new(region.crash())).unwrap();
    assert_eq!(recovered.stats().recovered_op, None);
    assert!(recovered.allocated_blocks().is_empty());
    assert!(PPtr::read_from(&**recovered.region(), slot(0)).unwrap().is_null());
}
