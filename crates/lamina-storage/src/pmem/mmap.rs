//! The `mmap` backend: a file mapped shared into memory, as FPTree section 2 assumes (an
//! SCM-aware file system granting direct access with `mmap`). `persist` writes the range's
//! cache lines back with the best instruction the CPU has (CLWB, else CLFLUSHOPT, else
//! CLFLUSH), fences (SFENCE), and, unless disabled, `msync`s the range so the data also
//! reaches the file on an ordinary (non-DAX) file system.
//!
//! The region assumes it is the file's only user while mapped (another process writing the
//! file would race with our stores).
//!
//! The only `unsafe` of the persistent-memory code lives here: viewing the mapping as words
//! and issuing the cache-line write-back instructions.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use lamina_core::{Error, Result};
use memmap2::MmapRaw;

#[cfg(target_os = "linux")]
use super::prefault::Prefaulter;

use super::region::{
    CACHE_LINE_BYTES, PmemRegion, PmemStats, StatCounters, WORD_BYTES, check_latency, check_range,
    check_region_len, emulate_latency, line_span,
};

/// The cache-line write-back instruction in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushInstruction {
    /// CLWB: writes the line back and may keep it cached (best).
    Clwb,
    /// CLFLUSHOPT: writes back and evicts, weakly ordered (needs the trailing SFENCE).
    Clflushopt,
    /// CLFLUSH: writes back and evicts, ordered with other stores.
    Clflush,
    /// Not x86-64: no user-level write-back; durability rests on `msync` alone.
    None,
}

impl FlushInstruction {
    /// The best instruction this CPU supports.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            // `is_x86_feature_detected!` knows neither "clwb" nor "clflushopt" on stable Rust,
            // so read CPUID leaf 7 directly: EBX bit 24 is CLWB, bit 23 CLFLUSHOPT. CLFLUSH is
            // part of SSE2, which every x86-64 CPU has.
            let leaf7 = core::arch::x86_64::__cpuid_count(7, 0);
            if leaf7.ebx & (1 << 24) != 0 {
                return FlushInstruction::Clwb;
            }
            if leaf7.ebx & (1 << 23) != 0 {
                return FlushInstruction::Clflushopt;
            }
            FlushInstruction::Clflush
        }
        #[cfg(not(target_arch = "x86_64"))]
        FlushInstruction::None
    }
}

/// Options of an [`MmapRegion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmapOptions {
    /// `msync` every persisted range (needed for durability on a page-cache file system; a
    /// DAX mount makes cache-line write-back alone durable). An `msync` costs milliseconds on
    /// an ordinary disk (`docs/results/pmem.md`); without it, call [`MmapRegion::sync_all`]
    /// at the engine's durability points.
    pub msync: bool,
    /// Emulated write-back latency per persisted cache line (0 = none).
    pub latency_ns_per_line: u64,
    /// Write-back instruction; `None` means detect the best one. Forcing an instruction the
    /// CPU lacks makes `persist` fault (SIGILL): only force one `detect` reported or CLFLUSH.
    pub flush: Option<FlushInstruction>,
}

impl Default for MmapOptions {
    fn default() -> Self {
        MmapOptions { msync: true, latency_ns_per_line: 0, flush: None }
    }
}

/// How a region's file came to be mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mapping {
    /// A new, sparse file: every page past what has been persisted is a hole.
    Created,
    /// An existing file, shared and writable.
    Opened,
    /// An existing file, copy on write (`MmapRegion::open_private`).
    Private,
}

/// A persistent region over a memory-mapped file.
#[derive(Debug)]
pub struct MmapRegion {
    // Shared with the prefault thread, which keeps it mapped until it has stopped.
    map: Arc<MmapRaw>,
    // Faults pages in ahead of the writers (created regions on Linux; `None` otherwise).
    #[cfg(target_os = "linux")]
    prefault: Option<Prefaulter>,
    path: PathBuf,
    options: MmapOptions,
    flush: FlushInstruction,
    stats: StatCounters,
    // Keeps the descriptor open for the mapping's lifetime (not required by mmap, but it
    // makes the region's ownership of the file explicit).
    _file: File,
}

