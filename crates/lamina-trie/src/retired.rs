//! Bytes of content nodes unlinked from a tree but not freed yet: the epoch collector frees
//! a retired node only after every thread pinned at its retirement has unpinned (a long
//! scan, or a durable writer waiting for its log sync, stretches that), and until then the
//! node's memory is still taken. Process-wide, like the content allocator (a node may be
//! freed after its tree is gone); counted in `Stats::memory_bytes`.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

/// Cells of the counter (one per thread, round-robin), so that retiring and freeing do not
/// bounce one cache line between the cores on every overwrite.
const STRIPES: usize = 16;

static RETIRED: [CachePadded<AtomicU64>; STRIPES] =
    [const { CachePadded::new(AtomicU64::new(0)) }; STRIPES];

thread_local! {
    static STRIPE: usize = {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES
    };
}

fn cell() -> &'static AtomicU64 {
    // A thread being torn down (its locals gone) uses the first cell.
    &RETIRED[STRIPE.try_with(|s| *s).unwrap_or(0)]
}

/// A node of `bytes` was unlinked.
pub(crate) fn retired(bytes: u64) {
    cell().fetch_add(bytes, Ordering::Relaxed);
}

/// A retired node of `bytes` was freed.
pub(crate) fn freed(bytes: u64) {
    cell().fetch_sub(bytes, Ordering::Relaxed);
}

/// Bytes retired and not yet freed, in the whole process (a snapshot; a transiently
/// negative sum of cells read one after the other reads as 0).
pub(crate) fn bytes() -> u64 {
    let sum = RETIRED.iter().fold(0u64, |sum, c| sum.wrapping_add(c.load(Ordering::Relaxed)));
    if i64::try_from(sum).is_ok() { sum } else { 0 }
}
