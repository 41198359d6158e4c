//! Lookup, exactly as section 2.2 / Algorithm 2: top-down through the materialized levels,
//! stopping at the first level holding a data entry for the key; otherwise follow the fence
//! with the largest key `<= key` (found in the same block, footnote 4) to the next
//! materialized level. At most one block read per materialized disk level.
//!
//! Locking (section 4.3): the lookup reads `L_0` (and, during an FD+FC merge, `L_0^old` and
//! the wavefront fence) under the tree lock, which plays the paper's `L_0` mutex, takes the
//! shared latch of the first disk block before that lock is released
//! ([`Tree::start_lookup`]), and then descends with tree-based latch coupling: the latch of
//! the block in the next level is taken before the current one is released
//! ([`Descent::finish`]). During an FD+FC merge the key is compared with the wavefront key
//! (I7): a larger key searches `L_0^new` without following its fences, then `L_0^old` and
//! through it the old upper levels and the below-merge levels; a key no greater searches
//! `L_0^new` and through it the new upper levels and the below-merge levels.

use lamina_core::Result;

use crate::entry::BlockPtr;
use crate::latch::SharedLatch;
use crate::level::DiskLevel;
use crate::probe::DataHit;
use crate::store::BlockStore;
use crate::tree::Tree;

/// A lookup after its `L_0` part.
pub(crate) enum Lookup {
    /// Decided in `L_0` (or there is no disk level).
    Done(Option<Vec<u8>>),
    /// Continues into the disk levels, holding the first block's shared latch.
    Descend(Descent),
}

/// The disk part of a lookup: owns what it needs, so the tree lock can be released.
pub(crate) struct Descent {
    store: BlockStore,
    levels: Vec<DiskLevel>,
    ptr: BlockPtr,
    latch: SharedLatch,
}

impl Tree {
    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.start_lookup(key)? {
            Lookup::Done(v) => Ok(v),
            Lookup::Descend(d) => d.finish(key),
        }
    }

    /// The `L_0` part of a lookup (under the tree lock): decides it, or returns the levels
    /// to search and the first block, whose shared latch is taken before returning.
    pub(crate) fn start_lookup(&self, key: &[u8]) -> Result<Lookup> {
        // L_0 (L_0^new during a merge): cases 2/4 return the insert entry, case 3 "absent".
        if let Some(slot) = self.top.slot(key) {
            return Ok(Lookup::Done(slot.insert.clone()));
        }
        let (levels, ptr) = if let Some(fc) = &self.fc
            && key > fc.wavefront_key.as_slice()
        {
            // FD+FC, key beyond the wavefront: L_0^old, then the old levels.
            if let Some(slot) = fc.old_top.slot(key) {
                return Ok(Lookup::Done(slot.insert.clone()));
            }
            let ptr = fc.old_top.fence_at_or_before(key).map(|(_, p)| p).or(fc.wavefront_ptr);
            (&fc.old_levels, ptr)
        } else if let Some(old) = &self.frozen_top {
            // FD+DS during a merge: L_0^new (above) is searched without following fences,
            // then L_0^old and through it the old levels (section 3).
            if let Some(slot) = old.slot(key) {
                return Ok(Lookup::Done(slot.insert.clone()));
            }
            (&self.levels, old.fence_at_or_before(key).map(|(_, p)| p))
        } else {
            (&self.levels, self.top.fence_at_or_before(key).map(|(_, p)| p))
        };
        let Some(first) = levels.first() else {
            return Ok(Lookup::Done(None)); // h = 1: L_0 is the bottom level.
        };
        let Some(ptr) = ptr else {
            return Err(self.store.corruption(&*first.file, 0, "L_0 has no -infinity fence"));
        };
        let latch = latch_block(&self.store, first, ptr)?;
        Ok(Lookup::Descend(Descent {
            store: self.store.clone(),
            levels: levels.clone(),
            ptr,
            latch,
        }))
    }
}

impl Descent {
    /// Algorithm 2 through the disk levels with latch coupling.
    pub(crate) fn finish(self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let Descent { store, levels, mut ptr, mut latch } = self;
        let last = levels.len() - 1;
        for (i, level) in levels.iter().enumerate() {
            let probe = level.probe(&store, ptr, key)?;
            match probe.data {
                DataHit::Insert(value) => return Ok(Some(value)),
                DataHit::Delete => return Ok(None),
                DataHit::None if i == last => return Ok(None), // case 1 in the bottom level
                DataHit::None => {}
            }
            ptr = probe.fence.ok_or_else(|| {
                store.corruption(
                    &*level.file,
                    ptr.index,
                    "block of a non-bottom level has no fence <= the key (I2)",
                )
            })?;
            // Coupling: the next block's latch before the current one is released.
            let next = latch_block(&store, &levels[i + 1], ptr)?;
            latch = next;
        }
        drop(latch);
        Ok(None)
    }
}

/// The shared latch of block `ptr` of `level` (an error if the block was never started).
fn latch_block(store: &BlockStore, level: &DiskLevel, ptr: BlockPtr) -> Result<SharedLatch> {
    if ptr.file != level.file_id {
        return Err(store.corruption(
            &*level.file,
            ptr.index,
            format!(
                "fence points to file {} but level {} is file {}",
                ptr.file, level.label, level.file_id
            ),
        ));
    }
    level.shared.read(ptr.index).ok_or_else(|| {
        store.corruption(
            &*level.file,
            ptr.index,
            format!(
                "fence points past the {} blocks of level {}",
                level.block_count(),
                level.label
            ),
        )
    })
}
