//! `Stats::memory_bytes` of `mem` is what its map takes on the heap: checked against a
//! counting allocator (each block counted as glibc's malloc takes it: the request plus an
//! 8-byte header, rounded up to 16 bytes, at least 32) for random and sequential keys.
//! One test: the allocator counts the whole process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::OrderedIndex;
use lamina_mem::MemEngine;

struct Counting;

static HEAP_BYTES: AtomicU64 = AtomicU64::new(0);

fn block(layout: Layout) -> u64 {
    ((layout.size() as u64 + 8).next_multiple_of(16)).max(32)
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HEAP_BYTES.fetch_add(block(layout), Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HEAP_BYTES.fetch_sub(block(layout), Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn measure(keys: impl Iterator<Item = u64>, value_bytes: usize) -> (u64, u64) {
    let db = MemEngine::volatile();
    let before = HEAP_BYTES.load(Ordering::Relaxed);
    let value = vec![3u8; value_bytes];
    for k in keys {
        db.put(&k.to_be_bytes(), &value).unwrap();
    }
    let heap = HEAP_BYTES.load(Ordering::Relaxed) - before;
    (db.stats().memory_bytes, heap)
}

#[test]
fn memory_bytes_is_within_a_tenth_of_the_heap_the_map_takes() {
    let n = 200_000u64;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let random: Vec<u64> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect();
    for (name, keys, value_bytes) in [
        ("sequential", (0..n).collect::<Vec<_>>(), 128),
        ("random", random.clone(), 128),
        ("random, empty values", random, 0),
    ] {
        let (reported, heap) = measure(keys.into_iter(), value_bytes);
        let ratio = reported as f64 / heap as f64;
        eprintln!("{name}: reported {reported}, heap {heap}, ratio {ratio:.3}");
        assert!((0.9..=1.12).contains(&ratio), "{name}: reported {reported}, heap {heap}");
    }
}