impl MmapRegion {
    /// Creates `path` (which must not exist) as a zeroed region of `len_bytes` and maps it.
    pub fn create(path: &Path, len_bytes: u64, options: MmapOptions) -> Result<Self> {
        check_region_len(len_bytes)?;
        check_latency(options.latency_ns_per_line)?;
        let context = || format!("creating persistent region {}", path.display());
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(context(), e))?;
        file.set_len(len_bytes).map_err(|e| Error::io(context(), e))?;
        file.sync_all().map_err(|e| Error::io(context(), e))?;
        Self::map_with(file, path, options, Mapping::Created)
    }

    /// Maps the existing region file `path` privately (copy on write, `MAP_PRIVATE`) from a
    /// read-only handle: the region reads the file and takes writes, but nothing written
    /// ever reaches the file (`lamina verify` recovers an image this way without changing
    /// it). Persists and `sync_all` do nothing durable here.
    pub fn open_private(path: &Path, options: MmapOptions) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening persistent region {}", path.display()), e))?;
        let options = MmapOptions { msync: false, ..options };
        Self::map_with(file, path, options, Mapping::Private)
    }

    /// Maps the existing region file `path`.
    pub fn open(path: &Path, options: MmapOptions) -> Result<Self> {
        let file =
            OpenOptions::new().read(true).write(true).open(path).map_err(|e| {
                Error::io(format!("opening persistent region {}", path.display()), e)
            })?;
        Self::map_with(file, path, options, Mapping::Opened)
    }

    fn map_with(file: File, path: &Path, options: MmapOptions, mapping: Mapping) -> Result<Self> {
        check_latency(options.latency_ns_per_line)?;
        let context = || format!("mapping persistent region {}", path.display());
        let len_bytes = file.metadata().map_err(|e| Error::io(context(), e))?.len();
        if check_region_len(len_bytes).is_err() {
            return Err(Error::Incompatible {
                reason: format!(
                    "{} is {len_bytes} bytes, not a persistent region (a non-zero multiple of \
                     {CACHE_LINE_BYTES} bytes)",
                    path.display()
                ),
            });
        }
        let map = if mapping == Mapping::Private {
            // SAFETY: a private mapping is never written back, so other users of the file
            // cannot observe this process's writes; what this process reads may change if
            // another process writes the file meanwhile, which `lamina verify` rules out by
            // holding the store's lock.
            let copy = unsafe { memmap2::MmapOptions::new().map_copy(&file) };
            MmapRaw::from(copy.map_err(|e| Error::io(context(), e))?)
        } else {
            MmapRaw::map_raw(&file).map_err(|e| Error::io(context(), e))?
        };
        assert_eq!(map.len() as u64, len_bytes, "mapping covers the file");
        assert_eq!(map.as_ptr() as usize % CACHE_LINE_BYTES as usize, 0, "page-aligned map");
        let map = Arc::new(map);
        // Only a region this process created is known to be holes past what it persists; an
        // opened region's pages may hold data, which a write fault would dirty and write again
        // (`prefault.rs`), and a private mapping is `lamina verify`'s read of an image.
        #[cfg(target_os = "linux")]
        let prefault = match mapping {
            Mapping::Created => Prefaulter::start(Arc::clone(&map)),
            Mapping::Opened | Mapping::Private => None,
        };
        Ok(MmapRegion {
            map,
            #[cfg(target_os = "linux")]
            prefault,
            path: path.to_path_buf(),
            options,
            flush: options.flush.unwrap_or_else(FlushInstruction::detect),
            stats: StatCounters::default(),
            _file: file,
        })
    }

    /// The mapped file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `msync`s the whole mapping: with `msync: false`, the point where everything persisted
    /// so far becomes durable on a page-cache file system (one `msync` costs milliseconds on
    /// an ordinary disk, so engines may prefer this at their own durability points over an
    /// `msync` per persist).
    pub fn sync_all(&self) -> Result<()> {
        self.map.flush().map_err(|e| Error::io(format!("msync of {}", self.path.display()), e))
    }

    /// Bytes faulted in ahead of the writers by the prefault thread (`pmem/prefault.rs`).
    pub fn prefaulted_bytes(&self) -> u64 {
        #[cfg(target_os = "linux")]
        if let Some(prefault) = &self.prefault {
            return prefault.populated_bytes();
        }
        0
    }

    /// The write-back instruction in use.
    pub fn flush_instruction(&self) -> FlushInstruction {
        self.flush
    }

    /// Writes back the cache lines `[first, end)` of the mapping.
    fn write_back_lines(&self, first: u64, end: u64) {
        let base = self.map.as_mut_ptr();
        for line in first..end {
            // SAFETY: `line * CACHE_LINE_BYTES` is below the mapping's length (the caller
            // checked the range), so the pointer stays inside the mapped allocation.
            let p = unsafe { base.add((line * CACHE_LINE_BYTES) as usize) };
            write_back_line(self.flush, p);
        }
        fence_stores();
    }
}

