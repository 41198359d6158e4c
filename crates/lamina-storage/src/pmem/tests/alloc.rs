//! The allocator without crashes: the interface, refusals, reuse, nesting.

use std::sync::Arc;

use lamina_core::Error;

use crate::pmem::*;

fn heap(len_bytes: u64) -> PmemAllocator<SimulatedRegion> {
    let region = Arc::new(SimulatedRegion::new(len_bytes, SimulatedOptions::default()).unwrap());
    PmemAllocator::format(region, 7, 64).unwrap()
}

fn slot(a: &PmemAllocator<SimulatedRegion>, i: u64) -> u64 {
    a.root_offset() + 16 * i
}

#[test]
fn allocate_writes_and_persists_the_callers_pointer() {
    let a = heap(16384);
    let p = a.allocate(slot(&a, 0), 100).unwrap();
    assert_eq!(p.file_id, 7);
    assert_eq!(PPtr::read_from(&**a.region(), slot(&a, 0)).unwrap(), p);
    assert_eq!(a.block_of(p).unwrap(), (p.offset, 128));
    assert_eq!(p.offset % 64, 0);
    // The pointer is durable: it survives a crash right after allocate returns.
    let after = Arc::new(a.region().crash());
    assert_eq!(PPtr::read_from(&*after, slot(&a, 0)).unwrap(), p);
    let reopened = PmemAllocator::open(after).unwrap();
    assert_eq!(reopened.allocated_blocks(), [(p.offset, 128)]);
    assert_eq!(reopened.stats().used_chunks, 2);
    assert_eq!(reopened.stats().recovered_op, None);
    // Deallocate nulls the pointer, durably.
    a.deallocate(slot(&a, 0)).unwrap();
    assert!(PPtr::read_from(&**a.region(), slot(&a, 0)).unwrap().is_null());
    assert!(a.allocated_blocks().is_empty());
    let crashed = PmemAllocator::open(Arc::new(a.region().crash())).unwrap();
    assert!(crashed.allocated_blocks().is_empty());
    let stats = a.stats();
    assert_eq!((stats.allocations, stats.deallocations, stats.used_chunks), (1, 1, 0));
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    let a = heap(16384);
    let p = a.allocate(slot(&a, 0), 64).unwrap();
    let persists = a.region().persist_count();
    let blocks = a.allocated_blocks();
    let invalid = |r: lamina_core::Result<PPtr>| r.unwrap_err().is_invalid_argument();
    assert!(invalid(a.allocate(slot(&a, 1), 0)));
    assert!(invalid(a.allocate(slot(&a, 1), 1 << 40)));
    assert!(invalid(a.allocate(slot(&a, 0), 64)), "non-null destination would leak");
    assert!(invalid(a.allocate(slot(&a, 1) + 4, 64)), "misaligned");
    assert!(invalid(a.allocate(0, 64)), "header");
    assert!(invalid(a.allocate(64, 64)), "log");
    assert!(invalid(a.allocate(a.header().layout.alloc_bitmap_offset, 64)), "bitmap");
    assert!(invalid(a.allocate(a.root_offset() + a.root_bytes() - 8, 64)), "straddles root end");
    assert!(invalid(a.allocate(p.offset + 64, 64)), "free heap memory");
    assert!(invalid(a.allocate(p.offset + 56, 64)), "straddles the block's end");
    assert!(a.deallocate(slot(&a, 1)).unwrap_err().is_invalid_argument(), "null");
    PPtr::new(8, p.offset).write_to(&**a.region(), slot(&a, 2)).unwrap();
    assert!(a.deallocate(slot(&a, 2)).unwrap_err().is_invalid_argument(), "other region");
    PPtr::new(7, p.offset + 64).write_to(&**a.region(), slot(&a, 2)).unwrap();
    assert!(a.deallocate(slot(&a, 2)).unwrap_err().is_invalid_argument(), "not a block");
    PPtr::new(7, p.offset + 8).write_to(&**a.region(), slot(&a, 2)).unwrap();
    assert!(a.deallocate(slot(&a, 2)).unwrap_err().is_invalid_argument(), "inside a block");
    assert_eq!(a.region().persist_count(), persists, "no persist for a refused request");
    assert_eq!(a.allocated_blocks(), blocks);
    assert!(a.resolve(PPtr::new(8, p.offset)).is_err());
    assert_eq!(a.resolve(p).unwrap(), p.offset);
}

#[test]
fn freed_space_is_reused_and_a_full_heap_says_no_space() {
    let a = heap(16384); // 238 chunks of 64 bytes
    let chunks = a.stats().chunk_count;
    assert_eq!(chunks, 238);
    // Fill the heap with blocks of 10 chunks; pointers live in the root area (56 slots).
    let mut n = 0;
    while a.allocate(slot(&a, n), 640).is_ok() {
        n += 1;
    }
    assert_eq!(n, chunks / 10);
    let err = a.allocate(slot(&a, n), 640).unwrap_err();
    assert!(matches!(err, Error::NoSpace { .. }), "{err:?}");
    a.deallocate(slot(&a, 3)).unwrap();
    a.deallocate(slot(&a, 4)).unwrap();
    // The two freed neighbours coalesce: a 20-chunk block fits where they were.
    let p = a.allocate(slot(&a, 3), 1280).unwrap();
    assert_eq!(p.offset, a.header().layout.chunk_offset(30));
    assert_eq!(a.stats().used_chunks, (n - 1) * 10 + 10);
    a.check().unwrap();
}

#[test]
fn pointers_may_live_inside_allocated_blocks() {
    let a = heap(16384);
    let outer = a.allocate(slot(&a, 0), 64 * 70).unwrap(); // spans two bitmap words
    let inner_slot = outer.offset + 64 * 69 + 48; // last 16 bytes of the block
    let inner = a.allocate(inner_slot, 64).unwrap();
    assert_eq!(PPtr::read_from(&**a.region(), inner_slot).unwrap(), inner);
    assert!(a.allocate(outer.offset + 64 * 70 - 8, 64).unwrap_err().is_invalid_argument());
    a.deallocate(inner_slot).unwrap();
    a.deallocate(slot(&a, 0)).unwrap();
    assert!(a.allocated_blocks().is_empty());
    a.check().unwrap();
}

#[test]
fn format_refuses_bad_parameters() {
    let region = Arc::new(SimulatedRegion::new(16384, SimulatedOptions::default()).unwrap());
    assert!(PmemAllocator::format(region.clone(), 0, 64).unwrap_err().is_invalid_argument());
    assert!(PmemAllocator::format(region.clone(), 1, 96).unwrap_err().is_invalid_argument());
    let small = Arc::new(SimulatedRegion::new(1024, SimulatedOptions::default()).unwrap());
    assert!(PmemAllocator::format(small, 1, 64).unwrap_err().is_invalid_argument());
    let big_chunks = PmemAllocator::format(region, 1, 4096).unwrap();
    assert_eq!(big_chunks.header().layout.heap_offset % 4096, 0);
    assert_eq!(big_chunks.stats().chunk_count, 3);
}

#[test]
fn works_over_a_trait_object_region() {
    fn shared<T: Send + Sync>(_: &T) {}
    let region: Arc<dyn PmemRegion> =
        Arc::new(SimulatedRegion::new(8192, SimulatedOptions::default()).unwrap());
    let a: PmemAllocator<dyn PmemRegion> = PmemAllocator::format(region, 3, 64).unwrap();
    let p = a.allocate(a.root_offset(), 64).unwrap();
    assert_eq!(a.resolve(p).unwrap(), p.offset);
    shared(&a);
}
