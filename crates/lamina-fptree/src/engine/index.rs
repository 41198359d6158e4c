//! [`FpTreeEngine`]: `OrderedIndex` over an [`FpTree`].
//!
//! Concurrency: single-key operations run concurrently under the read side of a gate; a
//! write batch takes the write side, so readers see all of it or none. `put`, `delete` and
//! `compare_and_swap` also take the key's stripe lock, so a compare-and-swap's read and
//! write are atomic with respect to other writers of that key. Durability: every write is
//! persisted before it returns (the FPTree's persists), so `Sync` holds whenever the region's
//! persists are durable (a simulated region; a file mapped with `msync` per persist).

use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use lamina_core::limits::{check_cas, check_key, check_scan_limit, check_value};
use lamina_core::{
    BatchOp, CasOutcome, Durability, Entry, Error, KeyRange, OpenIntent, OrderedIndex, Result,
    Stats, WriteBatch,
};
use lamina_storage::pmem::{
    MmapOptions, MmapRegion, PPtr, PmemAllocator, PmemRegion, SimulatedRegion,
};
use parking_lot::{Mutex, RwLock};

use super::batch_log::{
    BATCH_COMMITTED, BATCH_HEADER_BYTES, decode_batch, encode_batch, encoded_len,
};
use super::batch_space::batch_chunks_max;
use crate::fingerprint::fingerprint;
use crate::inner::{InnerIndex, OlcInner};
use crate::layout::{BATCH_LOG_PPTR, FpTreeConfig};
use crate::tree::FpTree;

/// The default region size (8 GiB, sparse): see `FpTreeEngineOptions::region_bytes`.
pub const REGION_BYTES_DEFAULT: u64 = 8 << 30;
/// The first bytes of a formatted region (`lamina_storage::pmem`'s header magic).
const REGION_MAGIC: [u8; 8] = *b"LAMPMEM\0";
/// Stripes of the per-key writer locks.
const KEY_STRIPES: usize = 64;
/// The persistent file id the engine formats its region with.
const ENGINE_FILE_ID: u64 = 1;

/// A region the engine can make durable as a whole (`OrderedIndex::sync`).
pub trait SyncRegion: PmemRegion {
    /// Makes everything persisted so far durable.
    fn sync_all(&self) -> Result<()>;
}

impl SyncRegion for MmapRegion {
    fn sync_all(&self) -> Result<()> {
        MmapRegion::sync_all(self)
    }
}

impl SyncRegion for SimulatedRegion {
    fn sync_all(&self) -> Result<()> {
        Ok(()) // every persist already reached the durable image
    }
}

/// Options of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FpTreeEngineOptions {
    /// Size of the region file created for a new store (a sparse file; default 8 GiB, which
    /// holds at least 10 million records of an 8-byte key and a 128-byte value).
    pub region_bytes: u64,
    /// Leaf allocation (fixed at creation).
    pub config: FpTreeConfig,
    /// `Sync` and `Buffered` map the region with an `msync` per persist (durable on return on
    /// a page-cache file system); `None` syncs only at `sync` and `close`.
    pub durability: Durability,
    /// Emulated write-back latency per persisted line (the region's knob).
    pub latency_ns_per_line: u64,
    /// Emulated latency per persistent-memory read miss (`FpTree::set_read_latency_ns`).
    pub read_latency_ns: u64,
    /// Whether the store must already exist (a missing or blank region is then `Corruption`).
    pub intent: OpenIntent,
    /// Map an existing region privately (copy on write): recovery and writes stay in memory
    /// and the file is never changed (`lamina verify`).
    pub private_image: bool,
}

impl Default for FpTreeEngineOptions {
    fn default() -> Self {
        FpTreeEngineOptions {
            region_bytes: REGION_BYTES_DEFAULT,
            config: FpTreeConfig::default(),
            durability: Durability::Sync,
            latency_ns_per_line: 0,
            read_latency_ns: 0,
            intent: OpenIntent::CreateIfMissing,
            private_image: false,
        }
    }
}

