//! Persistent-memory region (issue 3 item 8, for the FPTree engine).
//!
//! - [`PmemRegion`]: a byte-addressable region with `persist(range)` and `fence()`, the
//!   programming model of FPTree section 2.
//! - [`MmapRegion`]: over a memory-mapped file (CLWB / CLFLUSHOPT / CLFLUSH + `msync`).
//! - [`SimulatedRegion`]: a volatile image plus a durable image updated only by `persist`,
//!   with crash points and torn writes, so recovery is tested at every persist point
//!   ([`crash_test::for_each_persist_point`] runs the whole loop).
//! - [`PPtr`]: persistent pointers (file id + offset), FPTree section 2.
//! - [`PmemAllocator`]: an allocator whose interface writes the allocated block into a
//!   caller-owned persistent pointer, FPTree's leak-prevention rule; crash-consistent through
//!   a one-line redo micro-log.
//!
//! Byte layout: `docs/format/pmem.md`.

mod alloc;
pub mod crash_test;
mod layout;
mod mmap;
mod pptr;
#[cfg(target_os = "linux")]
mod prefault;
mod region;
mod simulated;

#[cfg(test)]
mod tests;

pub use alloc::{AllocatorStats, PmemAllocator};
pub use layout::{AllocLogRecord, LogOp, RegionHeader, RegionLayout};
pub use mmap::{FlushInstruction, MmapOptions, MmapRegion};
pub use pptr::PPtr;
pub use region::{
    CACHE_LINE_BYTES, LATENCY_NS_PER_LINE_MAX, PmemRegion, PmemStats, REGION_BYTES_MAX, WORD_BYTES,
    check_range,
};
pub use simulated::{CrashPoint, SimulatedOptions, SimulatedRegion};
