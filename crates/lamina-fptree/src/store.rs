//! The persistent part of the tree: the region and its allocator, the leaf list's head, the
//! micro-log queues, the leaf source (per-leaf allocation or leaf groups), the record blobs
//! and the in-leaf search. The DRAM inner nodes are not here (`crate::tree` pairs the two).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::{Error, Result};
use lamina_storage::pmem::{PPtr, PmemAllocator, PmemRegion};
use parking_lot::Mutex;

use crate::blob::{BLOB_HEADER_BYTES, BlobHeader, decode_blob, encode_blob};
use crate::groups::GroupState;
use crate::layout::{DELETE_LOGS, DELETE_LOGS_OFFSET, FpTreeConfig, SPLIT_LOGS, SPLIT_LOGS_OFFSET};
use crate::leaf::{LEAF_BYTES, Leaf, bits};
use crate::microlog::LogQueue;

/// Counters of a tree since it was opened.
#[derive(Debug, Default)]
pub struct Counters {
    /// Successful key searches (`get` that found its key, writes that found theirs).
    pub searches_found: AtomicU64,
    /// Key probes (blob reads and compares) made by those searches (section 4.2).
    pub key_probes_found: AtomicU64,
    /// Leaf splits (Algorithm 3).
    pub splits: AtomicU64,
    /// Leaf removals (Algorithm 6).
    pub leaf_removals: AtomicU64,
    /// Optimistic reads that had to start over (a leaf was locked or changed).
    pub read_restarts: AtomicU64,
    /// Emulated persistent-memory read misses charged (leaf visits and blob reads).
    pub read_misses: AtomicU64,
}

/// Largest emulated read latency per miss accepted.
pub const READ_LATENCY_NS_MAX: u64 = 1_000_000;

/// The persistent part of an FPTree (see the module doc).
pub struct Store<R: PmemRegion + ?Sized> {
    pub(crate) alloc: PmemAllocator<R>,
    pub(crate) config: FpTreeConfig,
    /// Writes record their pending slots (`TreeHeader::pending_slots`).
    pub(crate) pending_slots: bool,
    /// The first leaf's offset (never removed, so constant).
    pub(crate) head: u64,
    pub(crate) split_logs: LogQueue,
    pub(crate) delete_logs: LogQueue,
    /// Leaf groups' transient state (free leaves); unused without leaf groups.
    pub(crate) groups: Mutex<GroupState>,
    pub(crate) counters: Counters,
    /// Emulated latency per persistent-memory read miss (0 = none): the read side of the
    /// paper's SCM latency sweep (section 6.1); the write side is the region's
    /// `latency_ns_per_line`. Every leaf visit and every blob read counts as one miss.
    pub(crate) read_latency_ns: AtomicU64,
}

impl<R: PmemRegion + ?Sized> std::fmt::Debug for Store<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("config", &self.config)
            .field("head", &self.head)
            .field("counters", &self.counters)
            .finish_non_exhaustive()
    }
}

/// Where a probe or a read found a problem: inside a leaf read optimistically, an error may
/// only mean the leaf changed under the reader (the caller revalidates before reporting).
pub type Probe = (Option<usize>, u64);

impl<R: PmemRegion + ?Sized> Store<R> {
    pub(crate) fn new(alloc: PmemAllocator<R>, config: FpTreeConfig, head: u64) -> Self {
        Store {
            alloc,
            config,
            pending_slots: !config.inline_records,
            head,
            split_logs: LogQueue::new(SPLIT_LOGS_OFFSET, SPLIT_LOGS),
            delete_logs: LogQueue::new(DELETE_LOGS_OFFSET, DELETE_LOGS),
            groups: Mutex::new(GroupState::default()),
            counters: Counters::default(),
            read_latency_ns: AtomicU64::new(0),
        }
    }

    /// The region.
    pub fn region(&self) -> &R {
        self.alloc.region()
    }

    /// The region's file id (what persistent pointers name).
    pub fn file_id(&self) -> u64 {
        self.alloc.file_id()
    }

    pub(crate) fn path(&self) -> PathBuf {
        self.region().path()
    }

    /// Charges one emulated read miss (a spin of the configured latency).
    pub(crate) fn read_miss(&self) {
        let ns = self.read_latency_ns.load(Ordering::Relaxed);
        if ns == 0 {
            return;
        }
        bump(&self.counters.read_misses, 1);
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_nanos(ns) {
            std::hint::spin_loop();
        }
    }

