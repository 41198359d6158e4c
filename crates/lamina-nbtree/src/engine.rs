//! PLACEHOLDER engine with the final public API (an in-memory map, nothing persisted): lets
//! the facade, CLI, C API and bench be wired while the real engine is written.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use lamina_core::limits::{check_cas, check_key, check_scan_limit, check_value};
use lamina_core::{
    BatchOp, CasOutcome, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch,
};
use lamina_storage::{FileOptions, FileStorage, Storage};
use parking_lot::RwLock;

use crate::options::NbTreeOptions;

/// The `nbtree` engine.
#[derive(Debug)]
pub struct NbTree {
    map: RwLock<Option<BTreeMap<Vec<u8>, Vec<u8>>>>,
}

impl NbTree {
    /// A volatile tree: nothing survives `close`.
    pub fn volatile(options: &NbTreeOptions) -> Result<NbTree> {
        options.validate()?;
        Ok(NbTree { map: RwLock::new(Some(BTreeMap::new())) })
    }

    /// Opens (or creates, per `options.intent`) the persistent tree stored in `storage`.
    pub fn open(storage: Arc<dyn Storage>, options: &NbTreeOptions) -> Result<NbTree> {
        let _ = storage;
        Self::volatile(options)
    }

    /// Opens the persistent tree in directory `path` with the file backend.
    pub fn open_dir(path: impl AsRef<Path>, options: &NbTreeOptions) -> Result<NbTree> {
        let storage = FileStorage::open_dir(path, FileOptions::default())?;
        Self::open(Arc::new(storage), options)
    }

    /// Checks every invariant of the tree.
    pub fn verify(&self) -> Result<()> {
        Ok(())
    }

    /// Waits until no flush work is pending.
    pub fn wait_for_flushes(&self) -> Result<()> {
        Ok(())
    }

    fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<Vec<u8>, Vec<u8>>) -> R) -> Result<R> {
        Ok(f(self.map.write().as_mut().ok_or(Error::Closed)?))
    }
}

impl OrderedIndex for NbTree {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        self.with(|m| m.get(key).cloned())
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.with(|m| drop(m.insert(key.to_vec(), value.to_vec())))
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        self.with(|m| m.remove(key).is_some())
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        check_cas(key, expected, new)?;
        self.with(|m| {
            let current = m.get(key).cloned();
            if current.as_deref() != expected {
                return CasOutcome::Mismatch { current };
            }
            match new {
                Some(v) => drop(m.insert(key.to_vec(), v.to_vec())),
                None => drop(m.remove(key)),
            }
            CasOutcome::Swapped
        })
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        self.with(|m| {
            m.iter()
                .filter(|(k, _)| range.contains(k))
                .take(limit)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        self.with(|m| {
            for op in batch.ops() {
                match op {
                    BatchOp::Put { key, value } => drop(m.insert(key.clone(), value.clone())),
                    BatchOp::Delete { key } => drop(m.remove(key)),
                }
            }
        })
    }

    fn sync(&self) -> Result<()> {
        self.with(|_| ())
    }

    fn stats(&self) -> Stats {
        Stats::new("nbtree")
    }

    fn close(&self) -> Result<()> {
        *self.map.write() = None;
        Ok(())
    }
}
