//! The leaf lock (section 4.4, "Selective concurrency", with optimistic locking in place of
//! HTM): an 8-byte version word in the leaf's first line. Even = free, odd = held. A writer
//! takes it with a compare-and-swap from an even value to the next odd one and releases it
//! by storing the next even value, so every write makes the version move on by two. A reader
//! reads the leaf without taking it: it reads an even version, reads the leaf, and keeps what
//! it read only if the version is unchanged (Algorithm 1 under optimistic locking: no writer
//! held the leaf, nor took and released it, while the reader read it).
//!
//! The protocol is generic over the word ([`VersionWord`]) so that `tests/leaf_lock_shuttle.rs`
//! runs this code, not a copy, under shuttle's schedulers. The leaves use the region's
//! `AtomicU64` words (`Leaf::try_lock`, `Leaf::unlock`, `store::read_optimistic`). Orderings:
//! the lock is taken with `AcqRel` and released with `Release`, so a reader's `Acquire` load
//! of an even version sees every record store made before the release that wrote it.

use std::sync::atomic::Ordering;

use crate::inner::VersionWord;

/// Takes the lock if it is free (even), returning whether it did.
pub fn try_lock<W: VersionWord>(word: &W) -> bool {
    let v = word.load(Ordering::Acquire);
    v.is_multiple_of(2)
        && word.compare_exchange(v, v.wrapping_add(1), Ordering::AcqRel, Ordering::Acquire).is_ok()
}

/// Releases the lock held by the caller (the version becomes even and one higher).
///
/// # Panics
/// If the lock is not held (an even version): a caller bug that would let two writers in.
pub fn unlock<W: VersionWord>(word: &W) {
    let v = word.load(Ordering::Acquire);
    assert!(!v.is_multiple_of(2), "unlocking a leaf that is not locked");
    word.store(v.wrapping_add(1), Ordering::Release);
}

/// Runs `read` optimistically: `None` when the lock was held before the read or the version
/// changed during it (the caller starts over; what `read` returned is dropped); otherwise
/// what `read` returned and the version it was read at.
pub fn read_optimistic<W: VersionWord, T>(word: &W, read: impl FnOnce() -> T) -> Option<(T, u64)> {
    let version = word.load(Ordering::Acquire);
    if !version.is_multiple_of(2) {
        return None;
    }
    let result = read();
    (word.load(Ordering::Acquire) == version).then_some((result, version))
}
