//! [`HookedStorage`]: a storage that forwards every call to another, first calling a hook
//! with the file's name and the operation of each read, write and sync. Tests use it to
//! hold a thread inside one storage operation (a gate) and check what other threads can do
//! meanwhile, without timing.

use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::Result;

use crate::backend::{OpenMode, Storage, StorageFile};

/// The operation a hook is called for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// `read_exact_at`.
    Read,
    /// `write_all_at`.
    Write,
    /// `sync_data`.
    Sync,
}

/// Called with the file's name and the operation, before it is forwarded (it may block).
pub type Hook = Arc<dyn Fn(&str, FileOp) + Send + Sync>;

/// A storage whose files call a [`Hook`] before each read, write and sync (module doc).
pub struct HookedStorage {
    inner: Arc<dyn Storage>,
    hook: Hook,
}

impl std::fmt::Debug for HookedStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookedStorage").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl HookedStorage {
    /// `inner` with `hook` called before each file read, write and sync.
    pub fn new(inner: Arc<dyn Storage>, hook: Hook) -> Self {
        HookedStorage { inner, hook }
    }
}

struct HookedFile {
    inner: Arc<dyn StorageFile>,
    hook: Hook,
}

impl std::fmt::Debug for HookedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookedFile").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl Storage for HookedStorage {
    fn open(&self, name: &str, mode: OpenMode) -> Result<Arc<dyn StorageFile>> {
        let inner = self.inner.open(name, mode)?;
        Ok(Arc::new(HookedFile { inner, hook: self.hook.clone() }))
    }
    fn remove(&self, name: &str) -> Result<()> {
        self.inner.remove(name)
    }
    fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn list(&self) -> Result<Vec<String>> {
        self.inner.list()
    }
    fn exists(&self, name: &str) -> Result<bool> {
        self.inner.exists(name)
    }
    fn sync_dir(&self) -> Result<()> {
        self.inner.sync_dir()
    }
    fn io_stats(&self) -> lamina_core::IoStats {
        self.inner.io_stats()
    }
    fn path_of(&self, name: &str) -> PathBuf {
        self.inner.path_of(name)
    }
    fn lockstep(&self) -> bool {
        self.inner.lockstep()
    }
}

impl StorageFile for HookedFile {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        (self.hook)(self.name(), FileOp::Read);
        self.inner.read_exact_at(offset, buf)
    }
    fn write_all_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        (self.hook)(self.name(), FileOp::Write);
        self.inner.write_all_at(offset, data)
    }
    fn len(&self) -> Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> Result<()> {
        (self.hook)(self.name(), FileOp::Sync);
        self.inner.sync_data()
    }
    fn punch_hole(&self, offset: u64, len: u64) -> Result<()> {
        self.inner.punch_hole(offset, len)
    }
    fn allocated_bytes(&self) -> Result<u64> {
        self.inner.allocated_bytes()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::MemoryStorage;

    /// Every read, write and sync reaches the hook, named, and is forwarded.
    #[test]
    fn the_hook_sees_each_read_write_and_sync() {
        let seen: Arc<Mutex<Vec<(String, FileOp)>>> = Arc::default();
        let log = seen.clone();
        let hook: Hook = Arc::new(move |name, op| log.lock().unwrap().push((name.into(), op)));
        let storage = HookedStorage::new(Arc::new(MemoryStorage::new()), hook);
        let file = storage.open("f", OpenMode::CreateNew).unwrap();
        file.write_all_at(0, b"abc").unwrap();
        file.sync_data().unwrap();
        let mut buf = [0u8; 3];
        file.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"abc");
        let ops: Vec<FileOp> = seen.lock().unwrap().iter().map(|(_, op)| *op).collect();
        assert_eq!(ops, [FileOp::Write, FileOp::Sync, FileOp::Read]);
        assert!(seen.lock().unwrap().iter().all(|(name, _)| name == "f"));
    }
}
