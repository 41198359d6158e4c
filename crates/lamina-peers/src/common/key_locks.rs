//! Striped per-key locks, for peers whose API has no read-modify-write transaction
//! (RocksDB's plain DB and LevelDB). Every write of such a peer holds the stripes of its keys,
//! so a compare-and-swap's read and write, or a delete's existence check and removal, cannot
//! interleave with another write of the same key. Reads take no lock: the library makes
//! each write visible at one instant.

use parking_lot::{Mutex, MutexGuard};

/// Number of stripes: enough that 32 client threads rarely share one.
pub(crate) const STRIPES: usize = 1024;

/// A fixed table of mutexes indexed by a hash of the key.
#[derive(Debug)]
pub(crate) struct KeyLocks {
    stripes: Box<[Mutex<()>]>,
}

impl KeyLocks {
    pub(crate) fn new() -> Self {
        KeyLocks { stripes: (0..STRIPES).map(|_| Mutex::new(())).collect() }
    }

    fn stripe_of(key: &[u8]) -> usize {
        lamina_core::checksum::crc32c(key) as usize % STRIPES
    }

    /// Locks the stripe of `key`.
    pub(crate) fn lock(&self, key: &[u8]) -> MutexGuard<'_, ()> {
        self.stripes[Self::stripe_of(key)].lock()
    }

    /// Locks the stripes of all `keys`, in ascending stripe order (so two batches cannot
    /// deadlock), each once.
    pub(crate) fn lock_all<'k>(
        &self,
        keys: impl Iterator<Item = &'k [u8]>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut stripes: Vec<usize> = keys.map(Self::stripe_of).collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes.into_iter().map(|s| self.stripes[s].lock()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_all_takes_each_stripe_once() {
        let locks = KeyLocks::new();
        let keys: Vec<&[u8]> = vec![b"a", b"a", b"b"];
        let guards = locks.lock_all(keys.into_iter());
        assert!(guards.len() <= 2 && !guards.is_empty());
        drop(guards);
        drop(locks.lock(b"a"));
    }
}
