//! The `simulated` backend: a volatile image that code reads and writes, and a durable image
//! that only [`PmemRegion::persist`] updates, one whole cache line at a time. [`crash`] yields
//! a new region holding the durable image: everything not persisted is gone.
//!
//! Crash points: persist calls are numbered from 1. With a [`CrashPoint`] at persist `k`, the
//! persists before `k` are applied, persist `k` is not applied (or, with a tear seed, only a
//! seeded subset of its 8-byte words is: the write that was in flight when power failed), and
//! no later persist is applied. The code under test keeps running on the volatile image and
//! then the test calls [`crash`] and recovers; doing this for every `k` up to the count of a
//! crash-free run tests recovery at every persist point.
//!
//! [`crash`]: SimulatedRegion::crash

use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::Result;
use parking_lot::Mutex;

use super::region::{
    CACHE_LINE_BYTES, PmemRegion, PmemStats, StatCounters, WORD_BYTES, check_latency, check_range,
    check_region_len, emulate_latency, line_span,
};

/// Where a simulated power failure happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashPoint {
    /// The persist call (numbered from 1) during which power fails.
    pub persist_no: u64,
    /// `None`: that persist is lost entirely. `Some(seed)`: a seeded subset of its 8-byte
    /// words reaches the durable image (a torn write), the rest is lost.
    pub tear_seed: Option<u64>,
}

/// Options of a [`SimulatedRegion`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimulatedOptions {
    /// Emulated write-back latency per persisted cache line (0 = none).
    pub latency_ns_per_line: u64,
}

/// A region in memory with a separate durable image (see the module doc).
#[derive(Debug)]
pub struct SimulatedRegion {
    volatile: Box<[AtomicU64]>,
    durable: Mutex<Durable>,
    options: SimulatedOptions,
    stats: StatCounters,
}

#[derive(Debug)]
struct Durable {
    image: Vec<u64>,
    /// Persist calls so far (non-empty ranges).
    persist_count: u64,
    crash_point: Option<CrashPoint>,
}

impl Durable {
    /// Whether the crash point has been reached: the durable image no longer changes.
    fn frozen(&self) -> bool {
        self.crash_point.is_some_and(|p| self.persist_count >= p.persist_no)
    }
}

impl SimulatedRegion {
    /// A zeroed region of `len_bytes` (a non-zero multiple of 64).
    pub fn new(len_bytes: u64, options: SimulatedOptions) -> Result<Self> {
        check_region_len(len_bytes)?;
        check_latency(options.latency_ns_per_line)?;
        Ok(Self::from_image(vec![0; (len_bytes / WORD_BYTES) as usize], options))
    }

    fn from_image(image: Vec<u64>, options: SimulatedOptions) -> Self {
        let volatile: Box<[AtomicU64]> = image.iter().map(|&w| AtomicU64::new(w)).collect();
        SimulatedRegion {
            volatile,
            durable: Mutex::new(Durable { image, persist_count: 0, crash_point: None }),
            options,
            stats: StatCounters::default(),
        }
    }

    /// Arms (or with `None` disarms) a crash point. Persist numbers count from the region's
    /// creation, so arm it before running the code under test.
    pub fn set_crash_point(&self, point: Option<CrashPoint>) {
        self.durable.lock().crash_point = point;
    }

    /// Persist calls so far.
    pub fn persist_count(&self) -> u64 {
        self.durable.lock().persist_count
    }

    /// Whether the armed crash point has been reached.
    pub fn crash_point_reached(&self) -> bool {
        self.durable.lock().frozen()
    }

    /// A new region whose volatile and durable images are this region's durable image, as a
    /// machine would find it after a power failure now. This region is unchanged.
    pub fn crash(&self) -> SimulatedRegion {
        let image = self.durable.lock().image.clone();
        Self::from_image(image, self.options)
    }

    /// The durable content of `[offset, offset + buf.len())` (for tests).
    pub fn read_durable(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        check_range(self.len_bytes(), offset, buf.len() as u64)?;
        let durable = self.durable.lock();
        for (i, byte) in buf.iter_mut().enumerate() {
            let at = offset + i as u64;
            *byte =
                durable.image[(at / WORD_BYTES) as usize].to_le_bytes()[(at % WORD_BYTES) as usize];
        }
        Ok(())
    }
}

/// SplitMix64: a tiny seeded generator for tearing decisions (no dependency needed).
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl PmemRegion for SimulatedRegion {
    fn words(&self) -> &[AtomicU64] {
        &self.volatile
    }

    fn persist(&self, offset: u64, len: u64) -> Result<()> {
        check_range(self.len_bytes(), offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let (first_line, end_line) = line_span(offset, len);
        let words_per_line = (CACHE_LINE_BYTES / WORD_BYTES) as usize;
        let words = first_line as usize * words_per_line..end_line as usize * words_per_line;
        {
            let mut durable = self.durable.lock();
            let was_frozen = durable.frozen();
            durable.persist_count += 1;
            let persist_no = durable.persist_count;
            if !was_frozen {
                let tear = match durable.crash_point {
                    Some(p) if p.persist_no == persist_no => Some(p.tear_seed),
                    _ => None,
                };
                for w in words {
                    let apply = match tear {
                        None => true,
                        Some(None) => false,
                        Some(Some(seed)) => splitmix64(seed ^ splitmix64(w as u64)) & 1 == 1,
                    };
                    if apply {
                        durable.image[w] = self.volatile[w].load(Ordering::Acquire);
                    }
                }
            }
        }
        let lines = end_line - first_line;
        self.stats.persisted(lines);
        emulate_latency(lines, self.options.latency_ns_per_line);
        Ok(())
    }

    fn path(&self) -> std::path::PathBuf {
        std::path::PathBuf::from("<simulated persistent region>")
    }

    fn fence(&self) {
        // Persist applies to the durable image synchronously, so ordering already holds; the
        // fence is counted so tests can check that code fences where it should.
        self.stats.fenced();
    }

    fn stats(&self) -> PmemStats {
        self.stats.snapshot()
    }
}
