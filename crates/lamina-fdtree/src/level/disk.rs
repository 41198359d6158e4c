//! A materialized disk level `L_i` (i > 0), or a run of `L_0`: one file of blocks, its
//! in-memory index, its exact counts and its block latches, and the lookup step through it
//! (Algorithm 2 on one level).

use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::StorageFile;
use parking_lot::{Mutex, RwLock, RwLockReadGuard};

use super::latches::BlockLatches;
use crate::format::entry::BlockPtr;
use crate::format::index::LevelIndex;
use crate::format::segment::DataHit;
use crate::format::stats::LevelStats;
use crate::level_map::LevelMap;
use crate::options::Params;
use crate::store::BlockStore;

/// The index of a level: fixed once the level is finished, growing while an FD+FC merge
/// writes it (lookups behind the wavefront read it meanwhile).
#[derive(Debug, Clone)]
pub enum IndexRef {
    /// A finished level's.
    Fixed(Arc<LevelIndex>),
    /// A level being written.
    Growing(Arc<RwLock<LevelIndex>>),
}

/// Read access to a level's index.
#[derive(Debug)]
pub enum IndexGuard<'a> {
    /// A finished level's index.
    Fixed(&'a LevelIndex),
    /// A growing level's index, read-locked.
    Growing(RwLockReadGuard<'a, LevelIndex>),
}

impl std::ops::Deref for IndexGuard<'_> {
    type Target = LevelIndex;
    fn deref(&self) -> &LevelIndex {
        match self {
            IndexGuard::Fixed(ix) => ix,
            IndexGuard::Growing(g) => g,
        }
    }
}

impl IndexRef {
    /// Reads the index.
    pub fn read(&self) -> IndexGuard<'_> {
        match self {
            IndexRef::Fixed(ix) => IndexGuard::Fixed(ix),
            IndexRef::Growing(ix) => IndexGuard::Growing(ix.read()),
        }
    }
}

/// The fences of the block a merge is filling in a new fence-only level (FD+FC, section
/// 4.4.2: lookups behind the wavefront go through it). m-insert adds each fence under the
/// mutex, the paper's exclusive latch of the block being written.
#[derive(Debug, Default)]
pub struct TailFences {
    /// The block being filled (`None`: none yet).
    pub block: Option<u32>,
    /// Its fences, in key order.
    pub fences: Vec<(Box<[u8]>, BlockPtr)>,
}

/// A materialized level below `L_0`, or a run of `L_0`.
#[derive(Debug, Clone)]
pub struct DiskLevel {
    /// Level number `i` (levels between two materialized ones are skipped); 0 for a run.
    pub label: usize,
    /// Level file id.
    pub file_id: u32,
    /// Open handle of the level file.
    pub file: Arc<dyn StorageFile>,
    /// Blocks written (for a level being written: when this view was taken).
    pub blocks: u32,
    /// Counts of the finished level.
    pub stats: LevelStats,
    /// The index.
    pub index: IndexRef,
    /// Block latches and the reclaimed head.
    pub latches: Arc<BlockLatches>,
    /// For a fence-only level being written by an FD+FC merge: its tail's fences.
    pub tail: Option<Arc<Mutex<TailFences>>>,
    /// Whether the level may hold data entries (a fence-only level being written does not).
    pub holds_data: bool,
    /// The file mapped for lookups, once finished (`None` while the level is written).
    pub map: Option<Arc<LevelMap>>,
}

/// The outcome of [`DiskLevel::with_segment_numbered`].
#[derive(Debug)]
pub enum SegmentRead<R> {
    /// The segment was read; what the caller's function returned.
    Read(R),
    /// The index holds no such segment (past the level's end).
    Absent,
    /// The segment's block was reclaimed by an FD+FC merge: the reader starts again.
    Reclaimed,
}

/// What one level says about a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LevelHit {
    /// The key's value.
    Value(Vec<u8>),
    /// The key is absent (a delete entry here).
    Deleted,
    /// Nothing here: continue with the fence (absent for a run or the bottom level).
    Next(Option<BlockPtr>),
    /// The block was reclaimed by an FD+FC merge while the lookup was on its way: restart.
    Reclaimed,
}

impl DiskLevel {
    /// `B(L_i)` in blocks.
    pub fn size_blocks(&self, params: &Params) -> u64 {
        params.blocks_of(self.stats.sized_bytes())
    }

