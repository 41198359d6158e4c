//! The allocator under a simulated crash at every persist point, with and without torn
//! writes: recovery must leave no block both free and referenced, no leak, and a state that
//! one prefix of the completed operations explains.

use std::sync::Arc;

use lamina_core::{Error, Result};

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

/// Formats and runs a fixed sequence of allocations and deallocations, recording the owned
/// pointers after each completed operation.
fn scenario(region: &Arc<SimulatedRegion>, states: &mut Vec<Snapshot>) -> Result<()> {
    let a = PmemAllocator::format(region.clone(), 7, 64)?;
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

fn fresh() -> Arc<SimulatedRegion> {
    Arc::new(SimulatedRegion::new(REGION_BYTES, SimulatedOptions::default()).unwrap())
}

/// Recovers the crashed image and checks the allocator's guarantees; the recovered state.
fn recover_and_check(
    crashed: SimulatedRegion,
    states: &[Snapshot],
    during_format: bool,
    what: &str,
) -> Option<Snapshot> {
    let region = Arc::new(crashed);
    let a = match PmemAllocator::open(region.clone()) {
        Ok(a) => a,
        // A crash while formatting leaves no header (or a torn one): the region is refused
        // and would be formatted again. Only possible before formatting completed.
        Err(Error::Incompatible { .. } | Error::Corruption { .. }) if during_format => {
            return None;
        }
        Err(e) => panic!("{what}: recovery failed: {e}"),
    };
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
    Some(owned)
}

#[test]
fn allocator_recovers_at_every_persist_point() {
    let clean = fresh();
    let mut states = Vec::new();
    scenario(&clean, &mut states).unwrap();
    let persists = clean.persist_count();
    assert!(persists > 40, "{persists} persists");
    // Each allocation or deallocation is 6 persists: log body, log op, two bitmaps, pointer,
    // log clear.
    assert_eq!(clean.stats().persists, persists);
    let mut seen_states = std::collections::BTreeSet::new();
    for persist_no in 1..=persists + 1 {
        for tear_seed in [None, Some(persist_no * 7919), Some(persist_no ^ 0x5555)] {
            let region = fresh();
            region.set_crash_point(Some(CrashPoint { persist_no, tear_seed }));
            let mut run_states = Vec::new();
            scenario(&region, &mut run_states).unwrap();
            // Formatting is 3 persists: zero header, zero metadata, header.
            let during_format = persist_no <= 3;
            let what = format!("crash at persist {persist_no} (tear {tear_seed:?})");
            if let Some(owned) = recover_and_check(region.crash(), &states, during_format, &what) {
                seen_states.insert(states.iter().position(|s| *s == owned).unwrap());
            }
        }
    }
    assert_eq!(seen_states.len(), states.len(), "every prefix state is reached by some crash");
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
