//! [`FpTree`]: the persistent leaves ([`Store`]) with DRAM inner nodes (`I: InnerIndex`),
//! and the read operations: find (Algorithm 1) and range scans over the leaf list.
//! The write operations are in `crate::write`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use lamina_core::Result;
use lamina_core::limits::{check_key, check_scan_limit};
use lamina_storage::pmem::{AllocatorStats, PmemAllocator, PmemRegion};

use crate::fingerprint::fingerprint;
use crate::inner::{InnerIndex, OlcInner, Visit};
use crate::layout::{CHUNK_BYTES, FpTreeConfig};
use crate::leaf::bits;
use crate::recovery::{self, RecoveryReport};
use crate::store::{READ_LATENCY_NS_MAX, Store, bump, read_optimistic};

/// A key-value pair returned by a scan.
pub type Record = (Vec<u8>, Vec<u8>);

/// Counters of a tree since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FpTreeStats {
    /// Searches that found their key.
    pub searches_found: u64,
    /// Key probes those searches made (section 4.2: about one per search).
    pub key_probes_found: u64,
    /// Leaf splits.
    pub splits: u64,
    /// Leaf removals.
    pub leaf_removals: u64,
    /// Optimistic leaf reads that started over.
    pub read_restarts: u64,
    /// Emulated read misses charged (with a read latency set).
    pub read_misses: u64,
    /// Leaves in the tree.
    pub leaves: usize,
    /// Bytes of DRAM the inner nodes hold.
    pub inner_dram_bytes: u64,
}

/// The Fingerprinting Persistent Tree over a persistent region `R`, with inner nodes `I`.
#[derive(Debug)]
pub struct FpTree<R: PmemRegion + ?Sized, I: InnerIndex = OlcInner> {
    pub(crate) store: Store<R>,
    pub(crate) inner: I,
    recovery: RecoveryReport,
}

impl<R: PmemRegion + ?Sized, I: InnerIndex> FpTree<R, I> {
    /// Formats `region` (its previous content is lost) as an empty tree owning persistent
    /// file id `file_id`.
    pub fn create(region: Arc<R>, file_id: u64, config: FpTreeConfig) -> Result<Self> {
        let alloc = PmemAllocator::format(region, file_id, CHUNK_BYTES)?;
        Self::open_allocator(alloc, config)
    }

    /// Opens the tree in `region`, recovering from a crash (Algorithm 9). `config` is used
    /// only if the region holds no tree yet (an interrupted `create`); an existing tree keeps
    /// the configuration it was created with.
    pub fn open(region: Arc<R>, config: FpTreeConfig) -> Result<Self> {
        Self::open_allocator(PmemAllocator::open(region)?, config)
    }

    fn open_allocator(alloc: PmemAllocator<R>, config: FpTreeConfig) -> Result<Self> {
        let (store, inner, recovery) = recovery::open::<R, I>(alloc, config)?;
        Ok(FpTree { store, inner, recovery })
    }

    /// What opening the tree did.
    pub fn recovery_report(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// The configuration the tree was created with.
    pub fn config(&self) -> FpTreeConfig {
        self.store.config
    }

    /// The persistent allocator (for its accounting).
    pub fn allocator(&self) -> &PmemAllocator<R> {
        &self.store.alloc
    }

    /// The allocator's counters.
    pub fn allocator_stats(&self) -> AllocatorStats {
        self.store.alloc.stats()
    }

    /// The inner nodes.
    pub fn inner(&self) -> &I {
        &self.inner
    }

    /// Sets the emulated latency per persistent-memory read miss (each leaf visit and blob
    /// read), up to 1 ms; 0 turns it off. The write side is the region's
    /// `latency_ns_per_line`.
    pub fn set_read_latency_ns(&self, latency_ns: u64) -> Result<()> {
        if latency_ns > READ_LATENCY_NS_MAX {
            return Err(lamina_core::Error::option(
                "read_latency_ns",
                format!("{latency_ns} is over the maximum of {READ_LATENCY_NS_MAX}"),
            ));
        }
        self.store.read_latency_ns.store(latency_ns, Ordering::Relaxed);
        Ok(())
    }

    /// Counters since open.
    pub fn stats(&self) -> FpTreeStats {
        let c = &self.store.counters;
        FpTreeStats {
            searches_found: c.searches_found.load(Ordering::Relaxed),
            key_probes_found: c.key_probes_found.load(Ordering::Relaxed),
            splits: c.splits.load(Ordering::Relaxed),
            leaf_removals: c.leaf_removals.load(Ordering::Relaxed),
            read_restarts: c.read_restarts.load(Ordering::Relaxed),
            read_misses: c.read_misses.load(Ordering::Relaxed),
            leaves: self.inner.leaf_count(),
            inner_dram_bytes: self.inner.dram_bytes(),
        }
    }

    /// Algorithm 1 (`ConcurrentFind`) under optimistic locking: the leaf is searched without
    /// taking its lock, and the search is retried when the leaf was locked or changed.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        let fp = fingerprint(key);
        let store = &self.store;
        let (found, probes) = self.inner.locate(
            key,
            |leaf_at, _| {
                let leaf = store.leaf(leaf_at);
                let read = read_optimistic(leaf, || {
                    let (slot, probes) = store.find_slot(leaf, key, fp)?;
                    slot.map(|slot| store.record_in(leaf, slot).map(|r| r.1))
                        .transpose()
                        .map(|value| (value, probes))
                });
                match read {
                    Some((result, _)) => Visit::Done(result),
                    None => {
                        bump(&store.counters.read_restarts, 1);
                        Visit::Restart
                    }
                }
            },
            |_| {},
        )?;
        if found.is_some() {
            bump(&store.counters.searches_found, 1);
            bump(&store.counters.key_probes_found, probes);
        }
        Ok(found)
    }