/// The `fptree` engine over a region `R` with inner nodes `I`.
#[derive(Debug)]
pub struct FpTreeEngine<R: SyncRegion + ?Sized = MmapRegion, I: InnerIndex = OlcInner> {
    tree: FpTree<R, I>,
    gate: RwLock<()>,
    stripes: Vec<Mutex<()>>,
    closed: AtomicBool,
    /// Set when a batch failed half-applied: the store must be reopened (recovery redoes it).
    poisoned: AtomicBool,
    /// Key and value bytes written through the API since open.
    user_bytes_written: AtomicU64,
}

impl<I: InnerIndex> FpTreeEngine<MmapRegion, I> {
    /// Opens the store in the region file `path`, creating it if it does not exist.
    pub fn open_file(path: &Path, options: &FpTreeEngineOptions) -> Result<Self> {
        options.durability.validate()?;
        let mmap = MmapOptions {
            msync: !matches!(options.durability, Durability::None),
            latency_ns_per_line: options.latency_ns_per_line,
            flush: None,
        };
        let damaged = |e| existing_store_damaged(e, path, options.intent);
        if path.exists() && options.intent.must_exist() {
            // A store existed: a region file cut to a size no region has is damage.
            let len = std::fs::metadata(path)
                .map_err(|e| Error::io(path.display().to_string(), e))?
                .len();
            if len == 0 || !len.is_multiple_of(64) {
                return Err(Error::corruption(
                    path,
                    0,
                    format!("the FPTree's region file is {len} bytes, not a region"),
                ));
            }
        }
        let region = if path.exists() && options.private_image {
            MmapRegion::open_private(path, mmap).map_err(damaged)?
        } else if path.exists() {
            MmapRegion::open(path, mmap).map_err(damaged)?
        } else if options.intent.must_exist() {
            return Err(Error::corruption(path, 0, "the FPTree's region file is missing"));
        } else {
            MmapRegion::create(path, options.region_bytes, mmap)?
        };
        let engine = Self::open_region(Arc::new(region), options.config, options.intent)
            .map_err(|e| existing_store_damaged(e, path, options.intent))?;
        engine.tree.set_read_latency_ns(options.read_latency_ns)?;
        Ok(engine)
    }
}

/// Most bits by which a batch log's commit word may differ from [`BATCH_COMMITTED`] and
/// still be taken for a damaged commit word (`Corruption`) rather than a log that was never
/// committed: an uncommitted log's word is 0 or whatever its block held before (a freed log
/// clears its word first, so only damage leaves a near miss of the magic).
const COMMIT_WORD_DAMAGE_BITS_MAX: u32 = 8;

/// A region that is not a formatted FPTree region where the store existed is damage
/// (`Corruption`), not another kind of file (`Incompatible`): the database's `LAMINA` file
/// says this directory's engine made it.
fn existing_store_damaged(e: Error, path: &Path, intent: OpenIntent) -> Error {
    match e {
        Error::Incompatible { reason } if intent.must_exist() => Error::corruption(path, 0, reason),
        other => other,
    }
}

impl<R: SyncRegion + ?Sized, I: InnerIndex> FpTreeEngine<R, I> {
    /// Opens the store in `region`, formatting it if it was never formatted (its magic is
    /// zero: a new region, or a crash during formatting, which writes the magic last) unless
    /// `intent` says it must exist, and redoes a committed write batch a crash interrupted.
    pub fn open_region(region: Arc<R>, config: FpTreeConfig, intent: OpenIntent) -> Result<Self> {
        let mut first = [0u8; 1024];
        region.read(0, &mut first)?;
        let tree = if intent.must_exist() && first.iter().all(|&b| b == 0) {
            return Err(Error::corruption(
                region.path(),
                0,
                "the FPTree's region is blank but the store existed",
            ));
        } else if !intent.must_exist() && first[..8] == [0; 8] {
            FpTree::create(region, ENGINE_FILE_ID, config)?
        } else if intent.must_exist() && first[..8] != REGION_MAGIC {
            return Err(Error::corruption(
                region.path(),
                0,
                "the FPTree's region header is damaged (bad magic) but the store existed",
            ));
        } else {
            FpTree::open(region, config)?
        };
        let engine = FpTreeEngine {
            tree,
            gate: RwLock::new(()),
            stripes: (0..KEY_STRIPES).map(|_| Mutex::new(())).collect(),
            closed: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            user_bytes_written: AtomicU64::new(0),
        };
        engine.recover_batch()?;
        Ok(engine)
    }

