//! Per-node version locks for optimistic lock coupling (Leis, Haubenschild, Kemper and
//! Neumann, "The ART of practical synchronization", DaMoN 2016), standing in for the FPTree's
//! HTM transactions on a machine without TSX.
//!
//! A version word is `counter << 2 | OBSOLETE | LOCKED`:
//! - readers take no lock: they read the word ([`VersionLock::read`], restarting if it is locked
//!   or obsolete), read the node, and later check the word is unchanged
//!   ([`VersionLock::validate`]);
//! - a writer upgrades from the version it read ([`VersionLock::try_upgrade`]: one CAS, which
//!   fails if anyone wrote the node since), changes the node, and releases with a new counter
//!   ([`WriteLocked::unlock`]), so every reader that read the old version fails validation;
//! - a node taken out of the tree is released obsolete ([`WriteLocked::unlock_obsolete`]):
//!   every later read or upgrade of it fails.
//!
//! The word is behind [`VersionWord`] so that the model tests can put shuttle's atomic in
//! place of `std`'s and explore interleavings of this exact protocol.

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};

/// The atomic 64-bit word a version lock is made of: `std`'s `AtomicU64` in the engine, a
/// model checker's atomic in its tests (which also makes [`VersionWord::schedule_point`] a
/// place where the checker may switch threads).
pub trait VersionWord: Send + Sync + Debug + 'static {
    /// A word holding `value`.
    fn new(value: u64) -> Self;
    /// Atomic load.
    fn load(&self, order: Ordering) -> u64;
    /// Atomic store.
    fn store(&self, value: u64, order: Ordering);
    /// Atomic compare-and-exchange (strong).
    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64>;
    /// Called before each access to a node's content pointer, where a model checker should
    /// be allowed to switch threads (those accesses are not version-word operations).
    fn schedule_point() {}
    /// Called before an optimistic operation starts over.
    fn backoff() {
        std::thread::yield_now();
    }
}

impl VersionWord for AtomicU64 {
    fn new(value: u64) -> Self {
        AtomicU64::new(value)
    }

    fn load(&self, order: Ordering) -> u64 {
        AtomicU64::load(self, order)
    }

    fn store(&self, value: u64, order: Ordering) {
        AtomicU64::store(self, value, order);
    }

    fn compare_exchange(
        &self,
        current: u64,
        new: u64,
        success: Ordering,
        failure: Ordering,
    ) -> Result<u64, u64> {
        AtomicU64::compare_exchange(self, current, new, success, failure)
    }
}

/// Set while a writer holds the node.
const LOCKED: u64 = 0b01;
/// Set, for good, when the node has left the tree.
const OBSOLETE: u64 = 0b10;
/// What one write adds to the word.
const WRITE_STEP: u64 = 0b100;

/// One node's version lock.
#[derive(Debug)]
pub(crate) struct VersionLock<W> {
    word: W,
}

impl<W: VersionWord> VersionLock<W> {
    pub(crate) fn new() -> Self {
        Self { word: W::new(0) }
    }

    /// The current version, or `None` (restart) if the node is being written or has left
    /// the tree.
    pub(crate) fn read(&self) -> Option<u64> {
        let version = self.word.load(Ordering::Acquire);
        (version & (LOCKED | OBSOLETE) == 0).then_some(version)
    }

    /// Whether nobody wrote the node since `version` was read. Acquire: the reads of the node
    /// made before this check cannot be moved after it (they are Acquire loads themselves).
    pub(crate) fn validate(&self, version: u64) -> bool {
        self.word.load(Ordering::Acquire) == version
    }

    /// Takes the write lock if the node is still at `version` (read with [`Self::read`]).
    pub(crate) fn try_upgrade(&self, version: u64) -> Option<WriteLocked<'_, W>> {
        debug_assert_eq!(version & (LOCKED | OBSOLETE), 0, "upgrade from a readable version");
        self.word
            .compare_exchange(version, version | LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| WriteLocked { lock: self, version, released: false })
    }

    /// Whether a writer holds the lock (for invariant checks on a quiescent tree).
    pub(crate) fn is_locked(&self) -> bool {
        self.word.load(Ordering::Acquire) & LOCKED != 0
    }
}

/// A held write lock. Dropped without an explicit release (a panic between upgrade and
/// release), it releases with a new version, so other threads do not spin on it forever and
/// no reader validates against a content that may have been half replaced.
#[derive(Debug)]
pub(crate) struct WriteLocked<'a, W: VersionWord> {
    lock: &'a VersionLock<W>,
    version: u64,
    released: bool,
}

impl<W: VersionWord> WriteLocked<'_, W> {
    /// Releases after a change: every reader of an older version will fail validation.
    /// Release: the change is visible to whoever reads the new version.
    pub(crate) fn unlock(mut self) {
        self.release(self.version + WRITE_STEP);
    }

    /// Releases a node that has left the tree: it can never be read or locked again.
    pub(crate) fn unlock_obsolete(mut self) {
        self.release((self.version + WRITE_STEP) | OBSOLETE);
    }

    /// Releases without a change (a writer that gave up): readers of `version` stay valid.
    pub(crate) fn unlock_unchanged(mut self) {
        self.release(self.version);
    }

    fn release(&mut self, version: u64) {
        debug_assert!(!self.released);
        self.released = true;
        self.lock.word.store(version, Ordering::Release);
    }
}

impl<W: VersionWord> Drop for WriteLocked<'_, W> {
    fn drop(&mut self) {
        if !self.released {
            self.release(self.version + WRITE_STEP);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Lock = VersionLock<AtomicU64>;

    #[test]
    fn a_write_invalidates_earlier_reads_and_blocks_upgrades_from_them() {
        let lock = Lock::new();
        let before = lock.read().unwrap();
        let held = lock.try_upgrade(before).unwrap();
        assert!(lock.read().is_none(), "a locked node cannot be read");
        assert!(lock.try_upgrade(before).is_none(), "one writer at a time");
        held.unlock();
        assert!(!lock.validate(before));
        assert!(lock.try_upgrade(before).is_none(), "upgrade from a stale version fails");
        let after = lock.read().unwrap();
        assert_ne!(after, before);
        assert!(lock.validate(after));
    }

    #[test]
    fn giving_up_keeps_readers_valid_and_obsolete_is_final() {
        let lock = Lock::new();
        let before = lock.read().unwrap();
        lock.try_upgrade(before).unwrap().unlock_unchanged();
        assert!(lock.validate(before));
        drop(lock.try_upgrade(before).unwrap());
        assert!(!lock.validate(before), "a dropped lock releases as changed");
        let before = lock.read().unwrap();
        lock.try_upgrade(before).unwrap().unlock_obsolete();
        assert!(lock.read().is_none());
        assert!(!lock.validate(before));
    }
}
