//! 2 MiB-aligned regions straight from the operating system, advised as transparent huge
//! pages (the paper's section 2 memory manager gets its memory in big chunks, not from
//! `malloc`).
//!
//! Why not `std::alloc` with 2 MiB alignment: glibc may serve such a request from memory
//! its heap already touched (freed by another part of the process), whose pages are
//! already 4 KiB pages; `MADV_HUGEPAGE` does not change pages already faulted in. Measured
//! in the contest bench: after the `mem` engine ran in the same process, only about half of
//! the slab's chunks were huge pages with `std::alloc`; a fresh `mmap` faults in huge pages.
//!
//! Under Miri and outside Linux, regions come from `std::alloc` (the advice is a hint
//! anyway).

use std::ptr::NonNull;

/// Size and alignment of one huge page on x86-64 and aarch64 Linux.
pub(crate) const HUGE_PAGE_BYTES: usize = 2 << 20;

/// A new region of `bytes` (a multiple of [`HUGE_PAGE_BYTES`]), aligned to
/// [`HUGE_PAGE_BYTES`] and advised as huge pages; `None` if the system has no memory left.
/// Its contents are unspecified. Free it with [`unmap`] and the same size.
pub(crate) fn map(bytes: usize) -> Option<NonNull<u8>> {
    assert!(bytes > 0 && bytes.is_multiple_of(HUGE_PAGE_BYTES), "{bytes} bytes");
    let start = map_aligned(bytes)?;
    advise_huge_pages(start, bytes);
    Some(start)
}

#[cfg(all(target_os = "linux", not(miri)))]
fn map_aligned(bytes: usize) -> Option<NonNull<u8>> {
    // Over-map by one huge page, then trim the unaligned head and the tail.
    let mapped = bytes + HUGE_PAGE_BYTES;
    // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches
    // no existing memory.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            mapped,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let base_addr = base as usize;
    let start_addr = base_addr.next_multiple_of(HUGE_PAGE_BYTES);
    let head = start_addr - base_addr;
    let tail = mapped - head - bytes;
    // SAFETY: both ranges lie inside the mapping just created and outside the region we
    // keep; unmapping a zero-length range is skipped. Failure would only leave address
    // space mapped, so the results are not needed for soundness.
    unsafe {
        if head > 0 {
            libc::munmap(base, head);
        }
        if tail > 0 {
            libc::munmap((start_addr + bytes) as *mut libc::c_void, tail);
        }
    }
    NonNull::new(start_addr as *mut u8)
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn map_aligned(bytes: usize) -> Option<NonNull<u8>> {
    // SAFETY: the layout has a non-zero size (asserted by `map`).
    NonNull::new(unsafe { std::alloc::alloc(layout(bytes)) })
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn layout(bytes: usize) -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(bytes, HUGE_PAGE_BYTES).expect("a valid layout")
}

/// Frees a region from [`map`].
///
/// # Safety
///
/// `start` came from [`map`] with `bytes`, is freed once, and nothing uses it any more.
pub(crate) unsafe fn unmap(start: NonNull<u8>, bytes: usize) {
    #[cfg(all(target_os = "linux", not(miri)))]
    // SAFETY: the caller passes a whole region from `map`; the result is ignored because a
    // failure only leaves the region mapped.
    unsafe {
        libc::munmap(start.as_ptr().cast(), bytes);
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    // SAFETY: allocated by `map_aligned` with this layout (caller's contract).
    unsafe {
        std::alloc::dealloc(start.as_ptr(), layout(bytes));
    }
}

/// Asks for transparent huge pages on a 2 MiB-aligned region (a hint: where THP is off, or
/// outside Linux, nothing changes).
pub(crate) fn advise_huge_pages(ptr: NonNull<u8>, size: usize) {
    #[cfg(all(target_os = "linux", not(miri)))]
    // SAFETY: madvise only changes how the range is backed; the region is ours, aligned
    // and `size` bytes long. Its result is ignored: the advice is an optimization.
    unsafe {
        libc::madvise(ptr.as_ptr().cast(), size, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    let _ = (ptr, size);
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn regions_are_aligned_writable_and_freed() {
        for pages in [1, 3] {
            let bytes = pages * HUGE_PAGE_BYTES;
            let start = map(bytes).unwrap();
            assert_eq!(start.as_ptr() as usize % HUGE_PAGE_BYTES, 0);
            // SAFETY: the region is ours and `bytes` long.
            unsafe {
                start.as_ptr().write(1);
                start.as_ptr().add(bytes - 1).write(2);
                assert_eq!(start.as_ptr().add(bytes - 1).read(), 2);
                unmap(start, bytes);
            }
        }
    }
}