/// Writes back the cache line holding `p` with `instruction`.
#[cfg(target_arch = "x86_64")]
fn write_back_line(instruction: FlushInstruction, p: *mut u8) {
    use std::arch::asm;
    // The three instructions below only write a cache line of mapped, valid memory (`p` is
    // inside the mapping, checked by the caller) back to memory; they do not change its
    // content, so no Rust reference or atomic is invalidated. CLWB and CLFLUSHOPT are only
    // selected when CPUID reports them, or when the caller forced one through
    // `MmapOptions::flush` (documented as the caller's responsibility).
    match instruction {
        // SAFETY: see above; CLWB is supported (detected or asserted by the caller).
        FlushInstruction::Clwb => unsafe {
            asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags));
        },
        // SAFETY: see above; CLFLUSHOPT is supported (detected or asserted by the caller).
        FlushInstruction::Clflushopt => unsafe {
            asm!("clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags));
        },
        // SAFETY: see above; CLFLUSH is part of SSE2, in every x86-64 CPU.
        FlushInstruction::Clflush => unsafe { core::arch::x86_64::_mm_clflush(p) },
        FlushInstruction::None => {}
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn write_back_line(_instruction: FlushInstruction, _p: *mut u8) {}

/// SFENCE: orders the write-backs (CLWB/CLFLUSHOPT are weakly ordered) before later stores.
fn fence_stores() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SFENCE has no memory operands and SSE is part of the x86-64 baseline.
    unsafe {
        core::arch::x86_64::_mm_sfence();
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

impl PmemRegion for MmapRegion {
    // Page alignment of the mapping is asserted in `map`, so the cast below is aligned.
    #[allow(clippy::cast_ptr_alignment)]
    fn words(&self) -> &[AtomicU64] {
        let len = self.map.len() / WORD_BYTES as usize;
        // SAFETY: the mapping is page-aligned (asserted at map time), so suitably aligned for
        // AtomicU64, and `len * 8` bytes long; it stays mapped as long as `self` lives, which
        // bounds the returned slice's lifetime. AtomicU64 has the size of u64 and allows
        // shared mutation, and this module never creates `&mut` references into the mapping,
        // so all access goes through these atomics. (Another process writing the file is
        // excluded by the module's contract.)
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().cast::<AtomicU64>(), len) }
    }

    fn persist(&self, offset: u64, len: u64) -> Result<()> {
        check_range(self.len_bytes(), offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let (first, end) = line_span(offset, len);
        self.write_back_lines(first, end);
        if self.options.msync {
            let from = first * CACHE_LINE_BYTES;
            let bytes = (end - first) * CACHE_LINE_BYTES;
            // memmap2 rounds the range out to whole pages for msync(MS_SYNC).
            self.map.flush_range(from as usize, bytes as usize).map_err(|e| {
                Error::io(format!("msync of {} at {from}+{bytes}", self.path.display()), e)
            })?;
        }
        self.stats.persisted(end - first);
        #[cfg(target_os = "linux")]
        if let Some(prefault) = &self.prefault {
            prefault.note_persisted(offset, len);
        }
        emulate_latency(end - first, self.options.latency_ns_per_line);
        Ok(())
    }

    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    fn fence(&self) {
        // MFENCE-like full ordering of earlier stores and write-backs before later accesses.
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
        fence_stores();
        self.stats.fenced();
    }

    fn stats(&self) -> PmemStats {
        self.stats.snapshot()
    }
}
