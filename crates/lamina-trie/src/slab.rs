//! The shared half of the content-block allocator (the paper's section 2 userland memory
//! manager): size classes, 2 MiB chunks advised as transparent huge pages, and the global
//! overflow lists through which a block freed on one thread reaches another. The
//! per-thread half (the fast path) is [`crate::pool`].
//!
//! Why: a content node is the last hop of every lookup. Spread over 4 KiB pages by
//! `malloc`, reaching it at scale costs a TLB miss (a page walk over gigabytes of page
//! tables) besides the cache miss; packed in 2 MiB huge pages it costs the cache miss
//! alone. Backing glibc's whole heap with huge pages (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`)
//! was measured to raise the trie's lookups per CPU-second at 10M keys of 136 bytes by
//! ~12%, and its throughput at 4 KiB values by ~20% (`docs/results/trie.md`); this does it
//! for the content blocks alone, without a process-wide setting. At 4 KiB values the copies
//! into and out of content nodes also stop missing the TLB.
//!
//! Differences from the paper, on purpose: it maps one huge chunk up front and keeps a free
//! list "for each possible chunk length"; here chunks are mapped 2 MiB at a time as needed
//! (bounded by [`SLAB_BYTES_MAX`]), and lengths are rounded up to classes: steps of
//! [`SMALL_STEP_BYTES`] up to [`LARGE_BYTES_MIN`] (as `malloc`'s bins: at most 15 bytes lost
//! per block, no per-block header), then steps of [`CLASS_STEP_BYTES`] (at most 63 bytes
//! lost on a block of over 1 KiB).
//!
//! # Invariants
//!
//! 1. A size class `c` holds blocks of exactly [`class_bytes`]`(c)` bytes, from
//!    [`BLOCK_BYTES_MIN`] to [`BLOCK_BYTES_MAX`], every one a multiple of
//!    [`SMALL_STEP_BYTES`]. Chunks are [`CHUNK_BYTES`]-aligned and every block is carved at
//!    a multiple of the small step from the chunk start, so every block is 16-byte aligned
//!    and lies inside one chunk.
//! 2. Every byte of every chunk is in exactly one place: a live block (owned by a content
//!    node), a free block in a thread's cache or in this slab's overflow list of its class,
//!    an uncarved span (a thread's, or parked here), or slack (a span tail shorter than
//!    the smallest class, never reused).
//! 3. Chunks are fresh `mmap`s ([`crate::huge`]), never returned to the operating system
//!    while the slab lives: the epoch
//!    collector may free a block after the tree that allocated it is gone, so the memory
//!    must outlive every tree. The process-wide slab therefore keeps its chunks, reused by
//!    every later tree, and counts them: mapped bytes = live bytes + [`Slab::idle_bytes`].
//! 4. Mapped bytes never exceed the slab's limit ([`SLAB_BYTES_MAX`] for the process-wide
//!    one); past it, callers fall back to the C allocator. That also bounds every overflow
//!    list (it holds only blocks of the chunks, by 2) without a bound of its own: a block
//!    dropped from a full list could never be reused, only stranded.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};

use crate::huge;

/// The smallest block: a content node's 16-byte header alone (empty key and value).
pub(crate) const BLOCK_BYTES_MIN: usize = 16;
/// Granularity of the small classes, up to [`LARGE_BYTES_MIN`]: blocks stay 16-byte aligned
/// (the header needs 8) and lose at most 15 bytes to rounding, like `malloc`'s bins.
pub(crate) const SMALL_STEP_BYTES: usize = 16;
/// The smallest large class; from here on classes grow by [`CLASS_STEP_BYTES`].
pub(crate) const LARGE_BYTES_MIN: usize = 1024;
/// Granularity of the large classes (one cache line: 66 lists cover 1 KiB to 5 KiB).
pub(crate) const CLASS_STEP_BYTES: usize = 64;
/// The largest content node: a 16-byte header, the longest key, the longest value.
pub(crate) const BLOCK_BYTES_MAX: usize =
    (16 + KEY_BYTES_MAX + VALUE_BYTES_MAX).next_multiple_of(CLASS_STEP_BYTES);