    /// The leaf at offset `at`.
    pub(crate) fn leaf(&self, at: u64) -> Leaf<'_, R> {
        Leaf::new(self.region(), at)
    }

    /// The leaf a persistent pointer names, after checking that a leaf can be there (right
    /// region, aligned, inside the heap). The leaf's content is not checked.
    pub(crate) fn leaf_at(&self, pptr: PPtr) -> Result<Leaf<'_, R>> {
        let layout = self.alloc.header().layout;
        let fits = pptr.file_id == self.file_id()
            && pptr.offset.is_multiple_of(64)
            && pptr.offset >= layout.heap_offset
            && pptr.offset.checked_add(LEAF_BYTES).is_some_and(|end| end <= layout.region_bytes);
        if !fits {
            return Err(Error::corruption(
                self.path(),
                pptr.offset,
                format!("persistent pointer {pptr:?} cannot name a leaf"),
            ));
        }
        Ok(self.leaf(pptr.offset))
    }

    /// A persistent pointer to region offset `offset`.
    pub(crate) fn pptr(&self, offset: u64) -> PPtr {
        PPtr::new(self.file_id(), offset)
    }

    /// Searches `leaf` for `key` (Algorithm 1 lines 7-11): only slots that are valid and whose
    /// fingerprint matches are probed. Returns the slot and the number of key probes.
    pub(crate) fn find_slot(&self, leaf: Leaf<'_, R>, key: &[u8], fp: u8) -> Result<Probe> {
        self.read_miss(); // the leaf's first line
        let bitmap = leaf.bitmap();
        let fingerprints = leaf.fingerprints();
        let mut probes = 0;
        let mut buf = Vec::new();
        for slot in bits(bitmap) {
            if fingerprints[slot] != fp {
                continue;
            }
            probes += 1;
            if self.probe_slot(leaf, slot, key, &mut buf)? {
                return Ok((Some(slot), probes));
            }
        }
        Ok((None, probes))
    }

    /// Whether the record `pptr` names has key `key` (one key probe: the blob's header and
    /// key are read, not the value).
    pub(crate) fn probe(&self, pptr: PPtr, key: &[u8], buf: &mut [u8]) -> Result<bool> {
        let region = self.region();
        self.read_miss();
        if pptr.is_null() || pptr.file_id != self.file_id() {
            return Err(Error::corruption(
                self.path(),
                pptr.offset,
                format!("a valid leaf slot holds {pptr:?}"),
            ));
        }
        let header_len = BLOB_HEADER_BYTES;
        let available = region.len_bytes().saturating_sub(pptr.offset);
        let want = (buf.len() as u64).min(available) as usize;
        region.read(pptr.offset, &mut buf[..want])?;
        let header: &[u8; BLOB_HEADER_BYTES] =
            buf[..header_len].try_into().map_err(|_| self.blob_corrupt(pptr, "truncated"))?;
        let header =
            BlobHeader::decode(header, available).map_err(|e| e.at(&self.path(), pptr.offset))?;
        Ok(header.key_len == key.len() && want == buf.len() && &buf[header_len..] == key)
    }

    fn blob_corrupt(&self, pptr: PPtr, why: &str) -> Error {
        Error::corruption(self.path(), pptr.offset, format!("record blob {pptr:?}: {why}"))
    }

    /// Reads and checks the whole record `pptr` names: (key, value).
    pub(crate) fn read_record(&self, pptr: PPtr) -> Result<(Vec<u8>, Vec<u8>)> {
        let mut buf = Vec::new();
        let (key, value) = self.read_blob(pptr, &mut buf)?;
        Ok((key.to_vec(), value.to_vec()))
    }

    /// Reads the blob `pptr` names into `buf` (resized to fit) and checks it (an allocated
    /// block, the header, the checksum); returns its key and value, slices of `buf`.
    pub(crate) fn read_blob<'b>(
        &self,
        pptr: PPtr,
        buf: &'b mut Vec<u8>,
    ) -> Result<(&'b [u8], &'b [u8])> {
        self.read_miss();
        let (offset, block_bytes) = self.alloc.block_of(pptr)?;
        let mut header = [0u8; BLOB_HEADER_BYTES];
        self.region().read(offset, &mut header)?;
        let parsed =
            BlobHeader::decode(&header, block_bytes).map_err(|e| e.at(&self.path(), offset))?;
        buf.resize(BLOB_HEADER_BYTES + parsed.key_len + parsed.value_len, 0);
        self.region().read(offset, buf)?;
        decode_blob(buf, block_bytes).map_err(|e| e.at(&self.path(), offset))
    }

    /// Allocates a record blob into the (null) slot pointer at `slot_at` and writes the record
    /// durably (Algorithm 14 lines 13-15). On a failure after the allocation the blob is freed
    /// again (best effort; recovery's leak check frees it otherwise).
    pub(crate) fn write_blob(&self, slot_at: u64, key: &[u8], value: &[u8]) -> Result<PPtr> {
        let blob = encode_blob(key, value);
        let pptr = self.alloc.allocate(slot_at, blob.len() as u64)?;
        let written = self.region().write(pptr.offset, &blob).and_then(|()| {
            self.region().persist(pptr.offset, blob.len() as u64)?;
            self.region().fence();
            Ok(())
        });
        if let Err(e) = written {
            let _ = self.alloc.deallocate(slot_at);
            return Err(e);
        }
        Ok(pptr)
    }

    /// Every valid record of `leaf`, sorted by key, and the leaf's next pointer.
    pub(crate) fn leaf_records(&self, leaf: Leaf<'_, R>) -> Result<LeafRecords> {
        self.read_miss();
        let next = leaf.next();
        let mut records = bits(leaf.bitmap())
            .map(|slot| self.record_in(leaf, slot))
            .collect::<Result<Vec<_>>>()?;
        records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok((records, next))
    }
}

/// A leaf's records (sorted) and its next pointer.
pub type LeafRecords = (Vec<(Vec<u8>, Vec<u8>)>, PPtr);

/// Reads a leaf optimistically (Algorithm 1 under optimistic locking): `None` when the leaf
/// was locked or changed during the read (the caller starts over); otherwise what `read`
/// returned (an error is then real: the leaf did not change while it was read) and the
/// version it was read at.
pub(crate) fn read_optimistic<R: PmemRegion + ?Sized, T>(
    leaf: Leaf<'_, R>,
    read: impl FnOnce() -> Result<T>,
) -> Option<(Result<T>, u64)> {
    crate::leaf_lock::read_optimistic(leaf.version_word(), read)
}

/// Counts one event.
pub(crate) fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}
