//! Block cache tests: policy, budget, pins, latches under threads, single load, counters.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use lamina_core::{Error, Result};

use super::*;

const BLOCK: usize = 64;

fn cache(frames: usize, overflow_frames: usize) -> BlockCache {
    BlockCache::new(CacheConfig {
        capacity_bytes: frames * BLOCK,
        block_bytes: BLOCK,
        pinned_overflow_bytes_max: overflow_frames * BLOCK,
    })
    .unwrap()
}

fn key(n: u64) -> BlockKey {
    BlockKey::new(7, n)
}

/// Loader writing the block number into every byte.
fn fill(n: u64) -> impl FnOnce(&mut [u8]) -> Result<()> {
    move |buf| {
        buf.fill(n as u8);
        Ok(())
    }
}

fn touch(cache: &BlockCache, n: u64, access: Access) {
    let block = cache.pin(key(n), access, fill(n)).unwrap();
    assert!(block.read().iter().all(|&b| b == n as u8));
}

fn resident(cache: &BlockCache) -> Vec<u64> {
    cache.resident_keys().iter().map(|k| k.block_no).collect()
}

#[test]
fn config_is_validated() {
    let bad = |capacity_bytes, block_bytes| {
        BlockCache::new(CacheConfig { capacity_bytes, block_bytes, pinned_overflow_bytes_max: 0 })
            .unwrap_err()
            .is_invalid_argument()
    };
    assert!(bad(4096, 0));
    assert!(bad(100, 4096));
    assert!(bad(1 << 30, (1 << 24) + 1));
    let default = CacheConfig::default();
    assert_eq!(default.capacity_bytes, 15 * 1024 * 1024);
    assert_eq!(default.frames_max(), 3840);
}

#[test]
fn eviction_order_follows_probation_then_protected() {
    let cache = cache(4, 0); // probation share: 1 frame
    for n in 0..4 {
        touch(&cache, n, Access::Point);
    }
    touch(&cache, 0, Access::Point); // re-hit: promoted when the hand reaches it
    touch(&cache, 2, Access::Point);
    touch(&cache, 4, Access::Point); // 0 moves to protected, 1 is evicted
    assert_eq!(resident(&cache), [0, 2, 3, 4]);
    touch(&cache, 5, Access::Point); // 2 moves to protected, 3 is evicted
    assert_eq!(resident(&cache), [0, 2, 4, 5]);
    touch(&cache, 6, Access::Point); // probation (4, 5) over its share: 4 goes
    assert_eq!(resident(&cache), [0, 2, 5, 6]);
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.hits, stats.evictions), (7, 2, 3));
}

#[test]
fn protected_is_a_clock_when_probation_is_below_its_share() {
    let cache = cache(4, 0);
    for n in 0..4 {
        touch(&cache, n, Access::Point);
        touch(&cache, n, Access::Point);
    }
    touch(&cache, 0, Access::Point);
    // All four move to protected with usage reset to 0; probation is empty, so the CLOCK
    // over protected evicts the oldest, 0.
    touch(&cache, 4, Access::Point);
    assert_eq!(resident(&cache), [1, 2, 3, 4]);
    touch(&cache, 1, Access::Point); // 1 used again
    touch(&cache, 5, Access::Point); // probation (4) at its share: 4 is not re-hit, evicted
    assert_eq!(resident(&cache), [1, 2, 3, 5]);
    touch(&cache, 6, Access::Point); // 5 evicted from probation likewise
    assert_eq!(resident(&cache), [1, 2, 3, 6]);
}

#[test]
fn a_long_scan_does_not_flush_hot_blocks() {
    let cache = cache(8, 0);
    for n in 0..4 {
        touch(&cache, n, Access::Point);
        touch(&cache, n, Access::Point);
    }
    for n in 100..1100 {
        for _ in 0..3 {
            touch(&cache, n, Access::Scan); // re-reads within the scan do not promote
        }
    }
    let keep: Vec<u64> = resident(&cache).into_iter().filter(|&n| n < 100).collect();
    assert_eq!(keep, [0, 1, 2, 3]);
    let stats = cache.stats();
    assert_eq!(stats.misses, 1004);
    assert_eq!(stats.hits, 4 + 2000);
    assert_eq!(stats.evictions, 1004 - 8);
    assert_eq!(stats.resident_blocks, 8);
}

#[test]
fn budget_is_never_exceeded_without_pins() {
    let cache = cache(16, 4);
    let mut state = 12345u64;
    for _ in 0..5000 {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let n = (state >> 33) % 64;
        let access = if n.is_multiple_of(3) { Access::Scan } else { Access::Point };
        touch(&cache, n, access);
        assert!(cache.stats().resident_bytes <= 16 * BLOCK as u64);
    }
    let stats = cache.stats();
    assert_eq!(stats.hits + stats.misses, 5000);
    assert_eq!(stats.misses - stats.evictions, stats.resident_blocks);
    assert!(stats.resident_bytes_peak <= 16 * BLOCK as u64);
}

