//! The cache proper: index, CLOCK ring, admission and eviction (policy in the module doc).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::{Error, Result};
use parking_lot::{ArcRwLockWriteGuard, RawRwLock, RwLock};

use crate::backend::StorageFile;

use super::frame::{Frame, PinnedBlock, STATE_FAILED, STATE_LOADING, STATE_VALID};
use super::types::{Access, BlockKey, CacheConfig, CacheStats, USAGE_MAX};

/// A fixed-budget cache of fixed-size blocks. `Send + Sync`; share it with `Arc`.
pub struct BlockCache {
    config: CacheConfig,
    index: RwLock<Index>,
    counters: Counters,
}

/// Which frame holds which block, and the two CLOCK queues. Guarded by `BlockCache::index`.
/// Every indexed frame is in exactly one queue.
struct Index {
    map: HashMap<BlockKey, Arc<Frame>>,
    /// New blocks, in arrival order; a block re-hit here moves to `protected` when the hand
    /// reaches it, one not re-hit is evicted.
    probation: VecDeque<Arc<Frame>>,
    /// Blocks hit again while on probation; a CLOCK ring with usage counts.
    protected: VecDeque<Arc<Frame>>,
}

impl Index {
    fn resident(&self) -> usize {
        self.map.len()
    }
}

#[derive(Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
    load_waits: AtomicU64,
    load_failures: AtomicU64,
    evictions: AtomicU64,
    installs: AtomicU64,
    invalidations: AtomicU64,
    resident_peak: AtomicU64,
}

