//! The per-thread half of the content-block allocator (paper section 2: "we implemented a
//! userland memory manager ... memory is recycled"): each thread keeps free lists per size
//! class and carves new blocks from its own span of a huge-page chunk ([`crate::slab`]).
//!
//! Every put allocates a content node and, one epoch later, frees the one it replaced. The
//! freed block goes onto the free list of the thread that runs the epoch collector, and the
//! next content node of that class on that thread takes it back: no lock, no atomic
//! read-modify-write. Blocks cross threads through the slab's overflow lists, in batches.
//!
//! # Invariants
//!
//! 1. A block enters a free list only from [`free`], i.e. after its content node is
//!    dropped (for a published node: after the epoch collector established that no reader
//!    can hold it), exactly when it would otherwise have gone back to `malloc`.
//! 2. A thread's lists hold at most [`CACHE_BYTES_MAX`] bytes (beyond that, half of the
//!    largest list spills to the slab's overflow); its `idle` counter always equals its
//!    free bytes plus its span's length once an operation returns.
//! 3. When a thread exits, its free blocks and its span go to the slab; nothing is lost.

use std::cell::RefCell;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::slab::{self, Block, CLASSES, Span, class_bytes};

/// Most bytes of free blocks one thread keeps.
pub(crate) const CACHE_BYTES_MAX: usize = 4 << 20;
/// Most blocks a thread takes from the slab's overflow at once.
pub(crate) const REFILL_BLOCKS: usize = 32;

struct Cache {
    lists: [Vec<Block>; CLASSES],
    free_bytes: usize,
    span: Option<Span>,
    idle: Arc<AtomicUsize>,
}

impl Cache {
    fn new() -> Cache {
        Cache {
            lists: std::array::from_fn(|_| Vec::new()),
            free_bytes: 0,
            span: None,
            idle: slab::GLOBAL.register_thread(),
        }
    }

    fn publish_idle(&self) {
        let span = self.span.as_ref().map_or(0, |s| s.len);
        self.idle.store(self.free_bytes + span, Ordering::Relaxed);
    }

    fn alloc(&mut self, class: usize) -> Option<NonNull<u8>> {
        let bytes = class_bytes(class);
        if self.lists[class].is_empty() {
            let taken = slab::GLOBAL.take_blocks(class, &mut self.lists[class], REFILL_BLOCKS);
            self.free_bytes += taken * bytes;
        }
        let block = match self.lists[class].pop() {
            Some(block) => {
                self.free_bytes -= bytes;
                Some(block)
            }
            None => self.carve(bytes),
        };
        self.publish_idle();
        block.map(|b| b.0)
    }

    /// A new block from this thread's span; when the span is too short, its rest becomes
    /// free blocks of the classes that fit, and the thread takes a new span.
    fn carve(&mut self, bytes: usize) -> Option<Block> {
        loop {
            if let Some(block) = self.span.as_mut().and_then(|s| s.carve(bytes)) {
                return Some(block);
            }
            if let Some(mut rest) = self.span.take() {
                // The rest (shorter than `bytes`, a multiple of the small step) becomes free
                // blocks of the largest classes that fit: at most two (a large class and a
                // small one). It must not go back to the slab as a span: the slab hands
                // parked spans out first, and this thread would take the same short span
                // back forever.
                while rest.len >= slab::BLOCK_BYTES_MIN {
                    let class = slab::class_fitting(rest.len);
                    let block = rest.carve(class_bytes(class)).expect("the class fits the rest");
                    self.lists[class].push(block);
                    self.free_bytes += class_bytes(class);
                }
                slab::GLOBAL.give_span(rest); // slack: shorter than any class
            }
            self.span = Some(slab::GLOBAL.take_span()?);
        }
    }

    fn free(&mut self, block: Block, class: usize) {
        self.lists[class].push(block);
        self.free_bytes += class_bytes(class);
        while self.free_bytes > CACHE_BYTES_MAX {
            let (largest, _) = (0..CLASSES)
                .map(|c| (c, self.lists[c].len() * class_bytes(c)))
                .max_by_key(|&(_, b)| b)
                .expect("there are classes");
            let list = &mut self.lists[largest];
            let spilled = list.len().div_ceil(2);
            let keep = list.len() - spilled;
            slab::GLOBAL.give_blocks(largest, list.drain(keep..));
            self.free_bytes -= spilled * class_bytes(largest);
        }
        self.publish_idle();
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        for (class, list) in self.lists.iter_mut().enumerate() {
            slab::GLOBAL.give_blocks(class, list.drain(..));
        }
        if let Some(span) = self.span.take() {
            slab::GLOBAL.give_span(span);
        }
        self.free_bytes = 0;
        slab::GLOBAL.unregister_thread(&self.idle);
    }
}

thread_local! {
    static CACHE: RefCell<Option<Cache>> = const { RefCell::new(None) };
}