    /// Up to `limit` records with `start <= key` (and `key < end` when given), in key order,
    /// read along the leaf list. Each leaf is read optimistically and sorted; the next leaf
    /// is trusted only if the previous one did not change while it was read (so it was not
    /// removed), otherwise the scan resumes through the inner nodes after the last key
    /// returned.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>, limit: usize) -> Result<Vec<Record>> {
        check_scan_limit(limit)?;
        let store = &self.store;
        let mut out: Vec<Record> = Vec::new();
        let mut resume = start.to_vec();
        'resume: loop {
            if out.len() >= limit {
                return Ok(out);
            }
            // Pinned while it follows next pointers: a leaf removed meanwhile is not freed
            // (and its memory not reused) before this walk lets go of it
            // (`delete_leaf::wait_for_optimistic_readers`).
            let _pinned = crossbeam_epoch::pin();
            let (records, mut next, mut anchor, mut anchor_version) = self.inner.locate(
                &resume,
                |leaf_at, _| {
                    let leaf = store.leaf(leaf_at);
                    match read_optimistic(leaf, || store.leaf_records(leaf)) {
                        Some((result, version)) => Visit::Done(
                            result.map(|(records, next)| (records, next, leaf_at, version)),
                        ),
                        None => Visit::Restart,
                    }
                },
                |_| {},
            )?;
            let mut records = records;
            loop {
                for (key, value) in records {
                    if key < resume {
                        continue;
                    }
                    if end.is_some_and(|end| key.as_slice() >= end) || out.len() >= limit {
                        return Ok(out);
                    }
                    resume.clone_from(&key);
                    resume.push(0); // the smallest key after `key`
                    out.push((key, value));
                }
                if next.is_null() {
                    return Ok(out);
                }
                let leaf = store.leaf_at(next)?;
                let read = read_optimistic(leaf, || store.leaf_records(leaf));
                let anchor_same = store.leaf(anchor).version() == anchor_version;
                match read {
                    Some((Ok((leaf_records, leaf_next)), version)) if anchor_same => {
                        records = leaf_records;
                        next = leaf_next;
                        anchor = leaf.at;
                        anchor_version = version;
                    }
                    Some((Err(e), _)) if anchor_same => return Err(e),
                    _ => {
                        bump(&store.counters.read_restarts, 1);
                        std::thread::yield_now();
                        continue 'resume;
                    }
                }
            }
        }
    }

    /// Chunks of the heap the tree can reach: its leaves (or leaf groups) and the blobs of
    /// its valid slots. After recovery this equals the allocator's used chunks (no leak).
    /// Not for use concurrently with writes.
    pub fn reachable_chunks(&self) -> Result<u64> {
        let store = &self.store;
        let chunk = store.alloc.header().layout.chunk_bytes;
        let mut total = 0;
        if store.config.leaf_groups {
            for group in &store.groups.lock().groups {
                total += store.alloc.block_of(store.pptr(*group))?.1 / chunk;
            }
        }
        let mut next = Some(store.pptr(store.head));
        while let Some(pptr) = next {
            let leaf = store.leaf_at(pptr)?;
            if !store.config.leaf_groups {
                total += store.alloc.block_of(pptr)?.1 / chunk;
            }
            for slot in bits(leaf.bitmap()) {
                total += store.record_chunks(leaf, slot)?;
            }
            let n = leaf.next();
            next = (!n.is_null()).then_some(n);
        }
        Ok(total)
    }

    /// Leaves on the persistent list (walked; not for use concurrently with writes).
    pub fn list_leaves(&self) -> Result<usize> {
        Ok(self.leaf_fills()?.len())
    }

    /// Each leaf on the persistent list, in list order: its offset and its keys (sorted;
    /// walked; not for use concurrently with writes).
    pub fn leaf_keys(&self) -> Result<Vec<(u64, Vec<Vec<u8>>)>> {
        let mut out = Vec::new();
        let mut next = Some(self.store.pptr(self.store.head));
        while let Some(pptr) = next {
            let leaf = self.store.leaf_at(pptr)?;
            let (records, n) = self.store.leaf_records(leaf)?;
            out.push((leaf.at, records.into_iter().map(|r| r.0).collect()));
            next = (!n.is_null()).then_some(n);
        }
        Ok(out)
    }

    /// Records in each leaf on the persistent list, in list order (walked; not for use
    /// concurrently with writes).
    pub fn leaf_fills(&self) -> Result<Vec<u32>> {
        let mut fills = Vec::new();
        let mut next = Some(self.store.pptr(self.store.head));
        while let Some(pptr) = next {
            let leaf = self.store.leaf_at(pptr)?;
            fills.push(leaf.bitmap().count_ones());
            let n = leaf.next();
            next = (!n.is_null()).then_some(n);
        }
        Ok(fills)
    }
}
