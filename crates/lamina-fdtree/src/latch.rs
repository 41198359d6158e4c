//! Per-block readers-writer latches of a disk level and the state they protect (FD+FC,
//! paper section 4.2 "Locks": "for disk-resident levels, we use a readers-writer lock for each
//! block").
//!
//! What a latch of block `i` protects:
//! - its **reclamation**: m-delete (section 4.4.2) x-latches an old block before reclaiming
//!   it, and a lookup s-latches a block before reading it and keeps that latch until it holds
//!   the latch of the block it goes to next (tree-based latch coupling, section 4.3), so no
//!   lookup ever reads a reclaimed block (Remark A.16, Lemma 8);
//! - the **tail**: the last block of a new level while merge-execute fills it in memory
//!   (m-insert buffers one block per level, section 4.4.2). A fence to the tail exists as soon
//!   as the block is started, so lookups read the tail's in-memory payload under the
//!   s-latch; m-insert appends under the x-latch and releases it before it writes the level
//!   above (which is what keeps lookups, going down, and m-insert, going up, deadlock-free:
//!   section 4.5).
//!
//! Invariants (checked by asserts):
//! - blocks `< head` are reclaimed; a latch for every started block exists (`published`);
//! - at most one tail, and it is the last started block;
//! - reclamation only moves `head` forward (m-delete reclaims head blocks, Remark A.5).
//!
//! FD+XM and FD+DS take the same latches (uncontended: their levels never change while
//! readable), so there is one lookup path for all modes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::{Mutex, RawRwLock, RwLock};

/// An owned shared latch of one block (held across the step to the next level).
pub type SharedLatch = parking_lot::lock_api::ArcRwLockReadGuard<RawRwLock, ()>;
/// An owned exclusive latch of one block.
pub type ExclusiveLatch = parking_lot::lock_api::ArcRwLockWriteGuard<RawRwLock, ()>;

/// The block a new level's merge is filling, as an encoded block payload (count, then
/// entries: the format `probe` reads), appended to in place.
#[derive(Debug, Clone)]
pub struct Tail {
    /// Block index.
    pub index: u32,
    /// Payload: `u32` entry count (LE), then the encoded entries.
    pub payload: Vec<u8>,
}

/// Latches and shared state of one level.
#[derive(Debug, Default)]
pub struct LevelShared {
    latches: RwLock<Vec<Arc<RwLock<()>>>>,
    /// Blocks below `head` are reclaimed.
    head: AtomicU32,
    tail: Mutex<Option<Tail>>,
}

impl LevelShared {
    /// State for a level of `blocks` finished blocks.
    pub fn with_blocks(blocks: u32) -> Arc<LevelShared> {
        let latches = (0..blocks).map(|_| Arc::new(RwLock::new(()))).collect();
        Arc::new(LevelShared {
            latches: RwLock::new(latches),
            head: AtomicU32::new(0),
            tail: Mutex::new(None),
        })
    }

    /// Blocks started so far (finished or tail).
    pub fn published(&self) -> u32 {
        u32::try_from(self.latches.read().len()).expect("levels hold fewer than 2^32 blocks")
    }

    /// First block not reclaimed.
    pub fn head(&self) -> u32 {
        self.head.load(Ordering::Acquire)
    }

    /// The latch of block `index`, if the block was started.
    pub fn latch(&self, index: u32) -> Option<Arc<RwLock<()>>> {
        self.latches.read().get(index as usize).cloned()
    }

    /// Takes the shared latch of block `index`.
    pub fn read(&self, index: u32) -> Option<SharedLatch> {
        self.latch(index).map(|l| l.read_arc())
    }

    /// Takes the exclusive latch of block `index`.
    pub fn write(&self, index: u32) -> Option<ExclusiveLatch> {
        self.latch(index).map(|l| l.write_arc())
    }