/// Number of small classes: 16, 32, ..., [`LARGE_BYTES_MIN`] (the last one is also where the
/// large classes start).
const SMALL_CLASSES: usize = (LARGE_BYTES_MIN - BLOCK_BYTES_MIN) / SMALL_STEP_BYTES;
/// Number of size classes.
pub(crate) const CLASSES: usize =
    SMALL_CLASSES + (BLOCK_BYTES_MAX - LARGE_BYTES_MIN) / CLASS_STEP_BYTES + 1;
/// Size and alignment of a chunk: one huge page on x86-64 and aarch64 Linux.
pub(crate) const CHUNK_BYTES: usize = huge::HUGE_PAGE_BYTES;
/// Most bytes of chunks the process-wide slab maps (invariant 4). Memory it maps is kept
/// for the process's life (invariant 3), so this also bounds what it can hold idle. Past
/// it, content nodes come from `malloc` (slower lookups at scale, nothing else changes).
/// 32 GiB: about 200 million content nodes of an 8-byte key and a 128-byte value.
pub(crate) const SLAB_BYTES_MAX: usize = 32 << 30;

const _: () = assert!(LARGE_BYTES_MIN.is_multiple_of(CLASS_STEP_BYTES));
const _: () = assert!(
    (LARGE_BYTES_MIN - BLOCK_BYTES_MIN).is_multiple_of(SMALL_STEP_BYTES)
        && CLASS_STEP_BYTES.is_multiple_of(SMALL_STEP_BYTES)
);
const _: () =
    assert!(CHUNK_BYTES.is_multiple_of(CLASS_STEP_BYTES) && BLOCK_BYTES_MAX < CHUNK_BYTES);

/// The class of a block of `size` bytes (rounded up to the next class), if the slab serves
/// that size.
pub(crate) const fn class_of(size: usize) -> Option<usize> {
    if size > BLOCK_BYTES_MAX {
        return None;
    }
    if size <= LARGE_BYTES_MIN {
        let size = if size < BLOCK_BYTES_MIN { BLOCK_BYTES_MIN } else { size };
        return Some((size - BLOCK_BYTES_MIN).div_ceil(SMALL_STEP_BYTES));
    }
    Some(SMALL_CLASSES + (size - LARGE_BYTES_MIN).div_ceil(CLASS_STEP_BYTES))
}

/// The largest class whose blocks fit in `bytes` (at least [`BLOCK_BYTES_MIN`], at most
/// [`BLOCK_BYTES_MAX`]).
pub(crate) const fn class_fitting(bytes: usize) -> usize {
    assert!(bytes >= BLOCK_BYTES_MIN && bytes <= BLOCK_BYTES_MAX);
    let Some(class) = class_of(bytes) else { unreachable!() };
    if class_bytes(class) > bytes { class - 1 } else { class }
}

/// Bytes of a block of class `class`.
pub(crate) const fn class_bytes(class: usize) -> usize {
    assert!(class < CLASSES);
    if class <= SMALL_CLASSES {
        BLOCK_BYTES_MIN + class * SMALL_STEP_BYTES
    } else {
        LARGE_BYTES_MIN + (class - SMALL_CLASSES) * CLASS_STEP_BYTES
    }
}

/// A free block (raw memory owned by whoever holds the value).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Block(pub(crate) NonNull<u8>);

// SAFETY: a free block is raw memory with no thread affinity; its holder owns it alone.
unsafe impl Send for Block {}

/// An uncarved run of chunk memory, `len` bytes from `start` (a multiple of the small step).
#[derive(Debug)]
pub(crate) struct Span {
    pub(crate) start: NonNull<u8>,
    pub(crate) len: usize,
}

