//! The [`PmemRegion`] trait: a byte-addressable persistent region with explicit write-back
//! (`persist`) and ordering (`fence`), as FPTree section 2 assumes ("a function *Persist* that
//! implements the most efficient way of making data durable").
//!
//! A region is a slice of 8-byte words accessed through atomics, which gives both backends the
//! same safe access code and makes every aligned 8-byte store p-atomic (FPTree section 2,
//! "Partial writes": only 8-byte writes are assumed p-atomic). Byte ranges that do not cover
//! whole words are merged into their words with a compare-and-swap, so concurrent writers of
//! neighbouring bytes never undo each other.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lamina_core::{Error, Result};

/// Write-back granularity: persists cover whole cache lines.
pub const CACHE_LINE_BYTES: u64 = 64;
/// The p-atomic write size.
pub const WORD_BYTES: u64 = 8;
/// Largest region accepted (a limit on everything; far above what tests and benches map).
pub const REGION_BYTES_MAX: u64 = 1 << 40;
/// Largest emulated latency per persisted line.
pub const LATENCY_NS_PER_LINE_MAX: u64 = 1_000_000;

/// Counters of a region since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PmemStats {
    /// `persist` calls with a non-empty range.
    pub persists: u64,
    /// Cache lines written back by them.
    pub lines_persisted: u64,
    /// `fence` calls.
    pub fences: u64,
}

/// A byte-addressable persistent region. Offsets are bytes from the region's start.
pub trait PmemRegion: Send + Sync + fmt::Debug {
    /// The region's content as 8-byte little-endian words: what code reads and writes.
    fn words(&self) -> &[AtomicU64];

    /// Makes the bytes `[offset, offset + len)` durable: every cache line overlapping them is
    /// written back (so neighbouring bytes in those lines become durable too). Returns once
    /// they are durable; a range outside the region is refused.
    fn persist(&self, offset: u64, len: u64) -> Result<()>;

    /// Orders every store and persist issued before it before every one issued after it.
    fn fence(&self);

    /// Counters since the region was opened.
    fn stats(&self) -> PmemStats;

    /// What to call the region in error messages (its file, for a mapped region).
    fn path(&self) -> PathBuf {
        PathBuf::from("<persistent region>")
    }

    /// Size in bytes (a multiple of [`CACHE_LINE_BYTES`]).
    fn len_bytes(&self) -> u64 {
        self.words().len() as u64 * WORD_BYTES
    }

    /// Copies `buf.len()` bytes at `offset` into `buf`.
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        check_range(self.len_bytes(), offset, buf.len() as u64)?;
        let words = self.words();
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let in_word = (at % WORD_BYTES) as usize;
            let n = (WORD_BYTES as usize - in_word).min(buf.len() - done);
            let word = words[(at / WORD_BYTES) as usize].load(Ordering::Acquire).to_le_bytes();
            buf[done..done + n].copy_from_slice(&word[in_word..in_word + n]);
            done += n;
        }
        Ok(())
    }

    /// Writes `data` at `offset` (not yet durable: see [`PmemRegion::persist`]).
    fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        check_range(self.len_bytes(), offset, data.len() as u64)?;
        let words = self.words();
        let mut done = 0usize;
        while done < data.len() {
            let at = offset + done as u64;
            let in_word = (at % WORD_BYTES) as usize;
            let n = (WORD_BYTES as usize - in_word).min(data.len() - done);
            let word = &words[(at / WORD_BYTES) as usize];
            if n == WORD_BYTES as usize {
                let bytes: [u8; 8] = data[done..done + 8].try_into().expect("8 bytes");
                word.store(u64::from_le_bytes(bytes), Ordering::Release);
            } else {
                let part = &data[done..done + n];
                let _ = word.fetch_update(Ordering::AcqRel, Ordering::Acquire, |old| {
                    let mut bytes = old.to_le_bytes();
                    bytes[in_word..in_word + n].copy_from_slice(part);
                    Some(u64::from_le_bytes(bytes))
                });
            }
            done += n;
        }
        Ok(())
    }

    /// The aligned 8-byte word at `offset` (a p-atomic read).
    fn load_u64(&self, offset: u64) -> Result<u64> {
        Ok(self.words()[word_index(self.len_bytes(), offset)?].load(Ordering::Acquire))
    }

    /// Stores the aligned 8-byte word at `offset` (a p-atomic write; not yet durable).
    fn store_u64(&self, offset: u64, value: u64) -> Result<()> {
        self.words()[word_index(self.len_bytes(), offset)?].store(value, Ordering::Release);
        Ok(())
    }

    /// Writes `data` at `offset`, persists it and fences.
    fn write_persist(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.write(offset, data)?;
        self.persist(offset, data.len() as u64)?;
        self.fence();
        Ok(())
    }
}

