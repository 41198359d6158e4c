//! A cache frame (one resident block), the pin handle and the owned latch guards.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};

use parking_lot::{ArcRwLockReadGuard, ArcRwLockWriteGuard, RawRwLock, RwLock};

use super::types::{BlockKey, USAGE_MAX};

/// The frame is being filled by the thread holding its write latch.
pub(super) const STATE_LOADING: u8 = 0;
/// The frame holds the block's content.
pub(super) const STATE_VALID: u8 = 1;
/// The load failed; the frame is no longer in the index and must not be used.
pub(super) const STATE_FAILED: u8 = 2;

/// Most pins one frame can carry; a limit so the counter cannot wrap.
const PINS_MAX: u32 = u32::MAX / 2;

/// One resident block. Shared between the cache's index and the pins handed out.
pub(super) struct Frame {
    pub(super) key: BlockKey,
    /// Live [`PinnedBlock`] handles (guards hold one each). Raised from 0 only under the
    /// cache's index lock (shared), while eviction holds it exclusive, so a frame with no pin seen by the
    /// evictor cannot gain one concurrently.
    pins: AtomicU32,
    /// CLOCK usage count, 0..=USAGE_MAX.
    usage: AtomicU8,
    state: AtomicU8,
    pub(super) data: Arc<RwLock<Box<[u8]>>>,
}

impl Frame {
    pub(super) fn new(key: BlockKey, block_bytes: usize) -> Self {
        Frame {
            key,
            pins: AtomicU32::new(0),
            usage: AtomicU8::new(0),
            state: AtomicU8::new(STATE_LOADING),
            data: Arc::new(RwLock::new(vec![0u8; block_bytes].into_boxed_slice())),
        }
    }

    pub(super) fn pins(&self) -> u32 {
        self.pins.load(Ordering::Acquire)
    }

    pub(super) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    pub(super) fn set_state(&self, state: u8) {
        self.state.store(state, Ordering::Release);
    }

    pub(super) fn usage(&self) -> u8 {
        self.usage.load(Ordering::Relaxed)
    }

    pub(super) fn promote(&self) {
        // A racy increment is fine: usage is a hint, bounded by the saturating update.
        let _ = self.usage.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
            (u < USAGE_MAX).then_some(u + 1)
        });
    }

    pub(super) fn reset_usage(&self) {
        self.usage.store(0, Ordering::Relaxed);
    }

    pub(super) fn demote(&self) {
        let _ = self.usage.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| u.checked_sub(1));
    }

    /// A new pin. Callers hold the cache's index lock or an existing pin.
    pub(super) fn pin(self: &Arc<Self>) -> PinnedBlock {
        let before = self.pins.fetch_add(1, Ordering::AcqRel);
        assert!(before < PINS_MAX, "block {:?} pinned {before} times", self.key);
        PinnedBlock { frame: Arc::clone(self) }
    }
}

impl fmt::Debug for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frame")
            .field("key", &self.key)
            .field("pins", &self.pins())
            .field("usage", &self.usage())
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// A pinned block: never evicted while this handle (or a clone, or a guard from it) lives.
/// Dropping the last one unpins the block.
pub struct PinnedBlock {
    frame: Arc<Frame>,
}

impl PinnedBlock {
    /// The block's key.
    pub fn key(&self) -> BlockKey {
        self.frame.key
    }

    /// Takes the block's latch shared (waits while a writer holds it).
    pub fn read(&self) -> BlockReadGuard {
        BlockReadGuard { guard: self.frame.data.read_arc(), pin: self.clone() }
    }

    /// Takes the block's latch exclusive (waits for readers and writers to leave).
    pub fn write(&self) -> BlockWriteGuard {
        BlockWriteGuard { guard: self.frame.data.write_arc(), pin: self.clone() }
    }

    /// Takes the latch shared if no writer holds it.
    pub fn try_read(&self) -> Option<BlockReadGuard> {
        let guard = self.frame.data.try_read_arc()?;
        Some(BlockReadGuard { guard, pin: self.clone() })
    }

    /// Takes the latch exclusive if nobody holds it.
    pub fn try_write(&self) -> Option<BlockWriteGuard> {
        let guard = self.frame.data.try_write_arc()?;
        Some(BlockWriteGuard { guard, pin: self.clone() })
    }

    pub(super) fn frame(&self) -> &Arc<Frame> {
        &self.frame
    }
}

impl Clone for PinnedBlock {
    fn clone(&self) -> Self {
        // Holding a pin, so the count is > 0 and eviction cannot race this increment.
        self.frame.pin()
    }
}

impl Drop for PinnedBlock {
    fn drop(&mut self) {
        let before = self.frame.pins.fetch_sub(1, Ordering::AcqRel);
        assert!(before > 0, "unpin of unpinned block {:?}", self.frame.key);
    }
}

impl fmt::Debug for PinnedBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBlock").field("frame", &self.frame).finish()
    }
}

/// Shared latch on a block's bytes; keeps the block pinned.
pub struct BlockReadGuard {
    guard: ArcRwLockReadGuard<RawRwLock, Box<[u8]>>,
    pin: PinnedBlock,
}

impl BlockReadGuard {
    /// The block's key.
    pub fn key(&self) -> BlockKey {
        self.pin.key()
    }
}

impl Deref for BlockReadGuard {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.guard
    }
}

impl fmt::Debug for BlockReadGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockReadGuard").field("key", &self.pin.key()).finish_non_exhaustive()
    }
}

/// Exclusive latch on a block's bytes; keeps the block pinned. Changes made through it are
/// visible to later readers of the cache only: the engine writes the block to storage itself
/// (the cache is read-through, see the module doc).
pub struct BlockWriteGuard {
    guard: ArcRwLockWriteGuard<RawRwLock, Box<[u8]>>,
    pin: PinnedBlock,
}

impl BlockWriteGuard {
    /// The block's key.
    pub fn key(&self) -> BlockKey {
        self.pin.key()
    }
}

impl Deref for BlockWriteGuard {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.guard
    }
}

impl DerefMut for BlockWriteGuard {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.guard
    }
}

impl fmt::Debug for BlockWriteGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockWriteGuard").field("key", &self.pin.key()).finish_non_exhaustive()
    }
}