/// A block of class `class` (`None`: the slab is at its limit; use the C allocator).
pub(crate) fn alloc(class: usize) -> Option<NonNull<u8>> {
    let from_cache = CACHE.try_with(|cache| {
        let mut cache = cache.try_borrow_mut().ok()?;
        Some(cache.get_or_insert_with(Cache::new).alloc(class))
    });
    match from_cache {
        Ok(Some(block)) => block,
        // The thread is exiting (its cache is gone): straight from the overflow.
        _ => {
            let mut out = Vec::with_capacity(1);
            slab::GLOBAL.take_blocks(class, &mut out, 1);
            out.pop().map(|b| b.0)
        }
    }
}

/// Frees `block` (of class `class`) for reuse, on this thread first.
///
/// # Safety
///
/// `block` came from [`alloc`] for `class`, and nobody else owns or uses it any more.
pub(crate) unsafe fn free(block: NonNull<u8>, class: usize) {
    let mut block = Some(Block(block));
    let _ = CACHE.try_with(|cache| {
        if let Ok(mut cache) = cache.try_borrow_mut() {
            let block = block.take().expect("taken once");
            cache.get_or_insert_with(Cache::new).free(block, class);
        }
    });
    if let Some(block) = block {
        slab::GLOBAL.give_blocks(class, [block]);
    }
}

/// Bytes of chunks the process-wide allocator has mapped (shared by every tree).
pub(crate) fn chunks_bytes() -> usize {
    slab::GLOBAL.chunks_bytes()
}

/// Bytes the process-wide allocator holds outside live blocks (shared by every tree).
pub(crate) fn idle_bytes() -> usize {
    slab::GLOBAL.idle_bytes()
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::slab::{CLASS_STEP_BYTES, SMALL_STEP_BYTES, class_of};

    /// A class no other test of this binary allocates (the slab is process-wide).
    fn private_class(n: usize) -> usize {
        class_of(2048 + CLASS_STEP_BYTES * (7 + n)).unwrap()
    }

    fn cache_state() -> (usize, usize, usize) {
        CACHE.with(|c| {
            let c = c.borrow();
            let c = c.as_ref().unwrap();
            let span = c.span.as_ref().map_or(0, |s| s.len);
            (c.free_bytes, span, c.idle.load(Ordering::Relaxed))
        })
    }

    /// Mixed sizes leave span rests that are no class (over 1 KiB, not a multiple of 64):
    /// they must become blocks, not parked spans this thread takes back forever (a hang
    /// before the fix, seen as a trie recovery spinning in `carve`).
    #[test]
    fn mixed_sizes_never_strand_a_span_rest() {
        std::thread::spawn(|| {
            let sizes = [976, 16 + 8 + 4096, 160, 3008, 1040];
            let mut blocks = Vec::new();
            for i in 0..5_000 {
                let class = class_of(sizes[i % sizes.len()]).unwrap();
                blocks.push((alloc(class).expect("memory"), class));
            }
            let (free_bytes, span, idle) = cache_state();
            assert_eq!(idle, free_bytes + span);
            for (block, class) in blocks {
                // SAFETY: from `alloc` for `class`, freed once.
                unsafe { free(block, class) };
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_freed_block_is_reused_on_the_same_thread() {
        std::thread::spawn(|| {
            let class = private_class(0);
            let a = alloc(class).unwrap();
            assert_eq!(a.as_ptr() as usize % SMALL_STEP_BYTES, 0);
            let b = alloc(class).unwrap();
            assert_ne!(a, b);
            // SAFETY: `a` came from `alloc` for `class` and is not used again.
            unsafe { free(a, class) };
            assert_eq!(alloc(class), Some(a));
            let (free_bytes, span, idle) = cache_state();
            assert_eq!(idle, free_bytes + span, "the idle counter is current");
            // SAFETY: as above.
            unsafe { free(a, class) };
            // SAFETY: as above.
            unsafe { free(b, class) };
        })
        .join()
        .unwrap();
    }

    #[test]
    fn blocks_freed_on_one_thread_serve_another_and_the_cache_is_bounded() {
        let class = private_class(1);
        let count = CACHE_BYTES_MAX / class_bytes(class) + 100;
        let freed: HashSet<usize> = std::thread::spawn(move || {
            let blocks: Vec<NonNull<u8>> = (0..count).map(|_| alloc(class).unwrap()).collect();
            let addresses = blocks.iter().map(|b| b.as_ptr() as usize).collect();
            for block in blocks {
                // SAFETY: from `alloc` for `class`, freed once.
                unsafe { free(block, class) };
                let (free_bytes, span, idle) = cache_state();
                assert!(free_bytes <= CACHE_BYTES_MAX, "the per-thread bound holds");
                assert_eq!(idle, free_bytes + span);
            }
            addresses
            // The thread exits: its cache gives every block to the slab.
        })
        .join()
        .unwrap();
        assert_eq!(freed.len(), count, "no block handed out twice");
        std::thread::spawn(move || {
            let again: Vec<NonNull<u8>> = (0..count).map(|_| alloc(class).unwrap()).collect();
            for block in &again {
                assert!(freed.contains(&(block.as_ptr() as usize)), "reused, not carved");
            }
            for block in again {
                // SAFETY: as above.
                unsafe { free(block, class) };
            }
        })
        .join()
        .unwrap();
    }
}