/// What a lookup found.
enum Lookup {
    /// A frame in the index (possibly still loading), now pinned.
    Found(PinnedBlock),
    /// A new frame in the loading state, pinned, with its write latch held by the caller.
    Inserted(PinnedBlock, ArcRwLockWriteGuard<RawRwLock, Box<[u8]>>),
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl BlockCache {
    /// An empty cache.
    pub fn new(config: CacheConfig) -> Result<Self> {
        config.validate()?;
        let slots = config.frames_max() + config.overflow_frames_max();
        let index = Index {
            map: HashMap::with_capacity(slots),
            probation: VecDeque::with_capacity(slots),
            protected: VecDeque::with_capacity(slots),
        };
        Ok(BlockCache { config, index: RwLock::new(index), counters: Counters::default() })
    }

    /// The configuration.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// The block `key`, pinned, loading it with `load` on a miss. `load` receives a zeroed
    /// buffer of `block_bytes` to fill (e.g. `|buf| file.read_exact_at(offset, buf)`); it runs
    /// without any cache-wide lock held, at most once per miss however many threads miss on
    /// the same block at once. An error from `load` is returned and nothing is cached.
    pub fn pin(
        &self,
        key: BlockKey,
        access: Access,
        load: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<PinnedBlock> {
        let mut load = Some(load);
        loop {
            match self.lookup_or_insert(key)? {
                Lookup::Found(pinned) => {
                    if let Some(pinned) = self.finish_hit(pinned, access) {
                        return Ok(pinned);
                    }
                    // The load we waited for failed; look again (we may load it ourselves).
                }
                Lookup::Inserted(pinned, mut latch) => {
                    bump(&self.counters.misses);
                    let load = load.take().expect("a lookup inserts at most once per pin");
                    // A panicking loader must not leave a frame stuck in the loading state
                    // (waiters would retry forever): take it out, then let the panic go on.
                    let loaded = panic::catch_unwind(AssertUnwindSafe(|| load(&mut latch)))
                        .unwrap_or_else(|payload| {
                            bump(&self.counters.load_failures);
                            self.abandon(&pinned);
                            panic::resume_unwind(payload)
                        });
                    return match loaded {
                        Ok(()) => {
                            pinned.frame().set_state(STATE_VALID);
                            drop(latch);
                            Ok(pinned)
                        }
                        Err(err) => {
                            bump(&self.counters.load_failures);
                            self.abandon(&pinned);
                            drop(latch);
                            Err(err)
                        }
                    };
                }
            }
        }
    }

    /// Block `block_no` of `file` (known to the cache as `file_id`), pinned, read from the
    /// file at `block_no * block_bytes` on a miss.
    pub fn pin_from_file(
        &self,
        file_id: u64,
        file: &dyn StorageFile,
        block_no: u64,
        access: Access,
    ) -> Result<PinnedBlock> {
        let offset = block_no.checked_mul(self.config.block_bytes as u64).ok_or_else(|| {
            Error::option("block_no", format!("block {block_no} is beyond any file's end"))
        })?;
        self.pin(BlockKey::new(file_id, block_no), access, |buf| file.read_exact_at(offset, buf))
    }

    /// The block `key` pinned if it is resident (waiting for a load in progress); never loads.
    pub fn pin_if_cached(&self, key: BlockKey, access: Access) -> Option<PinnedBlock> {
        loop {
            let pinned = {
                let index = self.index.read();
                index.map.get(&key)?.pin()
            };
            if let Some(pinned) = self.finish_hit(pinned, access) {
                return Some(pinned);
            }
        }
    }

    /// Puts `bytes` as the content of block `key` (after the engine wrote them to storage),
    /// replacing a resident copy under its write latch or inserting a new one.
    pub fn install(&self, key: BlockKey, bytes: &[u8]) -> Result<()> {
        if bytes.len() != self.config.block_bytes {
            return Err(Error::option(
                "bytes",
                format!("{} bytes given for a block of {}", bytes.len(), self.config.block_bytes),
            ));
        }
        loop {
            match self.lookup_or_insert(key)? {
                Lookup::Found(pinned) => {
                    let mut latch = pinned.write();
                    if pinned.frame().state() != STATE_VALID {
                        continue; // its load failed and it left the index
                    }
                    latch.copy_from_slice(bytes);
                }
                Lookup::Inserted(pinned, mut latch) => {
                    latch.copy_from_slice(bytes);
                    pinned.frame().set_state(STATE_VALID);
                }
            }
            bump(&self.counters.installs);
            return Ok(());
        }
    }

    /// Drops block `key` from the cache; whether it was resident. Holders of a pin keep their
    /// (now detached) copy until they drop it; it no longer counts against the budget.
    pub fn invalidate(&self, key: BlockKey) -> bool {
        self.invalidate_where(|k| k == key) == 1
    }

    /// Drops every block of `file_id` (e.g. the file was deleted); how many were resident.
    pub fn invalidate_file(&self, file_id: u64) -> usize {
        self.invalidate_where(|k| k.file_id == file_id)
    }

    fn invalidate_where(&self, doomed: impl Fn(BlockKey) -> bool) -> usize {
        let mut index = self.index.write();
        let before = index.resident();
        index.map.retain(|&k, _| !doomed(k));
        let removed = before - index.resident();
        if removed > 0 {
            index.probation.retain(|f| !doomed(f.key));
            index.protected.retain(|f| !doomed(f.key));
        }
        Self::check(&index);
        self.counters.invalidations.fetch_add(removed as u64, Ordering::Relaxed);
        removed
    }

    /// The counters now.
    pub fn stats(&self) -> CacheStats {
        let resident = self.index.read().resident() as u64;
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CacheStats {
            hits: load(&c.hits),
            misses: load(&c.misses),
            load_waits: load(&c.load_waits),
            load_failures: load(&c.load_failures),
            evictions: load(&c.evictions),
            installs: load(&c.installs),
            invalidations: load(&c.invalidations),
            resident_blocks: resident,
            resident_bytes: resident * self.config.block_bytes as u64,
            resident_bytes_peak: load(&c.resident_peak) * self.config.block_bytes as u64,
        }
    }

    /// Keys of the resident blocks, sorted (for tests and `inspect`).
    pub fn resident_keys(&self) -> Vec<BlockKey> {
        let mut keys: Vec<BlockKey> = self.index.read().map.keys().copied().collect();
        keys.sort_unstable();
        keys
    }

    /// Finds `key` and pins it, or inserts a loading frame for it (evicting as needed).
    fn lookup_or_insert(&self, key: BlockKey) -> Result<Lookup> {
        if let Some(frame) = self.index.read().map.get(&key) {
            return Ok(Lookup::Found(frame.pin()));
        }
        let mut index = self.index.write();
        if let Some(frame) = index.map.get(&key) {
            return Ok(Lookup::Found(frame.pin()));
        }
        self.make_room(&mut index)?;
        let frame = Arc::new(Frame::new(key, self.config.block_bytes));
        let latch = frame.data.try_write_arc().expect("a new frame's latch is free");
        let pinned = frame.pin();
        index.probation.push_back(Arc::clone(&frame));
        index.map.insert(key, frame);
        self.counters.resident_peak.fetch_max(index.resident() as u64, Ordering::Relaxed);
        Self::check(&index);
        Ok(Lookup::Inserted(pinned, latch))
    }

    /// Completes a lookup that found a frame: waits out a load in progress, counts, promotes.
    /// `None` when the frame's load failed.
    fn finish_hit(&self, pinned: PinnedBlock, access: Access) -> Option<PinnedBlock> {
        let frame = pinned.frame();
        match frame.state() {
            STATE_VALID => bump(&self.counters.hits),
            STATE_LOADING => {
                // The loader holds the write latch until the content is in place.
                drop(pinned.read());
                if frame.state() != STATE_VALID {
                    return None;
                }
                bump(&self.counters.load_waits);
            }
            _ => return None,
        }
        if access == Access::Point {
            frame.promote();
        }
        Some(pinned)
    }

    /// Takes a failed load's frame out of the index (if it is still there).
    fn abandon(&self, pinned: &PinnedBlock) {
        let frame = pinned.frame();
        let mut index = self.index.write();
        if index.map.get(&frame.key).is_some_and(|f| Arc::ptr_eq(f, frame)) {
            index.map.remove(&frame.key);
            // A loading frame is still in probation: eviction skips pinned frames.
            index.probation.retain(|f| !Arc::ptr_eq(f, frame));
            Self::check(&index);
        }
        // Waiters check the state after the loader releases the latch; they then retry and
        // no longer find this frame.
        frame.set_state(STATE_FAILED);
    }

    /// Evicts down to the budget (see the module doc); fails when pinned blocks fill the
    /// budget and the pinned overflow.
    fn make_room(&self, index: &mut Index) -> Result<()> {
        let frames_max = self.config.frames_max();
        while index.resident() >= frames_max {
            if !self.evict_one(index) {
                break;
            }
        }
        if index.resident() >= frames_max + self.config.overflow_frames_max() {
            return Err(Error::NoSpace {
                context: format!(
                    "block cache: all {} resident blocks are pinned ({} bytes budget + {} \
                     bytes pinned overflow)",
                    index.resident(),
                    self.config.capacity_bytes,
                    self.config.pinned_overflow_bytes_max
                ),
            });
        }
        Ok(())
    }

    /// Evicts one block; false when every resident block is pinned or loading. Takes from
    /// probation while it holds at least its share (or nothing is protected), else from
    /// protected; falls back to the other queue when the first has no candidate.
    fn evict_one(&self, index: &mut Index) -> bool {
        let probation_first =
            index.probation.len() >= self.config.probation_frames() || index.protected.is_empty();
        let victim = if probation_first {
            Self::victim_from_probation(index).or_else(|| Self::victim_from_protected(index))
        } else {
            Self::victim_from_protected(index).or_else(|| Self::victim_from_probation(index))
        };
        let Some(victim) = victim else { return false };
        let removed = index.map.remove(&victim.key);
        assert!(removed.is_some_and(|f| Arc::ptr_eq(&f, &victim)), "evicted an unindexed frame");
        bump(&self.counters.evictions);
        Self::check(index);
        true
    }

    /// Pops probation in order: pinned or loading frames go to the back, re-hit frames move to
    /// protected (lazy promotion), the first other frame is the victim.
    fn victim_from_probation(index: &mut Index) -> Option<Arc<Frame>> {
        for _ in 0..index.probation.len() {
            let frame = index.probation.pop_front().expect("counted");
            if frame.pins() > 0 || frame.state() != STATE_VALID {
                index.probation.push_back(frame);
            } else if frame.usage() > 0 {
                frame.reset_usage();
                index.protected.push_back(frame);
            } else {
                return Some(frame);
            }
        }
        None
    }

    /// CLOCK over protected: pinned frames are skipped, a used frame loses one usage and goes
    /// round again, the first unpinned frame with usage 0 is the victim.
    fn victim_from_protected(index: &mut Index) -> Option<Arc<Frame>> {
        // Each unpinned frame is demoted at most USAGE_MAX times before it is a victim.
        for _ in 0..index.protected.len() * (usize::from(USAGE_MAX) + 1) {
            let frame = index.protected.pop_front().expect("counted");
            if frame.pins() > 0 || frame.state() != STATE_VALID {
                index.protected.push_back(frame);
            } else if frame.usage() > 0 {
                frame.demote();
                index.protected.push_back(frame);
            } else {
                return Some(frame);
            }
        }
        None
    }

    fn check(index: &Index) {
        assert_eq!(
            index.map.len(),
            index.probation.len() + index.protected.len(),
            "every indexed frame is in exactly one queue"
        );
    }
}

impl fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCache")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