    /// Starts block `index` (the next one) as the tail with `payload`. The block is not
    /// reachable yet (no fence points to it: m-insert writes bottom-up), so no latch is needed
    /// to set it; the previous tail must have been retired.
    pub fn start_tail(&self, index: u32, payload: Vec<u8>) {
        let mut latches = self.latches.write();
        assert_eq!(latches.len(), index as usize, "blocks are started in order");
        let mut tail = self.tail.lock();
        assert!(tail.is_none(), "one tail at a time");
        assert!(payload.len() >= 4, "a payload starts with its entry count");
        *tail = Some(Tail { index, payload });
        latches.push(Arc::new(RwLock::new(())));
    }

    /// Appends one encoded entry to the tail's payload and bumps its count (the caller holds
    /// the tail's exclusive latch).
    pub fn append_to_tail(&self, index: u32, encoded_entry: &[u8]) {
        let mut tail = self.tail.lock();
        let t = tail.as_mut().expect("a tail is being filled");
        assert_eq!(t.index, index, "the tail is the block being filled");
        let count = u32::from_le_bytes(t.payload[..4].try_into().expect("4 bytes")) + 1;
        t.payload[..4].copy_from_slice(&count.to_le_bytes());
        t.payload.extend_from_slice(encoded_entry);
    }

    /// The tail has been written to disk: reads of it go to disk from now on (the caller
    /// holds its exclusive latch).
    pub fn retire_tail(&self, index: u32) {
        let mut tail = self.tail.lock();
        assert!(tail.as_ref().is_some_and(|t| t.index == index), "retiring the tail");
        *tail = None;
    }

    /// Runs `f` on the in-memory payload of block `index` if it is the tail (the caller holds
    /// the block's latch).
    pub fn with_tail_payload<R>(&self, index: u32, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.tail.lock().as_ref().filter(|t| t.index == index).map(|t| f(&t.payload))
    }

    /// Marks block `index` (the head) reclaimed; the caller holds its exclusive latch.
    pub fn reclaim_head(&self, index: u32) {
        let head = self.head();
        assert_eq!(head, index, "m-delete reclaims head blocks only (Remark A.5)");
        assert!(index < self.published(), "reclaiming a block that was never started");
        self.head.store(index + 1, Ordering::Release);
    }

    /// Sets the head of a level recovered in the middle of an FD+FC merge (blocks before it
    /// were reclaimed before the crash).
    pub fn set_recovered_head(&self, head: u32) {
        assert!(head <= self.published(), "a head within the level");
        self.head.store(head, Ordering::Release);
    }

    /// Marks every block reclaimed (a whole level deleted; the caller x-latched each block).
    pub fn reclaim_all(&self) {
        self.head.store(self.published(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_lifecycle_and_reclamation() {
        let s = LevelShared::with_blocks(2);
        assert_eq!(s.published(), 2);
        s.start_tail(2, vec![0, 0, 0, 0]);
        assert_eq!(s.published(), 3);
        assert_eq!(s.with_tail_payload(2, <[u8]>::len), Some(4));
        assert!(s.with_tail_payload(1, <[u8]>::len).is_none());
        {
            let _x = s.write(2).unwrap();
            s.append_to_tail(2, &[7, 7]);
        }
        assert_eq!(s.with_tail_payload(2, <[u8]>::to_vec), Some(vec![1, 0, 0, 0, 7, 7]));
        s.retire_tail(2);
        assert!(s.with_tail_payload(2, <[u8]>::len).is_none());
        {
            let _x = s.write(0).unwrap();
            s.reclaim_head(0);
        }
        assert_eq!(s.head(), 1);
        s.reclaim_all();
        assert_eq!(s.head(), 3);
        assert!(s.read(3).is_none());
    }

    #[test]
    #[should_panic(expected = "head blocks only")]
    fn reclaiming_out_of_order_is_a_bug() {
        let s = LevelShared::with_blocks(3);
        s.reclaim_head(1);
    }
}