// SAFETY: as for `Block`: raw memory owned by the span's holder alone.
unsafe impl Send for Span {}

impl Span {
    /// Cuts `bytes` (a class size) off the front, if the span holds that many.
    pub(crate) fn carve(&mut self, bytes: usize) -> Option<Block> {
        debug_assert!(bytes.is_multiple_of(SMALL_STEP_BYTES));
        if self.len < bytes {
            return None;
        }
        let block = self.start;
        // SAFETY: `bytes <= len`, so the new start is within the span or one past its end
        // (when the span is used up), inside the same chunk allocation.
        self.start = unsafe { NonNull::new_unchecked(self.start.as_ptr().add(bytes)) };
        self.len -= bytes;
        Some(Block(block))
    }
}

/// Chunks, overflow lists and byte counters shared by all threads.
#[derive(Debug)]
pub(crate) struct Slab {
    /// Free blocks per class, given up by threads (cache spills, thread exit).
    overflow: [Mutex<Vec<Block>>; CLASSES],
    /// Uncarved spans given back by exiting threads, taken before a new chunk is mapped.
    spans: Mutex<Vec<Span>>,
    /// Every chunk mapped, to free them if the slab is dropped (only non-static slabs are).
    chunks: Mutex<Vec<Block>>,
    chunks_bytes: AtomicUsize,
    chunks_bytes_max: usize,
    /// Bytes in `overflow`, in `spans`, and slack.
    shared_idle_bytes: AtomicUsize,
    /// Each live thread cache's idle bytes (its free blocks and its span), written by the
    /// owning thread only.
    thread_idle: Mutex<Vec<Arc<AtomicUsize>>>,
}

