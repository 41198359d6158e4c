//! Per-thread recycling of content-node blocks (the paper's section 2 memory manager: "we
//! implemented a userland memory manager ... memory is recycled"), for blocks larger than
//! what the C allocator's own per-thread cache serves.
//!
//! Every put allocates a content node and, one epoch later, frees the one it replaced. For
//! values near 1 KiB and up, glibc's per-thread cache (blocks up to 1032 bytes) no longer
//! applies, and each `malloc`/`free` pair goes through the arena's bins with consolidation
//! (`unlink_chunk`, `_int_free` were ~15% of the trie's samples at 1 KiB values). Here a
//! block freed by the epoch collector goes onto the collecting thread's free list for its
//! exact size, and the next content node of that size on that thread takes it back.
//!
//! Safety is unchanged: a block enters a list only from the deferred free, i.e. after every
//! reader that could hold it has unpinned, exactly when it would have gone back to
//! `malloc`. Bounded: at most [`POOL_BYTES_MAX`] per thread and [`POOL_SIZES_MAX`] distinct
//! sizes; beyond that, blocks go back to the allocator. A thread's lists are freed when it
//! exits.

use std::alloc::{Layout, dealloc};
use std::cell::RefCell;
use std::ptr::NonNull;

/// Blocks of at least this many bytes are recycled (smaller ones: the C allocator's
/// per-thread cache is as fast).
pub(crate) const RECYCLE_BYTES_MIN: usize = 1024;
/// Most bytes of free blocks one thread keeps.
pub(crate) const POOL_BYTES_MAX: usize = 4 << 20;
/// Most distinct block sizes one thread keeps lists for.
pub(crate) const POOL_SIZES_MAX: usize = 8;

struct SizeList {
    layout: Layout,
    blocks: Vec<NonNull<u8>>,
}

#[derive(Default)]
struct Pool {
    lists: Vec<SizeList>,
    bytes: usize,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for list in &mut self.lists {
            for block in list.blocks.drain(..) {
                // SAFETY: every pooled block was allocated with its list's layout and is
                // owned by the pool alone.
                unsafe { dealloc(block.as_ptr(), list.layout) };
            }
        }
    }
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// A free block of exactly `layout`, if this thread has one.
pub(crate) fn take(layout: Layout) -> Option<NonNull<u8>> {
    if layout.size() < RECYCLE_BYTES_MIN {
        return None;
    }
    POOL.try_with(|pool| {
        let mut pool = pool.try_borrow_mut().ok()?;
        let list = pool.lists.iter_mut().find(|l| l.layout == layout)?;
        let block = list.blocks.pop()?;
        pool.bytes -= layout.size();
        Some(block)
    })
    .ok()
    .flatten()
}

/// Frees `block` (allocated with `layout`), keeping it for reuse on this thread if there is
/// room.
///
/// # Safety
///
/// `block` was allocated by the global allocator with `layout` (or handed out by [`take`]
/// for `layout`), and nobody else owns or uses it.
pub(crate) unsafe fn recycle(block: NonNull<u8>, layout: Layout) {
    let kept = layout.size() >= RECYCLE_BYTES_MIN
        && POOL
            .try_with(|pool| {
                let Ok(mut pool) = pool.try_borrow_mut() else { return false };
                if pool.bytes + layout.size() > POOL_BYTES_MAX {
                    return false;
                }
                let index = match pool.lists.iter().position(|l| l.layout == layout) {
                    Some(index) => index,
                    None if pool.lists.len() < POOL_SIZES_MAX => {
                        pool.lists.push(SizeList { layout, blocks: Vec::new() });
                        pool.lists.len() - 1
                    }
                    None => return false,
                };
                pool.lists[index].blocks.push(block);
                pool.bytes += layout.size();
                true
            })
            .unwrap_or(false);
    if !kept {
        // SAFETY: the caller passes ownership of a block allocated with `layout`.
        unsafe { dealloc(block.as_ptr(), layout) };
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    fn block(layout: Layout) -> NonNull<u8> {
        // SAFETY: non-zero size.
        NonNull::new(unsafe { std::alloc::alloc(layout) }).unwrap()
    }

    #[test]
    fn recycles_exact_sizes_within_bounds() {
        std::thread::spawn(|| {
            let big = Layout::from_size_align(4112, 8).unwrap();
            let small = Layout::from_size_align(64, 8).unwrap();
            assert!(take(big).is_none());
            let b = block(big);
            // SAFETY: freshly allocated with `big`, owned here.
            unsafe { recycle(b, big) };
            assert_eq!(take(Layout::from_size_align(4104, 8).unwrap()), None);
            assert_eq!(take(big), Some(b));
            let s = block(small);
            // SAFETY: as above; too small to keep, so it is freed.
            unsafe { recycle(s, small) };
            assert_eq!(take(small), None);
            // The byte bound: fill the pool, the rest goes back to the allocator.
            let n = POOL_BYTES_MAX / big.size() + 10;
            for _ in 0..n {
                // SAFETY: as above.
                unsafe { recycle(block(big), big) };
            }
            let kept = std::iter::from_fn(|| take(big)).count();
            assert_eq!(kept, POOL_BYTES_MAX / big.size());
            // The size bound.
            for size in 0..POOL_SIZES_MAX + 3 {
                let layout = Layout::from_size_align(2048 + 8 * size, 8).unwrap();
                // SAFETY: as above.
                unsafe { recycle(block(layout), layout) };
            }
            let last = Layout::from_size_align(2048 + 8 * (POOL_SIZES_MAX + 2), 8).unwrap();
            assert_eq!(take(last), None);
            // What is left is freed at thread exit (Miri or ASan would report a leak).
        })
        .join()
        .unwrap();
    }
}