    /// The tree.
    pub fn tree(&self) -> &FpTree<R, I> {
        &self.tree
    }

    fn alloc(&self) -> &PmemAllocator<R> {
        self.tree.allocator()
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Error::Unsupported {
                what: "using a store after a write batch failed half-applied; reopen it (the \
                       batch is redone at recovery)"
                    .into(),
            });
        }
        Ok(())
    }

    fn count_written(&self, bytes: usize) {
        self.user_bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn stripe(&self, key: &[u8]) -> &Mutex<()> {
        let h = usize::from(fingerprint(key)) ^ key.len();
        &self.stripes[h % KEY_STRIPES]
    }

    /// Redoes (committed) or drops (uncommitted) the batch log left by a crash.
    fn recover_batch(&self) -> Result<()> {
        let region = self.alloc().region();
        let pptr = PPtr::read_from(&**region, BATCH_LOG_PPTR)?;
        if pptr.is_null() {
            return Ok(());
        }
        let (offset, block_bytes) = self.alloc().block_of(pptr)?;
        let commit = region.load_u64(offset)?;
        if commit != BATCH_COMMITTED
            && (commit ^ BATCH_COMMITTED).count_ones() <= COMMIT_WORD_DAMAGE_BITS_MAX
        {
            // Not a log still being written (its word is 0, or what the block held before),
            // but a commit word a few bits off: damage. Reading it as uncommitted would free
            // the log and leave a batch that was partly applied partly applied.
            return Err(Error::corruption(
                region.path(),
                offset,
                format!("the batch log's commit word {commit:#x} is damaged"),
            ));
        }
        if commit == BATCH_COMMITTED {
            let mut header = [0u8; BATCH_HEADER_BYTES];
            region.read(offset, &mut header)?;
            let path = region.path();
            let len =
                encoded_len(&header).filter(|&len| len as u64 <= block_bytes).ok_or_else(|| {
                    Error::corruption(&path, offset, "batch log longer than its block")
                })?;
            let mut bytes = vec![0u8; len];
            region.read(offset, &mut bytes)?;
            let batch = decode_batch(&bytes).map_err(|e| e.at(&path, offset))?;
            self.apply(&batch)?;
        }
        self.free_batch_log()
    }

    /// Frees the batch log, clearing its commit word durably first: the block may be reused
    /// for the next batch log, and a crash before that one's bytes are persisted must not
    /// find this one's commit word there (recovery would redo this old batch).
    fn free_batch_log(&self) -> Result<()> {
        let region = self.alloc().region();
        let pptr = PPtr::read_from(&**region, BATCH_LOG_PPTR)?;
        if pptr.is_null() {
            return Ok(());
        }
        let (offset, _) = self.alloc().block_of(pptr)?;
        region.store_u64(offset, 0)?;
        region.persist(offset, 8)?;
        region.fence();
        self.alloc().deallocate(BATCH_LOG_PPTR)
    }

    fn apply(&self, batch: &WriteBatch) -> Result<()> {
        for op in batch.ops() {
            match op {
                BatchOp::Put { key, value } => self.tree.put(key, value)?,
                BatchOp::Delete { key } => {
                    self.tree.delete(key)?;
                }
            }
        }
        Ok(())
    }

    /// Refuses (with `NoSpace`, before anything is written) a batch the heap may not have
    /// room for (`batch_space.rs`): half applied, it could not be redone at recovery either.
    fn check_batch_space(&self, batch: &WriteBatch, log_bytes: usize) -> Result<()> {
        let stats = self.alloc().stats();
        let needed = batch_chunks_max(batch, log_bytes, self.tree.config(), stats.chunk_bytes);
        let free = stats.chunk_count - stats.used_chunks;
        if needed > free {
            return Err(Error::NoSpace {
                context: format!(
                    "persistent heap: a write batch of {} operations may need up to {needed} \
                     chunks of {} bytes and {free} of {} are free; nothing of it was written \
                     (delete data, write smaller batches, or use a larger region)",
                    batch.len(),
                    stats.chunk_bytes,
                    stats.chunk_count
                ),
            });
        }
        Ok(())
    }

    /// Writes the batch log (`bytes`, from `encode_batch`) and commits it: from here the
    /// batch will be applied.
    fn log_batch(&self, bytes: &[u8]) -> Result<()> {
        let pptr = self.alloc().allocate(BATCH_LOG_PPTR, bytes.len() as u64)?;
        let region = self.alloc().region();
        let written = region.write(pptr.offset, bytes).and_then(|()| {
            region.persist(pptr.offset, bytes.len() as u64)?;
            region.fence();
            region.store_u64(pptr.offset, BATCH_COMMITTED)?;
            region.persist(pptr.offset, 8)?;
            region.fence();
            Ok(())
        });
        if let Err(e) = written {
            // Not committed (or not known to be): recovery drops an uncommitted log.
            let _ = self.free_batch_log();
            return Err(e);
        }
        Ok(())
    }
}

