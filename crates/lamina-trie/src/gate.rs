//! Atomic write batches without locking readers out: a sequence lock over whole batches.
//!
//! The paper's API has no batches; lamina's does, and readers must never observe half of
//! one. Batches are serialized by a mutex and bracket their writes with a version counter
//! that is odd while a batch is being applied. A read (get or scan page) notes the version,
//! reads without locks as usual, and re-checks the version afterwards; if a batch ran in
//! between, the read is retried. After a few failed attempts (or if a batch is running
//! when it starts) the reader takes the batch mutex for one attempt, so it cannot starve.
//!
//! Cost when no batch runs: two loads of a read-mostly cache line per read. Single-key
//! writers never touch the gate. Reads wait only while a batch is in flight, which the
//! contest workload (no batches) never does.
//!
//! Why it works: a batch stores the odd version, then a Release fence, then its slot
//! writes; a reader loads the version (Acquire), its slots (Acquire), an Acquire fence,
//! then the version again. If any slot load observed a batch write (directly, or through a
//! later write ordered after it by a node lock), the fences order the odd store before the
//! second version load, which therefore differs from the first.

use crate::sync::{AtomicU64, Backoff, Mutex, Ordering, fence};

/// Optimistic read attempts before a reader falls back to the batch mutex.
const OPTIMISTIC_READS_MAX: u32 = 4;

/// The batch sequence lock.
#[derive(Debug, Default)]
pub(crate) struct BatchGate {
    version: AtomicU64,
    batches: Mutex<()>,
}

impl BatchGate {
    pub(crate) fn new() -> Self {
        BatchGate { version: AtomicU64::new(0), batches: Mutex::new(()) }
    }

    /// Runs `read` so that its result reflects no batch halfway.
    pub(crate) fn read<R>(&self, mut read: impl FnMut() -> R) -> R {
        let mut backoff = Backoff::default();
        for _ in 0..OPTIMISTIC_READS_MAX {
            let before = self.version.load(Ordering::Acquire);
            if before.is_multiple_of(2) {
                let result = read();
                fence(Ordering::Acquire);
                if self.version.load(Ordering::Relaxed) == before {
                    return result;
                }
            }
            backoff.snooze();
        }
        let _no_batch = self.batches.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        read()
    }

    /// Runs `apply` (a batch's writes) so that readers see all of it or none of it.
    pub(crate) fn write<R>(&self, apply: impl FnOnce() -> R) -> R {
        let _exclusive = self.batches.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let version = self.version.load(Ordering::Relaxed);
        assert!(version.is_multiple_of(2), "batches are serialized by the mutex");
        self.version.store(version + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        // Even again on the way out, also if `apply` panics, so readers are never stuck.
        let _close = CloseBatch { version: &self.version, even: version + 2 };
        apply()
    }
}

struct CloseBatch<'a> {
    version: &'a AtomicU64,
    even: u64,
}

impl Drop for CloseBatch<'_> {
    fn drop(&mut self) {
        self.version.store(self.even, Ordering::Release);
    }
}
