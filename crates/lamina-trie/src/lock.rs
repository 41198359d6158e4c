//! The per-node write lock (paper section 2: "adding a single lock to each internal node.
//! We decided to use spinlocks ... they occupy only 4 Byte of memory").
//!
//! Only writers take it, and a writer takes exactly one at a time: the lock of the one
//! inner node whose slot it changes. Readers never look at it.

use crate::sync::{AtomicU32, Backoff, Ordering};

/// A 4-byte test-and-test-and-set lock with spin-then-yield backoff.
#[derive(Debug, Default)]
pub(crate) struct NodeLock {
    word: AtomicU32,
}

/// Holding the lock; unlocks on drop.
#[derive(Debug)]
pub(crate) struct NodeLockGuard<'a> {
    lock: &'a NodeLock,
}

impl NodeLock {
    const UNLOCKED: u32 = 0;
    const LOCKED: u32 = 1;

    pub(crate) fn new() -> Self {
        NodeLock { word: AtomicU32::new(Self::UNLOCKED) }
    }

    /// Acquires the lock. Acquire ordering: everything the previous holder did under the
    /// lock is visible to the new holder.
    pub(crate) fn lock(&self) -> NodeLockGuard<'_> {
        let mut backoff = Backoff::default();
        loop {
            if self
                .word
                .compare_exchange_weak(
                    Self::UNLOCKED,
                    Self::LOCKED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return NodeLockGuard { lock: self };
            }
            while self.word.load(Ordering::Relaxed) != Self::UNLOCKED {
                backoff.snooze();
            }
        }
    }
}

impl Drop for NodeLockGuard<'_> {
    fn drop(&mut self) {
        let previous = self.lock.word.swap(NodeLock::UNLOCKED, Ordering::Release);
        debug_assert_eq!(previous, NodeLock::LOCKED, "unlocking a node lock nobody held");
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests {
    use super::*;

    #[test]
    fn lock_excludes_other_threads() {
        struct Shared<'a>(&'a std::cell::UnsafeCell<u64>);
        // SAFETY: every access to the cell below happens while holding `lock`.
        unsafe impl Sync for Shared<'_> {}
        let lock = NodeLock::new();
        let counter = std::cell::UnsafeCell::new(0u64);
        let shared = Shared(&counter);
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (lock, shared) = (&lock, &shared);
                s.spawn(move || {
                    for _ in 0..10_000 {
                        let _held = lock.lock();
                        // SAFETY: the lock is held, so no other thread touches the cell.
                        unsafe { *shared.0.get() += 1 };
                    }
                });
            }
        });
        assert_eq!(counter.into_inner(), 40_000);
    }
}