impl<R: SyncRegion + ?Sized, I: InnerIndex> OrderedIndex for FpTreeEngine<R, I> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        let _gate = self.gate.read();
        self.tree.get(key)
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_open()?;
        check_key(key)?;
        check_value(value)?;
        let _gate = self.gate.read();
        let _stripe = self.stripe(key).lock();
        self.tree.put(key, value)?;
        self.count_written(key.len() + value.len());
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.check_open()?;
        check_key(key)?;
        let _gate = self.gate.read();
        let _stripe = self.stripe(key).lock();
        self.tree.delete(key)
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.check_open()?;
        check_cas(key, expected, new)?;
        let _gate = self.gate.read();
        let _stripe = self.stripe(key).lock();
        let current = self.tree.get(key)?;
        if current.as_deref() != expected {
            return Ok(CasOutcome::Mismatch { current });
        }
        match new {
            Some(value) => {
                self.tree.put(key, value)?;
                self.count_written(key.len() + value.len());
            }
            None => {
                self.tree.delete(key)?;
            }
        }
        Ok(CasOutcome::Swapped)
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        self.check_open()?;
        check_scan_limit(limit)?;
        if range.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let after = |k: &[u8]| {
            let mut k = k.to_vec();
            k.push(0);
            k
        };
        let (start, end) = range.as_bounds();
        let start = match start {
            Bound::Included(k) => k.to_vec(),
            Bound::Excluded(k) => after(k),
            Bound::Unbounded => Vec::new(),
        };
        let end = match end {
            Bound::Included(k) => Some(after(k)),
            Bound::Excluded(k) => Some(k.to_vec()),
            Bound::Unbounded => None,
        };
        let _gate = self.gate.read();
        self.tree.scan(&start, end.as_deref(), limit)
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        self.check_open()?;
        batch.validate()?;
        if batch.is_empty() {
            return Ok(());
        }
        let _gate = self.gate.write();
        let log = encode_batch(batch);
        self.check_batch_space(batch, log.len())?;
        self.log_batch(&log)?;
        if let Err(e) = self.apply(batch) {
            self.poisoned.store(true, Ordering::Release);
            return Err(e);
        }
        self.count_written(batch.payload_bytes());
        self.free_batch_log()
    }

    fn sync(&self) -> Result<()> {
        self.check_open()?;
        self.alloc().region().sync_all()
    }

    fn stats(&self) -> Stats {
        let tree = self.tree.stats();
        let alloc = self.tree.allocator_stats();
        let mut stats = Stats::new("fptree");
        stats.memory_bytes = tree.inner_dram_bytes;
        stats.user_bytes_written = self.user_bytes_written.load(Ordering::Relaxed);
        stats.extra = vec![
            ("leaves", tree.leaves as u64),
            ("splits", tree.splits),
            ("leaf_removals", tree.leaf_removals),
            ("searches_found", tree.searches_found),
            ("key_probes_found", tree.key_probes_found),
            ("read_restarts", tree.read_restarts),
            ("read_misses", tree.read_misses),
            ("pmem_used_bytes", alloc.used_chunks * alloc.chunk_bytes),
            ("pmem_lines_persisted", self.alloc().region().stats().lines_persisted),
        ];
        stats
    }

    fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let _gate = self.gate.write();
        self.alloc().region().sync_all()
    }
}
