//! Block latches of one disk level or run (FD+FC, paper section 4.2 "Locks": a
//! readers-writer lock per disk block), and its reclaimed head.
//!
//! What they protect: the **reclamation** of a block. An FD+FC merge reclaims the blocks of
//! the old levels (and of `L_0^old`'s runs) from the head as its wavefront passes them
//! (section 4.4.2, Remark A.5), and deletes whole levels at its end and in merge-finalize. A
//! lookup that is about to read a block of such a level takes the block's latch shared,
//! checks that the block is not reclaimed, reads it, and releases the latch; m-delete takes
//! the latch exclusively to mark a block reclaimed, and frees its space only after that.
//!
//! Departure from the paper: lookups do not couple latches from level to level. In lamina
//! a lookup finds its way through every level in memory (`format/index.rs`: the fences are
//! kept in memory), so the only thing a reclamation can break is the disk read of a block,
//! and that is what the latch covers. A lookup that finds its block reclaimed restarts from
//! `L_0`: by Remark A.5's rule the block was reclaimed only after the wavefront passed the
//! first key of its successor, which is greater than the lookup's key, so the restarted
//! lookup searches behind the wavefront, in levels this merge does not reclaim.
//!
//! The latches are striped: block `b` uses stripe `b % STRIPES`, so a level of any size has
//! a fixed number of locks. A reader of one block may wait for the reclamation of another
//! block of the same stripe (a few microseconds: a reclamation holds its latch only to move
//! the head).

use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::{RwLock, RwLockReadGuard};

/// Latch stripes per level.
const STRIPES: usize = 64;

/// The latches and the reclaimed head of one level.
#[derive(Debug)]
pub struct BlockLatches {
    stripes: [RwLock<()>; STRIPES],
    /// Blocks below `head` are reclaimed.
    head: AtomicU32,
}

impl Default for BlockLatches {
    fn default() -> Self {
        BlockLatches { stripes: std::array::from_fn(|_| RwLock::new(())), head: AtomicU32::new(0) }
    }
}

/// A shared latch of a block that was not reclaimed when it was taken.
#[derive(Debug)]
pub struct ReadLatch<'a> {
    _guard: RwLockReadGuard<'a, ()>,
}

impl BlockLatches {
    /// First block not reclaimed.
    pub fn head(&self) -> u32 {
        self.head.load(Ordering::Acquire)
    }

    /// The shared latch of block `block` if it is not reclaimed (`None`: it is; the caller
    /// restarts its lookup).
    pub fn read(&self, block: u32) -> Option<ReadLatch<'_>> {
        let guard = self.stripes[block as usize % STRIPES].read();
        (block >= self.head()).then_some(ReadLatch { _guard: guard })
    }

    /// Marks every block before `new_head` reclaimed (m-delete reclaims head blocks only,
    /// Remark A.5), waiting under each block's exclusive latch for the lookups reading it.
    pub fn reclaim_through(&self, new_head: u32) {
        let head = self.head();
        assert!(new_head >= head, "reclamation only moves the head forward");
        for block in head..new_head {
            let _x = self.stripes[block as usize % STRIPES].write();
            self.head.store(block + 1, Ordering::Release);
        }
    }

    /// Marks every block reclaimed (a whole level deleted): each stripe is taken exclusively
    /// once, so lookups in flight on the level finish first.
    pub fn reclaim_all(&self) {
        let guards: Vec<_> = self.stripes.iter().map(RwLock::write).collect();
        self.head.store(u32::MAX, Ordering::Release);
        drop(guards);
    }

    /// Sets the head of a level recovered in the middle of an FD+FC merge (the blocks
    /// before it were reclaimed before the crash).
    pub fn set_recovered_head(&self, head: u32) {
        assert_eq!(self.head(), 0, "a recovered level starts unreclaimed");
        self.head.store(head, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reclaimed_blocks_refuse_latches() {
        let l = BlockLatches::default();
        assert!(l.read(0).is_some());
        l.reclaim_through(3);
        assert_eq!(l.head(), 3);
        assert!(l.read(2).is_none());
        assert!(l.read(3).is_some());
        l.reclaim_all();
        assert!(l.read(1000).is_none());
    }

    #[test]
    fn reclamation_waits_for_readers() {
        let l = std::sync::Arc::new(BlockLatches::default());
        let latch = l.read(0).unwrap();
        let l2 = l.clone();
        let t = std::thread::spawn(move || l2.reclaim_through(1));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(l.head(), 0, "the reader still holds block 0");
        drop(latch);
        t.join().unwrap();
        assert_eq!(l.head(), 1);
    }

    #[test]
    #[should_panic(expected = "forward")]
    fn the_head_never_moves_back() {
        let l = BlockLatches::default();
        l.reclaim_through(2);
        l.reclaim_through(1);
    }
}
