//! A hint to the CPU to start loading a cache line that will be read soon. A lookup that
//! probes many independent structures (fdtree's Bloom filters of its `L_0` runs and levels)
//! issues their loads first and then reads them, so their cache misses overlap instead of
//! adding up. Never changes what a read returns; elsewhere than x86_64 it does nothing.

/// Starts loading the cache line holding `ptr` into every cache level.
#[inline]
pub fn prefetch_read(ptr: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` only hints the cache hierarchy: it never faults, whatever the
    // address (an invalid one is dropped), and it reads or writes nothing the program sees.
    // SSE, which the instruction belongs to, is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Bytes of a cache line (the stride of [`prefetch_lines`]).
pub const CACHE_LINE_BYTES: usize = 64;

/// Starts loading the first `lines_max` cache lines of `bytes` (all of them if fewer): a
/// record about to be scanned whose next field's place depends on the one before, so that
/// its misses overlap instead of coming one after another.
#[inline]
pub fn prefetch_lines(bytes: &[u8], lines_max: usize) {
    for offset in (0..bytes.len()).step_by(CACHE_LINE_BYTES).take(lines_max) {
        prefetch_read(bytes.as_ptr().wrapping_add(offset));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn any_address_is_accepted() {
        let line = [7u8; 64];
        super::prefetch_read(line.as_ptr());
        super::prefetch_read(std::ptr::null());
        super::prefetch_read(usize::MAX as *const u8);
        super::prefetch_lines(&line, 4);
        super::prefetch_lines(&[], 4);
        assert_eq!(line[0], 7);
    }
}