/// The process-wide slab every content node uses.
pub(crate) static GLOBAL: Slab = Slab::new(SLAB_BYTES_MAX);

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Slab {
    pub(crate) const fn new(chunks_bytes_max: usize) -> Slab {
        Slab {
            overflow: [const { Mutex::new(Vec::new()) }; CLASSES],
            spans: Mutex::new(Vec::new()),
            chunks: Mutex::new(Vec::new()),
            chunks_bytes: AtomicUsize::new(0),
            chunks_bytes_max,
            shared_idle_bytes: AtomicUsize::new(0),
            thread_idle: Mutex::new(Vec::new()),
        }
    }

    /// A span to carve from: a parked one, else a new chunk; `None` at the limit (or if
    /// the operating system has no memory left).
    pub(crate) fn take_span(&self) -> Option<Span> {
        if let Some(span) = lock(&self.spans).pop() {
            self.shared_idle_bytes.fetch_sub(span.len, Ordering::Relaxed);
            return Some(span);
        }
        // At the limit every allocation of a class with no free block comes here: a plain
        // load keeps that path from writing the shared counter.
        if self.chunks_bytes.load(Ordering::Relaxed) + CHUNK_BYTES > self.chunks_bytes_max {
            return None;
        }
        let reserved = self.chunks_bytes.fetch_add(CHUNK_BYTES, Ordering::Relaxed);
        if reserved + CHUNK_BYTES > self.chunks_bytes_max {
            self.chunks_bytes.fetch_sub(CHUNK_BYTES, Ordering::Relaxed);
            return None;
        }
        let Some(start) = huge::map(CHUNK_BYTES) else {
            self.chunks_bytes.fetch_sub(CHUNK_BYTES, Ordering::Relaxed);
            return None;
        };
        lock(&self.chunks).push(Block(start));
        Some(Span { start, len: CHUNK_BYTES })
    }

    /// Parks a span for another thread, or counts it as slack if no class fits in it.
    pub(crate) fn give_span(&self, span: Span) {
        self.shared_idle_bytes.fetch_add(span.len, Ordering::Relaxed);
        if span.len >= BLOCK_BYTES_MIN {
            lock(&self.spans).push(span);
        }
    }

    /// Moves up to `count` free blocks of `class` into `out`; returns how many.
    pub(crate) fn take_blocks(&self, class: usize, out: &mut Vec<Block>, count: usize) -> usize {
        let mut list = lock(&self.overflow[class]);
        let taken = count.min(list.len());
        let keep = list.len() - taken;
        out.extend(list.drain(keep..));
        // Under the lock: the giver added these bytes before it released it, so the counter
        // never goes below zero.
        self.shared_idle_bytes.fetch_sub(taken * class_bytes(class), Ordering::Relaxed);
        taken
    }

    /// Takes over free blocks of `class`.
    pub(crate) fn give_blocks(&self, class: usize, blocks: impl IntoIterator<Item = Block>) {
        let mut list = lock(&self.overflow[class]);
        let before = list.len();
        list.extend(blocks);
        let given = list.len() - before;
        self.shared_idle_bytes.fetch_add(given * class_bytes(class), Ordering::Relaxed);
    }

    /// A counter for a new thread cache's idle bytes, included in [`Slab::idle_bytes`].
    pub(crate) fn register_thread(&self) -> Arc<AtomicUsize> {
        let counter = Arc::new(AtomicUsize::new(0));
        lock(&self.thread_idle).push(Arc::clone(&counter));
        counter
    }

    /// Forgets a thread cache's counter (it gave everything back first).
    pub(crate) fn unregister_thread(&self, counter: &Arc<AtomicUsize>) {
        lock(&self.thread_idle).retain(|c| !Arc::ptr_eq(c, counter));
    }

    /// Bytes of chunks mapped.
    pub(crate) fn chunks_bytes(&self) -> usize {
        self.chunks_bytes.load(Ordering::Relaxed)
    }

    /// Bytes of chunks not in a live block: free blocks, spans and slack (invariant 2),
    /// wherever they are. A snapshot: threads update their counters without a lock.
    pub(crate) fn idle_bytes(&self) -> usize {
        // Saturating: the snapshot may count a block moving between a thread and the
        // overflow twice; it never misses bytes that stay put.
        let threads = lock(&self.thread_idle)
            .iter()
            .fold(0usize, |sum, c| sum.saturating_add(c.load(Ordering::Relaxed)));
        self.shared_idle_bytes.load(Ordering::Relaxed).saturating_add(threads)
    }
}