    /// Pointer to block `index` of this level.
    pub fn ptr(&self, index: u32) -> BlockPtr {
        BlockPtr { file: self.file_id, index }
    }

    /// Algorithm 2 on this level: the data entry of `key` if the level has one (read only if
    /// the Bloom filter allows it), else the fence with the largest key `<= key` in the
    /// block (none in a run or the bottom level; the caller knows which levels must have
    /// one). `block` is the block a fence led to (`None` for a run, which is searched whole).
    pub fn lookup(
        &self,
        store: &BlockStore,
        block: Option<u32>,
        key: &[u8],
        hash: u64,
    ) -> Result<LevelHit> {
        let (found, fence, segments) = loop {
            let ix = self.index.read();
            let maybe = self.holds_data && ix.bloom().may_contain_hash(hash);
            let found = match block {
                None => (maybe.then(|| ix.segment_anywhere_numbered(key)).flatten(), None),
                Some(b) if b < ix.blocks() => {
                    let pos = if maybe { ix.segment_in_block_numbered(b, key) } else { None };
                    (pos, ix.fence_in_block(b, key))
                }
                Some(b) => {
                    drop(ix);
                    match self.lookup_in_tail(store, b, key)? {
                        Some(hit) => return Ok(hit),
                        // The writer indexed the block meanwhile: read it from the index.
                        None => continue,
                    }
                }
            };
            break (found.0, found.1, ix.segments());
        };
        if let Some((number, pos)) = found {
            let Some(_latch) = self.latches.read(pos.block) else {
                return Ok(LevelHit::Reclaimed);
            };
            let (kmax, vmax) = store.limits();
            let block_bytes = store.block_bytes() as u64;
            let map = self
                .map
                .as_ref()
                .and_then(|m| m.get(&*self.file, u64::from(self.blocks) * block_bytes, segments));
            let mapped = map.map(|m| (m, number));
            let hit = store.with_segment(&*self.file, self.file_id, mapped, pos, |run| {
                run.find(key, kmax, vmax)
                    .map_err(|e| {
                        store.corruption(&*self.file, pos.block, u64::from(pos.offset), e.reason)
                    })
                    .map(|h| match h {
                        DataHit::Insert(v) => Some(LevelHit::Value(v.to_vec())),
                        DataHit::Delete => Some(LevelHit::Deleted),
                        DataHit::None => None,
                    })
            })?;
            if let Some(hit) = hit {
                return Ok(hit);
            }
        }
        Ok(LevelHit::Next(fence))
    }