#[test]
fn pins_prevent_eviction_and_overflow_is_bounded() {
    let cache = cache(4, 2);
    let pinned: Vec<PinnedBlock> =
        (0..4).map(|n| cache.pin(key(n), Access::Scan, fill(n)).unwrap()).collect();
    // Everything is pinned: the next two blocks go to the overflow, the third is refused.
    let extra1 = cache.pin(key(10), Access::Scan, fill(10)).unwrap();
    let extra2 = cache.pin(key(11), Access::Scan, fill(11)).unwrap();
    let err = cache.pin(key(12), Access::Scan, fill(12)).unwrap_err();
    assert!(matches!(err, Error::NoSpace { .. }), "{err:?}");
    assert_eq!(cache.stats().resident_bytes, 6 * BLOCK as u64);
    assert_eq!(cache.stats().misses, 6, "a refused block is not counted as loaded");
    for n in 0..4 {
        assert!(cache.pin_if_cached(key(n), Access::Scan).is_some());
    }
    // Unpinned: the next insertion evicts back down to the budget (4 frames).
    drop((extra1, extra2));
    drop(pinned);
    touch(&cache, 13, Access::Scan);
    assert_eq!(cache.stats().resident_blocks, 4);
    assert_eq!(cache.stats().evictions, 3);
}

#[test]
fn a_guard_keeps_its_block_pinned() {
    let cache = cache(2, 0);
    let guard = cache.pin(key(0), Access::Point, fill(0)).unwrap().read(); // handle dropped
    for n in 1..20 {
        touch(&cache, n, Access::Scan);
    }
    assert!(cache.resident_keys().contains(&key(0)));
    assert_eq!(guard.key(), key(0));
    drop(guard);
    for n in 20..22 {
        touch(&cache, n, Access::Scan);
    }
    assert!(!cache.resident_keys().contains(&key(0)));
}

#[test]
fn failed_load_caches_nothing_and_is_counted() {
    let cache = cache(4, 0);
    let err = cache
        .pin(key(1), Access::Point, |_| Err(Error::io("reading", std::io::Error::other("boom"))))
        .unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert!(cache.resident_keys().is_empty());
    touch(&cache, 1, Access::Point);
    let stats = cache.stats();
    assert_eq!((stats.misses, stats.load_failures, stats.resident_blocks), (2, 1, 1));
}

#[test]
fn a_panicking_loader_leaves_the_block_loadable() {
    let cache = cache(4, 0);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cache.pin(key(1), Access::Point, |_| panic!("loader bug")).map(drop)
    }));
    assert!(result.is_err());
    assert!(cache.resident_keys().is_empty());
    touch(&cache, 1, Access::Point);
    assert_eq!(cache.stats().load_failures, 1);
}

#[test]
fn install_and_invalidate() {
    let cache = cache(4, 0);
    touch(&cache, 1, Access::Point);
    cache.install(key(1), &[9u8; BLOCK]).unwrap();
    cache.install(key(2), &[8u8; BLOCK]).unwrap();
    let loaded_again = AtomicBool::new(false);
    let block = cache
        .pin(key(2), Access::Point, |_| {
            loaded_again.store(true, Ordering::Relaxed);
            Ok(())
        })
        .unwrap();
    assert!(!loaded_again.load(Ordering::Relaxed));
    assert!(block.read().iter().all(|&b| b == 8));
    assert!(cache.pin_if_cached(key(1), Access::Point).unwrap().read().iter().all(|&b| b == 9));
    assert!(cache.install(key(3), &[0u8; 3]).unwrap_err().is_invalid_argument());
    cache.install(BlockKey::new(99, 0), &[1u8; BLOCK]).unwrap();
    assert!(cache.invalidate(key(1)));
    assert!(!cache.invalidate(key(1)));
    assert_eq!(cache.invalidate_file(7), 1); // block 2 (still pinned: detached)
    assert_eq!(cache.resident_keys(), [BlockKey::new(99, 0)]);
    assert!(block.read().iter().all(|&b| b == 8), "a detached copy stays readable");
    let stats = cache.stats();
    assert_eq!((stats.installs, stats.invalidations, stats.misses, stats.hits), (3, 2, 1, 2));
}

