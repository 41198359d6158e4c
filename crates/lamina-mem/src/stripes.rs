//! Striped writer locks: a writer of key K holds stripe(K) from its check (does the key
//! exist? does the CAS match?) until its change is applied. Writers of the same key are thus
//! ordered, so the engine applies each key's operations in sequence-number order (the
//! log's `LiveRecords` contract), while writers of different keys share group commits.

use parking_lot::{Mutex, MutexGuard};

/// Number of stripes. A power of two; 64 keeps collisions between a few dozen writer
/// threads rare.
pub const STRIPES: usize = 64;

/// The stripe locks.
#[derive(Debug)]
pub struct Stripes {
    locks: Box<[Mutex<()>]>,
}

impl Stripes {
    pub fn new() -> Self {
        Stripes { locks: (0..STRIPES).map(|_| Mutex::new(())).collect() }
    }

    fn index(key: &[u8]) -> usize {
        // FNV-1a: cheap and good enough to spread keys over 64 stripes.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in key {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        (hash as usize) & (STRIPES - 1)
    }

    /// Locks the stripe of `key`.
    pub fn lock(&self, key: &[u8]) -> MutexGuard<'_, ()> {
        self.locks[Self::index(key)].lock()
    }

    /// Locks the stripes of all `keys`, in stripe order (so two batches cannot deadlock).
    pub fn lock_many<'k>(&self, keys: impl Iterator<Item = &'k [u8]>) -> Vec<MutexGuard<'_, ()>> {
        let mut indexes: Vec<usize> = keys.map(Self::index).collect();
        indexes.sort_unstable();
        indexes.dedup();
        indexes.into_iter().map(|i| self.locks[i].lock()).collect()
    }

    /// Locks every stripe: no writer is between its check and its apply afterwards.
    pub fn lock_all(&self) -> Vec<MutexGuard<'_, ()>> {
        self.locks.iter().map(Mutex::lock).collect()
    }
}
