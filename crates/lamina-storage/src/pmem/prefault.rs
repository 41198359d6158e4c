//! Faulting a file-backed region's pages in ahead of its writers, off their path.
//!
//! [`super::MmapRegion`] maps a sparse file. The first touch of a page of a hole faults it in,
//! and with the default advice the kernel reads ahead around it: this kernel builds 2 MiB
//! folios and zero-fills them inside that one fault (a profile of 1M fptree inserts: one
//! fault of about 25 ms, every ~100,000 inserts, `filemap_fault -> page_cache_ra_order ->
//! ext4_mpage_readpages -> memset`). Advising `MADV_RANDOM` removes the stall but also the
//! huge folios, which lookups need (TLB reach: 2.5x fewer lookups/s at 10M records without
//! them; `docs/results/fptree.md`). So the faults stay as they are, and a thread takes them
//! before the writers arrive.
//!
//! Invariants:
//! - The thread only ever calls `madvise(MADV_POPULATE_WRITE)`, which maps pages writable
//!   without changing a byte of their content, so it cannot race with the writers' stores.
//! - It populates only at or above the *frontier* (the end of the highest range persisted,
//!   in [`STEP_BYTES`] units), and at most [`AHEAD_BYTES`] past it.
//! - It runs only for a region the process created: there everything past the frontier is
//!   a hole. In an opened region the pages above the first persists hold data, and a write
//!   fault dirties a page, so populating them would write the data to disk again (up to the
//!   whole region as the frontier climbs through it). Opened regions therefore keep the
//!   writers' own faults; populating only holes (`SEEK_HOLE`) would lift that (not built).
//! - Populating is a hint: the first error (an older kernel without `MADV_POPULATE_WRITE`,
//!   `EINVAL`) stops the thread, and the writers fault pages in themselves as before.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

use memmap2::MmapRaw;

/// Granularity of the frontier and of one `madvise` call: a huge folio.
pub(crate) const STEP_BYTES: u64 = 2 << 20;
/// How far past the frontier pages are faulted in. At 30 MB/s of new records (fptree at
/// 200,000 inserts/s) this is about a second of writing.
pub(crate) const AHEAD_BYTES: u64 = 32 << 20;
/// Longest sleep between looks at the frontier (writers also wake the thread).
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// The frontier the writers publish and the thread reads.
#[derive(Debug)]
struct Shared {
    /// Highest persisted end, in steps (0 before the first persist).
    frontier_steps: AtomicU64,
    /// Set when the region is dropped.
    stop: AtomicBool,
    /// Bytes populated so far past the frontier (for tests and stats).
    populated_bytes: AtomicU64,
}

/// The background thread and its frontier. Dropping it stops and joins the thread.
#[derive(Debug)]
pub(crate) struct Prefaulter {
    shared: Arc<Shared>,
    thread: Thread,
    handle: Option<JoinHandle<()>>,
}

impl Prefaulter {
    /// Starts the thread over `map` (a shared, writable mapping). `None` if no thread could
    /// be started (the writers then fault pages in themselves).
    pub(crate) fn start(map: Arc<MmapRaw>) -> Option<Self> {
        let shared = Arc::new(Shared {
            frontier_steps: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            populated_bytes: AtomicU64::new(0),
        });
        let thread_shared = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("pmem-prefault".into())
            .spawn(move || run(&map, &thread_shared))
            .ok()?;
        Some(Prefaulter { shared, thread: handle.thread().clone(), handle: Some(handle) })
    }

    /// Notes that `[offset, offset + len)` was persisted: wakes the thread when the
    /// frontier moves into a new step. Cheap when it does not (one relaxed load).
    pub(crate) fn note_persisted(&self, offset: u64, len: u64) {
        let steps = (offset + len).div_ceil(STEP_BYTES);
        if steps > self.shared.frontier_steps.load(Ordering::Relaxed)
            && self.shared.frontier_steps.fetch_max(steps, Ordering::Relaxed) < steps
        {
            self.thread.unpark();
        }
    }

    /// Bytes the thread has populated.
    pub(crate) fn populated_bytes(&self) -> u64 {
        self.shared.populated_bytes.load(Ordering::Relaxed)
    }
}

impl Drop for Prefaulter {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.thread.unpark();
        if let Some(handle) = self.handle.take() {
            // The thread only calls madvise; a panic there is a bug, reported where it ran.
            let _ = handle.join();
        }
    }
}

/// The thread: keeps `[frontier, frontier + AHEAD_BYTES)` populated.
fn run(map: &MmapRaw, shared: &Shared) {
    let len = map.len() as u64;
    // Everything below `populated` (and at or above the frontier it started from) is done.
    let mut populated = 0u64;
    while !shared.stop.load(Ordering::Acquire) {
        let frontier = shared.frontier_steps.load(Ordering::Relaxed).saturating_mul(STEP_BYTES);
        let from = populated.max(frontier);
        let target = frontier.saturating_add(AHEAD_BYTES).min(len);
        if frontier == 0 || from >= target {
            std::thread::park_timeout(IDLE_WAIT);
            continue;
        }
        let bytes = STEP_BYTES.min(target - from);
        let (Ok(offset), Ok(count)) = (usize::try_from(from), usize::try_from(bytes)) else {
            return;
        };
        if map.advise_range(memmap2::Advice::PopulateWrite, offset, count).is_err() {
            tracing::debug!(offset = from, "MADV_POPULATE_WRITE refused: prefaulting stops");
            return;
        }
        populated = from + bytes;
        shared.populated_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}
