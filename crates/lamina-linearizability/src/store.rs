//! What a history is recorded on: the four single-key calls, implemented by `lamina::Db`
//! (every engine), and by two deliberately broken wrappers that show the recorder and
//! checker catch a store that is not linearizable: [`StaleReads`] and [`NonAtomicCas`].

use std::collections::HashMap;
use std::sync::Mutex;

use lamina::{CasOutcome, Db, Result, WriteBatch};

/// The single-key operations of `lamina_core::OrderedIndex`.
pub trait Store: Sync {
    /// The value of `key`.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Sets `key` to `value`.
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    /// Removes `key`; whether it existed.
    fn delete(&self, key: &[u8]) -> Result<bool>;
    /// Sets `key` to `new` if it holds `expected`.
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome>;
    /// Applies `batch` (only the filler uses batches: they are not single-key operations
    /// and are not recorded).
    fn write_batch(&self, batch: &WriteBatch) -> Result<()>;
}

impl Store for Db {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Db::get(self, key)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Db::put(self, key, value)
    }
    fn delete(&self, key: &[u8]) -> Result<bool> {
        Db::delete(self, key)
    }
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        Db::compare_and_swap(self, key, expected, new)
    }
    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        Db::write_batch(self, batch)
    }
}

impl<S: Store + ?Sized> Store for &S {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        (**self).get(key)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        (**self).put(key, value)
    }
    fn delete(&self, key: &[u8]) -> Result<bool> {
        (**self).delete(key)
    }
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        (**self).compare_and_swap(key, expected, new)
    }
    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        (**self).write_batch(batch)
    }
}

/// A key's value as last read, and how many gets it has served since.
type Snapshot = (Option<Vec<u8>>, u32);

/// Serves gets from a per-key snapshot refreshed only every [`StaleReads::REFRESH_EVERY`]
/// gets of that key (writes go through): the kind of bug a read cache with a missing
/// invalidation has. Not linearizable; the engine tests must say so.
#[derive(Debug)]
pub struct StaleReads<S> {
    inner: S,
    snapshots: Mutex<HashMap<Vec<u8>, Snapshot>>,
}

impl<S> StaleReads<S> {
    /// Gets of one key served from its snapshot before it is read again.
    pub const REFRESH_EVERY: u32 = 8;

    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        StaleReads { inner, snapshots: Mutex::new(HashMap::new()) }
    }
}

impl<S: Store> Store for StaleReads<S> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut snapshots = self.snapshots.lock().unwrap();
        if let Some((value, served)) = snapshots.get_mut(key)
            && *served < Self::REFRESH_EVERY
        {
            *served += 1;
            return Ok(value.clone());
        }
        let value = self.inner.get(key)?;
        snapshots.insert(key.to_vec(), (value.clone(), 0));
        Ok(value)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.inner.put(key, value)
    }
    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.inner.delete(key)
    }
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.inner.compare_and_swap(key, expected, new)
    }
    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        // Writes go through: the snapshots may now be stale, which is the point.
        self.inner.write_batch(batch)
    }
}

/// Compare-and-swap done as a get, a pause, then a put or delete, without a lock: two
/// concurrent swaps from one expected value can both succeed (a lost update). Not
/// linearizable; the engine tests must say so.
#[derive(Debug)]
pub struct NonAtomicCas<S> {
    inner: S,
}

impl<S> NonAtomicCas<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        NonAtomicCas { inner }
    }
}

impl<S: Store> Store for NonAtomicCas<S> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.inner.put(key, value)
    }
    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.inner.delete(key)
    }
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        let current = self.inner.get(key)?;
        if current.as_deref() != expected {
            return Ok(CasOutcome::Mismatch { current });
        }
        // Widen the window between the comparison and the write, as a slow path would.
        std::thread::yield_now();
        match new {
            Some(value) => self.inner.put(key, value)?,
            None => {
                self.inner.delete(key)?;
            }
        }
        Ok(CasOutcome::Swapped)
    }
    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        self.inner.write_batch(batch)
    }
}
