//! Inner nodes live in big blocks, packed one after the other (a bump allocator), instead of
//! one `malloc` each.
//!
//! Part of the paper's userland memory manager (section 2: "malloc calls turned out to be
//! much too expensive"), where it pays for lamina: inner nodes are never freed while the
//! tree lives (the tree never shrinks, see [`crate::tree`]), so they need no free list at
//! all, and packing them matters for reads. Allocated by `malloc` in between the content
//! nodes, a 16-way inner node (144 bytes) sits alone among kilobyte values, so every level
//! of a walk below the cached top is a cache miss *and* a TLB miss; packed, the nodes of a
//! tree of 260k keys take a few MiB, which the last-level cache and a handful of huge pages
//! cover (blocks of [`BLOCK_BYTES_MAX`] are 2 MiB-aligned and advised as huge pages).
//! Measured in `docs/results/trie.md`.
//!
//! Blocks start small and double, so a tree of a few keys costs a few KiB, not 2 MiB.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::ptr::NonNull;
use std::sync::{Mutex, PoisonError};

use crate::huge;

/// Size of the first block.
const BLOCK_BYTES_MIN: usize = 16 << 10;
/// Size (and alignment) of the largest blocks: one huge page on x86-64 and aarch64 Linux.
pub(crate) const BLOCK_BYTES_MAX: usize = huge::HUGE_PAGE_BYTES;

#[derive(Debug)]
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

#[derive(Debug, Default)]
struct ArenaState {
    blocks: Vec<Block>,
    /// Bytes of the last block handed out.
    used: usize,
}

/// A bump allocator for values of one type `T` that are never freed individually: every
/// block is released when the arena is dropped (the owner drops the values in place first).
#[derive(Debug)]
pub(crate) struct Arena<T> {
    state: Mutex<ArenaState>,
    _values: std::marker::PhantomData<T>,
}

// SAFETY: the arena hands out raw pointers and owns only raw memory; the blocks are
// reachable only through its mutex. Values are moved in by `alloc`, so `T: Send` suffices.
unsafe impl<T: Send> Send for Arena<T> {}
// SAFETY: as above; `alloc` takes the mutex.
unsafe impl<T: Send> Sync for Arena<T> {}

impl<T> Default for Arena<T> {
    fn default() -> Self {
        Arena { state: Mutex::new(ArenaState::default()), _values: std::marker::PhantomData }
    }
}

impl<T> Arena<T> {
    const SIZE: usize = std::mem::size_of::<T>();
    const ALIGN: usize = std::mem::align_of::<T>();

    /// Moves `value` into the arena; the pointer stays valid until the arena is dropped.
    pub(crate) fn alloc(&self, value: T) -> NonNull<T> {
        const { assert!(Self::SIZE > 0 && Self::SIZE <= BLOCK_BYTES_MAX) };
        const { assert!(Self::ALIGN <= 4096) };
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let offset = state.used.next_multiple_of(Self::ALIGN);
        let fits = state.blocks.last().is_some_and(|b| offset + Self::SIZE <= b.layout.size());
        let (block, offset) = if fits {
            (state.blocks.last().expect("checked above"), offset)
        } else {
            // Shuttle's atomics make 256-way nodes bigger than the first block.
            let first = BLOCK_BYTES_MIN.max(Self::SIZE.next_power_of_two());
            let size =
                state.blocks.last().map_or(first, |b| (b.layout.size() * 2).min(BLOCK_BYTES_MAX));
            state.blocks.push(new_block(size));
            (state.blocks.last().expect("just pushed"), 0)
        };
        assert!(offset + Self::SIZE <= block.layout.size(), "arena bump past its block");
        // SAFETY: `offset + SIZE` is within the block (asserted), and `offset` is a multiple
        // of T's alignment in a block aligned at least to 4096 >= ALIGN.
        let ptr = unsafe { block.ptr.as_ptr().add(offset) }.cast::<T>();
        state.used = offset + Self::SIZE;
        drop(state);
        // SAFETY: `ptr` is in bounds, aligned, and handed out once (the bump moved past it).
        unsafe { ptr.write(value) };
        NonNull::new(ptr).expect("block pointers are not null")
    }
}

impl<T> Arena<T> {
    /// Bytes of the blocks the arena holds: what its values cost, the unused end of the
    /// last block included (for `Stats::memory_bytes`).
    pub(crate) fn reserved_bytes(&self) -> usize {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.blocks.iter().map(|b| b.layout.size()).sum()
    }
}

/// A block of `size` bytes: the largest ones are huge-page regions of their own
/// ([`crate::huge`]), the small first ones come from the C allocator.
fn new_block(size: usize) -> Block {
    let align = if size == BLOCK_BYTES_MAX { BLOCK_BYTES_MAX } else { 4096 };
    let layout = Layout::from_size_align(size, align).expect("block layouts are valid");
    let raw = if size == BLOCK_BYTES_MAX {
        huge::map(size).map_or(std::ptr::null_mut(), NonNull::as_ptr)
    } else {
        // SAFETY: the layout has a non-zero size.
        unsafe { alloc(layout) }
    };
    let Some(ptr) = NonNull::new(raw) else { handle_alloc_error(layout) };
    Block { ptr, layout }
}

impl<T> Drop for Arena<T> {
    /// Frees the blocks. The values in them are not dropped here: their owner drops them in
    /// place before (for inner nodes, [`crate::tree::Trie`]'s drop).
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for block in state.blocks.drain(..) {
            if block.layout.size() == BLOCK_BYTES_MAX {
                // SAFETY: mapped in `new_block` with this size, freed once (drained).
                unsafe { huge::unmap(block.ptr, BLOCK_BYTES_MAX) };
            } else {
                // SAFETY: allocated in `new_block` with this layout, freed once (drained).
                unsafe { dealloc(block.ptr.as_ptr(), block.layout) };
            }
        }
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn values_are_packed_aligned_and_stay_put_across_blocks() {
        let arena = Arena::<[u64; 18]>::default();
        let ptrs: Vec<NonNull<[u64; 18]>> = (0..20_000u64).map(|i| arena.alloc([i; 18])).collect();
        for (i, p) in ptrs.iter().enumerate() {
            assert_eq!(p.as_ptr() as usize % 8, 0);
            // SAFETY: the arena is alive and nothing else writes the values.
            assert_eq!(unsafe { p.as_ref() }[17], i as u64);
        }
        // Consecutive allocations in one block are adjacent.
        assert_eq!(ptrs[1].as_ptr() as usize - ptrs[0].as_ptr() as usize, 144);
        let state = arena.state.lock().unwrap();
        let sizes: Vec<usize> = state.blocks.iter().map(|b| b.layout.size()).collect();
        assert_eq!(sizes[0], BLOCK_BYTES_MIN);
        assert!(sizes.windows(2).all(|w| w[1] == (w[0] * 2).min(BLOCK_BYTES_MAX)), "{sizes:?}");
        assert!(sizes.iter().sum::<usize>() < 20_000 * 144 * 2, "{sizes:?}");
        drop(state);
        assert_eq!(arena.reserved_bytes(), sizes.iter().sum::<usize>());
    }
}