impl Drop for Slab {
    /// Frees the chunks (never runs for [`GLOBAL`]; a slab is dropped only when nothing
    /// can hold its blocks any more).
    fn drop(&mut self) {
        let chunks = self.chunks.get_mut().unwrap_or_else(PoisonError::into_inner);
        for chunk in chunks.drain(..) {
            // SAFETY: mapped in `take_span` with this size, freed once (drained); the slab
            // is dropped, so no block of it is in use.
            unsafe { huge::unmap(chunk.0, CHUNK_BYTES) };
        }
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn classes_round_up_to_the_step_and_cover_every_content_node() {
        assert_eq!(class_of(0), Some(0), "smaller than a header rounds up to the first class");
        assert_eq!(class_bytes(0), BLOCK_BYTES_MIN);
        assert_eq!(class_of(17), Some(1));
        assert_eq!(class_bytes(1), 32);
        // An 8-byte key and a 128-byte value under the header: 152 bytes, class of 160.
        assert_eq!(class_bytes(class_of(16 + 8 + 128).unwrap()), 160);
        assert_eq!(class_bytes(class_of(1024).unwrap()), 1024);
        assert_eq!(class_bytes(class_of(1025).unwrap()), 1088);
        // A 4 KiB value under an 8-byte key: one class, 1% rounding.
        let node = 16 + 8 + 4096;
        assert_eq!(class_bytes(class_of(node).unwrap()), 4160);
        assert_eq!(class_of(BLOCK_BYTES_MAX), Some(CLASSES - 1));
        assert_eq!(class_of(BLOCK_BYTES_MAX + 1), None);
        for bytes in BLOCK_BYTES_MIN..=BLOCK_BYTES_MAX {
            let fitting = class_bytes(class_fitting(bytes));
            assert!(fitting <= bytes && bytes - fitting < CLASS_STEP_BYTES, "{bytes} -> {fitting}");
        }
        let mut class_before = 0;
        for size in BLOCK_BYTES_MIN..=BLOCK_BYTES_MAX {
            let class = class_of(size).unwrap();
            let bytes = class_bytes(class);
            let step = if size <= LARGE_BYTES_MIN { SMALL_STEP_BYTES } else { CLASS_STEP_BYTES };
            assert!(bytes >= size && bytes < size + step, "{size} -> {bytes}");
            assert!(bytes.is_multiple_of(SMALL_STEP_BYTES), "{size} -> {bytes}");
            assert!(class == class_before || class == class_before + 1, "classes are dense");
            class_before = class;
        }
    }

    #[test]
    fn chunks_are_aligned_limited_and_accounted() {
        let slab = Slab::new(2 * CHUNK_BYTES);
        let mut a = slab.take_span().unwrap();
        let b = slab.take_span().unwrap();
        assert!(slab.take_span().is_none(), "the limit holds");
        assert_eq!(slab.chunks_bytes(), 2 * CHUNK_BYTES);
        for span in [&a, &b] {
            assert_eq!(span.start.as_ptr() as usize % CHUNK_BYTES, 0);
            assert_eq!(span.len, CHUNK_BYTES);
        }
        let first = a.carve(4160).unwrap();
        let second = a.carve(1024).unwrap();
        assert_eq!(second.0.as_ptr() as usize - first.0.as_ptr() as usize, 4160);
        assert_eq!(second.0.as_ptr() as usize % SMALL_STEP_BYTES, 0);
        // Nothing registered yet: the shared counter is all there is.
        assert_eq!(slab.idle_bytes(), 0);
        slab.give_span(a);
        slab.give_span(b);
        assert_eq!(slab.idle_bytes(), 2 * CHUNK_BYTES - 4160 - 1024);
        slab.give_blocks(class_of(4160).unwrap(), [first]);
        let class_1k = class_of(1024).unwrap();
        slab.give_blocks(class_1k, [second]);
        assert_eq!(slab.idle_bytes(), 2 * CHUNK_BYTES);
        // Parked spans come back before a new chunk would be mapped.
        let span = slab.take_span().unwrap();
        assert!(span.len == CHUNK_BYTES || span.len == CHUNK_BYTES - 5184);
        let mut out = Vec::new();
        assert_eq!(slab.take_blocks(class_1k, &mut out, 8), 1);
        assert_eq!(slab.take_blocks(class_1k, &mut out, 8), 0);
        let counter = slab.register_thread();
        counter.store(100, Ordering::Relaxed);
        assert_eq!(slab.idle_bytes(), 2 * CHUNK_BYTES - span.len - 1024 + 100);
        slab.unregister_thread(&counter);
        assert_eq!(slab.idle_bytes(), 2 * CHUNK_BYTES - span.len - 1024);
    }

    #[test]
    fn a_span_too_short_for_any_class_is_slack() {
        let slab = Slab::new(CHUNK_BYTES);
        let mut span = slab.take_span().unwrap();
        while span.carve(BLOCK_BYTES_MAX).is_some() {}
        let tail = span.len;
        assert!(tail < BLOCK_BYTES_MAX);
        while span.carve(BLOCK_BYTES_MIN).is_some() {}
        assert!(span.len < BLOCK_BYTES_MIN);
        let slack = span.len;
        slab.give_span(span);
        assert_eq!(slab.idle_bytes(), slack);
        assert!(slab.take_span().is_none(), "slack is not parked, and the limit holds");
    }
}