#[test]
fn concurrent_misses_load_once() {
    let cache = Arc::new(cache(8, 0));
    let loads = Arc::new(AtomicUsize::new(0));
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (cache, loads, barrier) = (cache.clone(), loads.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                let block = cache
                    .pin(key(5), Access::Point, |buf| {
                        loads.fetch_add(1, Ordering::SeqCst);
                        // Stay in the loader long enough for the others to find the frame.
                        thread::sleep(std::time::Duration::from_millis(50));
                        buf.fill(5);
                        Ok(())
                    })
                    .unwrap();
                assert!(block.read().iter().all(|&b| b == 5));
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    let stats = cache.stats();
    assert_eq!(stats.misses, 1);
    assert_eq!(stats.hits + stats.load_waits, threads as u64 - 1);
}

#[test]
fn latches_exclude_writers_under_threads() {
    // Each writer sets every byte of a block to one value; a reader must never see a mix.
    let cache = Arc::new(cache(4, 0));
    let blocks = 3u64;
    let handles: Vec<_> = (0..4u8)
        .map(|t| {
            let cache = cache.clone();
            thread::spawn(move || {
                for i in 0..400u64 {
                    let block = cache.pin(key(i % blocks), Access::Point, fill(0)).unwrap();
                    if (i + u64::from(t)) % 3 == 0 {
                        let mut guard = block.write();
                        for byte in guard.iter_mut() {
                            *byte = t.wrapping_mul(31).wrapping_add(i as u8);
                        }
                    } else {
                        let guard = block.read();
                        assert!(guard.iter().all(|&b| b == guard[0]), "torn block read");
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
}

#[test]
fn latch_coupling_holds_one_latch_while_taking_the_next() {
    let cache = cache(8, 0);
    let mut guard = cache.pin(key(0), Access::Point, fill(0)).unwrap().read();
    for n in 1..6 {
        let next = cache.pin(key(n), Access::Point, fill(n)).unwrap().read();
        assert_eq!(guard[0], (n - 1) as u8);
        guard = next; // releases the previous latch only now
    }
    // While a reader holds block 5, a writer cannot take it; others can.
    let block5 = cache.pin_if_cached(key(5), Access::Point).unwrap();
    assert!(block5.try_write().is_none());
    assert!(block5.try_read().is_some());
    drop(guard);
    assert!(block5.try_write().is_some());
}

#[test]
fn blocks_load_from_a_storage_file_once() {
    use crate::backend::{OpenMode, Storage};
    use crate::memory::MemoryStorage;

    let storage = MemoryStorage::new();
    let file = storage.open("L1.dat", OpenMode::CreateNew).unwrap();
    for n in 0..4u8 {
        file.write_all_at(u64::from(n) * BLOCK as u64, &[n + 1; BLOCK]).unwrap();
    }
    let before = storage.io_stats();
    let cache = cache(8, 0);
    for _ in 0..3 {
        for n in 0..4u64 {
            let block = cache.pin_from_file(1, &*file, n, Access::Point).unwrap();
            assert!(block.read().iter().all(|&b| u64::from(b) == n + 1));
        }
    }
    let read = storage.io_stats().since(&before);
    assert_eq!(read.reads(), 4, "each block read from the file once");
    assert_eq!((cache.stats().misses, cache.stats().hits), (4, 8));
    let err = cache.pin_from_file(1, &*file, 9, Access::Point).unwrap_err();
    assert!(!err.is_invalid_argument(), "reading past the end is an I/O error: {err:?}");
    assert!(
        cache.pin_from_file(1, &*file, u64::MAX, Access::Point).unwrap_err().is_invalid_argument()
    );
    assert_eq!(cache.stats().load_failures, 1);
}

#[test]
fn stress_threads_with_eviction_keep_content_budget_and_counters() {
    // 4 threads, 64 blocks, 16 frames; each thread holds at most 2 pins (latch coupling), so
    // at most 8 blocks are pinned and the budget is never exceeded. Every block's bytes equal
    // its number except while a writer holds the latch (it scribbles and restores).
    const THREADS: u64 = 4;
    const OPS: u64 = 1500;
    let cache = Arc::new(cache(16, 4));
    let pins = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (cache, pins) = (cache.clone(), pins.clone());
            thread::spawn(move || {
                let mut state = 0x9e37_79b9 ^ t;
                let mut next = move || {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    state >> 33
                };
                let mut held: Option<BlockReadGuard> = None;
                for _ in 0..OPS {
                    let n = next() % 64;
                    let access = if next() % 2 == 0 { Access::Point } else { Access::Scan };
                    // Couple latches in increasing block order only, as a tree descent does:
                    // parking_lot's latches are fair (a waiting writer blocks new readers), so
                    // coupling in arbitrary order could deadlock.
                    if held.as_ref().is_some_and(|g| g.key().block_no >= n) {
                        held = None;
                    }
                    let block = cache.pin(key(n), access, fill(n)).unwrap();
                    pins.fetch_add(1, Ordering::Relaxed);
                    if next() % 5 == 0 {
                        drop(held.take()); // never wait for a write latch while holding one
                        let mut guard = block.write();
                        guard.fill(0xAA);
                        thread::yield_now();
                        guard.fill(n as u8);
                    } else {
                        let guard = block.read();
                        assert!(guard.iter().all(|&b| u64::from(b) == n), "block {n} torn");
                        held = Some(guard); // releases the previous block only now
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let stats = cache.stats();
    let pins = pins.load(Ordering::Relaxed) as u64;
    assert_eq!(pins, THREADS * OPS);
    assert_eq!(stats.hits + stats.misses + stats.load_waits, pins);
    assert_eq!(stats.misses - stats.evictions, stats.resident_blocks);
    assert!(stats.resident_bytes_peak <= 16 * BLOCK as u64, "{stats:?}");
    assert_eq!(stats.load_failures, 0);
}