    /// Runs `f` on the entries of segment `number` (in `LevelIndex` order), read as a
    /// lookup reads it: in place through the level's map if it has one, else through the
    /// segment cache; checked (checksum, place) at its first read; under the shared latch
    /// of its block, so an FD+FC merge cannot reclaim the block meanwhile (scans, which do
    /// not wait for merges either).
    pub fn with_segment_numbered<R>(
        &self,
        store: &BlockStore,
        number: usize,
        f: impl FnOnce(crate::format::segment::EntryRun<'_>) -> Result<R>,
    ) -> Result<SegmentRead<R>> {
        let (pos, segments) = {
            let ix = self.index.read();
            let Some(pos) = ix.segment_pos(number) else { return Ok(SegmentRead::Absent) };
            (pos, ix.segments())
        };
        let Some(_latch) = self.latches.read(pos.block) else {
            return Ok(SegmentRead::Reclaimed);
        };
        let block_bytes = store.block_bytes() as u64;
        let map = self
            .map
            .as_ref()
            .and_then(|m| m.get(&*self.file, u64::from(self.blocks) * block_bytes, segments));
        store
            .with_segment(&*self.file, self.file_id, map.map(|m| (m, number)), pos, f)
            .map(SegmentRead::Read)
    }

    /// The lookup step in the block a merge is still filling: only fence-only levels are
    /// read there (the data level's tail holds only keys beyond the wavefront). `None`: the
    /// block is no longer the one being filled but was written and indexed since the caller
    /// read the index (the writer indexes a block before it starts the next one, under the
    /// tail's mutex, which is taken here before the index: `level/writer.rs`), so the caller
    /// reads it again. A lookup that came here after that read raced the writer; before this
    /// answer it reported the level damaged (seen once in a 10M-key `scale` run).
    fn lookup_in_tail(
        &self,
        store: &BlockStore,
        block: u32,
        key: &[u8],
    ) -> Result<Option<LevelHit>> {
        let corrupt = |reason: &str| store.corruption(&*self.file, block, 0, reason.to_string());
        let Some(tail) = &self.tail else {
            return Err(corrupt("fence points past the written blocks of the level"));
        };
        let tail = tail.lock();
        if tail.block != Some(block) {
            if block < self.index.read().blocks() {
                return Ok(None);
            }
            return Err(corrupt("fence points past the block being written"));
        }
        let end = tail.fences.partition_point(|(k, _)| &**k <= key);
        match end.checked_sub(1) {
            Some(i) => Ok(Some(LevelHit::Next(Some(tail.fences[i].1)))),
            None => Err(corrupt("block being written has no fence <= the key (I2)")),
        }
    }

    /// Starts loading the cache line of this level's filter that a lookup of `hash` will
    /// probe (`lamina_storage::prefetch`): a lookup prefetches every run's and level's line
    /// first, so their misses overlap. Finished levels only (a growing level's index is
    /// behind a lock).
    #[inline]
    pub fn prefetch_filter(&self, hash: u64) {
        if let IndexRef::Fixed(ix) = &self.index
            && self.holds_data
        {
            ix.bloom().prefetch(hash);
        }
    }

    /// Memory held by the index (and the tail).
    pub fn memory_bytes(&self) -> u64 {
        self.index.read().memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use lamina_storage::MemoryStorage;

    use super::{BlockStore, LevelHit};
    use crate::format::entry::{BlockPtr, EntryRef};
    use crate::level::writer::{LevelWriter, Visibility};
    use crate::options::FdTreeOptions;
    use crate::store::FileKind;

    /// A lookup that read the index before the writer indexed block `b` and looks at the
    /// tail after the writer started block `b + 1` goes back to the index (it used to
    /// report the level damaged); a block past the tail is still damage.
    #[test]
    fn a_lookup_that_missed_a_block_being_indexed_reads_it_from_the_index() {
        let options = FdTreeOptions {
            block_bytes: 512,
            segment_bytes: 512,
            key_bytes_max: 8,
            value_bytes_max: 8,
            ..Default::default()
        };
        let params = options.params().unwrap();
        let store = BlockStore::new(Arc::new(MemoryStorage::new()), &params);
        let file = store.create(7, FileKind::Level).unwrap();
        let mut w = LevelWriter::new(&store, &params, 2, 7, file, 0, Visibility::Fences);
        let view = w.view();
        let below = |i: u32| BlockPtr { file: 9, index: i };
        for block in 0..2u8 {
            w.start_block(Some(EntryRef::Fence {
                key: &[block, 0],
                ptr: below(2 * u32::from(block)),
            }))
            .unwrap();
            w.push(EntryRef::Fence { key: &[block, 5], ptr: below(2 * u32::from(block) + 1) });
        }
        // Block 1 is the tail: a lookup there reads its fences.
        assert_eq!(
            view.lookup_in_tail(&store, 1, &[1, 7]).unwrap(),
            Some(LevelHit::Next(Some(below(3))))
        );
        // The writer indexes block 1 and starts block 2.
        w.start_block(Some(EntryRef::Fence { key: &[2, 0], ptr: below(4) })).unwrap();
        assert_eq!(view.lookup_in_tail(&store, 1, &[1, 7]).unwrap(), None);
        assert_eq!(
            view.lookup(&store, Some(1), &[1, 7], 0).unwrap(),
            LevelHit::Next(Some(below(3)))
        );
        let err = view.lookup_in_tail(&store, 5, &[1, 7]).unwrap_err();
        assert!(err.to_string().contains("past the block being written"), "{err}");
    }

    /// An `L_0` run's filter is sized at the run's bits per key, a level's at the
    /// configured bits (`options.rs`, `RUN_BLOOM_EXTRA_BITS_PER_KEY`).
    #[test]
    fn a_runs_filter_has_more_bits_than_a_levels() {
        let params = FdTreeOptions::default().params().unwrap();
        let store = BlockStore::new(Arc::new(MemoryStorage::new()), &params);
        let filter_bytes = |label: usize, id: u32| {
            let file = store.create(id, FileKind::Level).unwrap();
            let w =
                LevelWriter::new(&store, &params, label, id, file, 102_400, Visibility::Private);
            w.view().index.read().bloom().memory_bytes()
        };
        let (run, level) = (filter_bytes(0, 1), filter_bytes(1, 2));
        assert_eq!(run * 10, level * 16, "run {run} bytes, level {level} bytes");
    }
}