/// Refuses a range that does not lie within a region of `len_bytes`.
pub fn check_range(len_bytes: u64, offset: u64, len: u64) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= len_bytes => Ok(()),
        _ => Err(Error::option(
            "offset",
            format!("range {offset} + {len} bytes is outside the region of {len_bytes} bytes"),
        )),
    }
}

/// Index of the aligned word at `offset`.
fn word_index(len_bytes: u64, offset: u64) -> Result<usize> {
    if !offset.is_multiple_of(WORD_BYTES) {
        return Err(Error::option("offset", format!("{offset} is not 8-byte aligned")));
    }
    check_range(len_bytes, offset, WORD_BYTES)?;
    Ok((offset / WORD_BYTES) as usize)
}

/// The cache lines `[first, end)` overlapping `[offset, offset + len)`; `len` > 0.
pub(crate) fn line_span(offset: u64, len: u64) -> (u64, u64) {
    debug_assert!(len > 0);
    (offset / CACHE_LINE_BYTES, (offset + len).div_ceil(CACHE_LINE_BYTES))
}

/// Checks a region size: non-zero, a multiple of the cache line, at most the maximum.
pub(crate) fn check_region_len(len_bytes: u64) -> Result<()> {
    if len_bytes == 0 || !len_bytes.is_multiple_of(CACHE_LINE_BYTES) || len_bytes > REGION_BYTES_MAX
    {
        return Err(Error::option(
            "len_bytes",
            format!(
                "{len_bytes} is not a non-zero multiple of {CACHE_LINE_BYTES} up to {REGION_BYTES_MAX}"
            ),
        ));
    }
    Ok(())
}

/// Checks an emulated latency setting.
pub(crate) fn check_latency(latency_ns_per_line: u64) -> Result<()> {
    if latency_ns_per_line > LATENCY_NS_PER_LINE_MAX {
        return Err(Error::option(
            "latency_ns_per_line",
            format!("{latency_ns_per_line} is over the maximum of {LATENCY_NS_PER_LINE_MAX}"),
        ));
    }
    Ok(())
}

/// Spins for `lines * latency_ns_per_line` to emulate slower SCM. FPTree section 6.1 varies
/// SCM latency (160 to 650 ns) with special hardware; this approximates only the write-back
/// side of it, by stalling after each persist.
pub(crate) fn emulate_latency(lines: u64, latency_ns_per_line: u64) {
    if latency_ns_per_line == 0 {
        return;
    }
    let wait = Duration::from_nanos(lines.saturating_mul(latency_ns_per_line));
    let start = Instant::now();
    while start.elapsed() < wait {
        std::hint::spin_loop();
    }
}

/// Lock-free counters behind [`PmemStats`].
#[derive(Debug, Default)]
pub(crate) struct StatCounters {
    persists: AtomicU64,
    lines: AtomicU64,
    fences: AtomicU64,
}

impl StatCounters {
    pub(crate) fn persisted(&self, lines: u64) {
        self.persists.fetch_add(1, Ordering::Relaxed);
        self.lines.fetch_add(lines, Ordering::Relaxed);
    }

    pub(crate) fn fenced(&self) {
        self.fences.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> PmemStats {
        PmemStats {
            persists: self.persists.load(Ordering::Relaxed),
            lines_persisted: self.lines.load(Ordering::Relaxed),
            fences: self.fences.load(Ordering::Relaxed),
        }
    }
}
