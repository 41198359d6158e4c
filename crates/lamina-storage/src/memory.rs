//! The `memory` backend: files are byte vectors, for fast tests. Everything is "durable" as
//! soon as it is written (there is no crash to survive; use [`crate::FaultyStorage`] for that).
//!
//! Allocation is modelled in pages of [`MEMORY_PAGE_BYTES`]: a file occupies its length
//! (gaps left by writes past the end included) minus the whole pages a `punch_hole` freed and
//! nothing wrote since; [`StorageFile::allocated_bytes`] reports that. The vector itself
//! keeps its size (the zeros are still held in memory): only the count models the device.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::{Error, IoStats, Result};
use parking_lot::{Mutex, RwLock};

use crate::accounting::{AccountingOptions, FileId, IoAccounting};
use crate::backend::{
    OpenMode, Storage, StorageFile, already_exists, check_name, check_punch_range, check_range,
    eof_error, not_found, punch_span,
};

/// Allocation unit of the memory backend's [`StorageFile::allocated_bytes`] model.
pub const MEMORY_PAGE_BYTES: u64 = 4096;

/// A [`Storage`] held in memory.
#[derive(Debug)]
pub struct MemoryStorage {
    files: Mutex<BTreeMap<String, Arc<MemoryFile>>>,
    accounting: Arc<IoAccounting>,
}

/// An open file of a [`MemoryStorage`].
#[derive(Debug)]
pub struct MemoryFile {
    name: String,
    id: FileId,
    data: RwLock<Vec<u8>>,
    /// Page numbers (of [`MEMORY_PAGE_BYTES`]) freed by `punch_hole`, all wholly below the
    /// length; taken after `data` when both are locked.
    holes: Mutex<BTreeSet<u64>>,
    accounting: Arc<IoAccounting>,
}

impl Default for MemoryStorage {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStorage {
    /// An empty storage with default accounting (4 KiB blocks, `host` profile).
    pub fn new() -> Self {
        Self::with_options(AccountingOptions::default()).expect("default options are valid")
    }

    /// An empty storage with the given accounting options.
    pub fn with_options(options: AccountingOptions) -> Result<Self> {
        options.validate()?;
        Ok(MemoryStorage {
            files: Mutex::new(BTreeMap::new()),
            accounting: Arc::new(IoAccounting::new(options)),
        })
    }
}

impl Storage for MemoryStorage {
    fn open(&self, name: &str, mode: OpenMode) -> Result<Arc<dyn StorageFile>> {
        check_name(name)?;
        let mut files = self.files.lock();
        if let Some(file) = files.get(name) {
            if mode == OpenMode::CreateNew {
                return Err(already_exists(format!("creating {name}")));
            }
            return Ok(file.clone());
        }
        if mode == OpenMode::Existing {
            return Err(not_found(format!("opening {name}")));
        }
        let file = Arc::new(MemoryFile {
            name: name.to_owned(),
            id: self.accounting.on_create(),
            data: RwLock::new(Vec::new()),
            holes: Mutex::new(BTreeSet::new()),
            accounting: self.accounting.clone(),
        });
        files.insert(name.to_owned(), file.clone());
        Ok(file)
    }

    fn remove(&self, name: &str) -> Result<()> {
        check_name(name)?;
        let file = self.files.lock().remove(name);
        match file {
            Some(file) => {
                self.accounting.on_remove(file.id);
                Ok(())
            }
            None => Err(not_found(format!("removing {name}"))),
        }
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        check_name(from)?;
        check_name(to)?;
        let mut files = self.files.lock();
        if !files.contains_key(from) {
            return Err(not_found(format!("renaming {from} to {to}")));
        }
        if from == to {
            return Ok(());
        }
        let file = files.remove(from).expect("checked above");
        if let Some(replaced) = files.insert(to.to_owned(), file) {
            self.accounting.on_remove(replaced.id);
        }
        Ok(())
    }

    fn list(&self) -> Result<Vec<String>> {
        Ok(self.files.lock().keys().cloned().collect())
    }

    fn exists(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        Ok(self.files.lock().contains_key(name))
    }

    fn sync_dir(&self) -> Result<()> {
        self.accounting.on_sync();
        Ok(())
    }

    fn io_stats(&self) -> IoStats {
        self.accounting.stats()
    }

    fn path_of(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("mem:{name}"))
    }
}

impl StorageFile for MemoryFile {
    fn name(&self) -> &str {
        &self.name
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        check_range(&self.name, offset, buf.len())?;
        if buf.is_empty() {
            return Ok(()); // like pread: reading nothing succeeds anywhere
        }
        let data = self.data.read();
        let end = offset + buf.len() as u64;
        if end > data.len() as u64 {
            return Err(eof_error(&self.name, offset, buf.len(), data.len() as u64));
        }
        buf.copy_from_slice(&data[offset as usize..end as usize]);
        drop(data);
        self.accounting.on_read(self.id, offset, buf.len());
        Ok(())
    }

    fn write_all_at(&self, offset: u64, bytes: &[u8]) -> Result<()> {
        check_range(&self.name, offset, bytes.len())?;
        if bytes.is_empty() {
            return Ok(());
        }
        let mut data = self.data.write();
        let end = (offset as usize) + bytes.len();
        if end > data.len() {
            try_resize(&mut data, end, &self.name)?;
        }
        data[offset as usize..end].copy_from_slice(bytes);
        // The written pages are allocated again.
        let first = offset / MEMORY_PAGE_BYTES;
        let last = (end as u64 - 1) / MEMORY_PAGE_BYTES;
        let mut holes = self.holes.lock();
        let touched: Vec<u64> = holes.range(first..=last).copied().collect();
        for page in touched {
            holes.remove(&page);
        }
        drop(holes);
        drop(data);
        self.accounting.on_write(self.id, offset, bytes.len());
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        Ok(self.data.read().len() as u64)
    }

    fn set_len(&self, len: u64) -> Result<()> {
        check_range(&self.name, len, 0)?;
        let mut data = self.data.write();
        try_resize(&mut data, len as usize, &self.name)?;
        // Holes must stay wholly below the length (a re-extension reads zeros anyway, but
        // counts as allocated, like the gap of a write past the end).
        let mut holes = self.holes.lock();
        let _cut = holes.split_off(&(len / MEMORY_PAGE_BYTES));
        drop(holes);
        drop(data);
        self.accounting.on_set_len(self.id, len);
        Ok(())
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<()> {
        check_punch_range(&self.name, offset, len)?;
        let mut data = self.data.write();
        let Some((start, end)) = punch_span(offset, len, data.len() as u64) else { return Ok(()) };
        data[start as usize..end as usize].fill(0);
        let first_whole = start.div_ceil(MEMORY_PAGE_BYTES);
        let end_whole = end / MEMORY_PAGE_BYTES; // exclusive
        self.holes.lock().extend(first_whole..end_whole);
        drop(data);
        self.accounting.on_punch(end - start);
        Ok(())
    }

    fn allocated_bytes(&self) -> Result<u64> {
        let data = self.data.read();
        let holes = self.holes.lock().len() as u64;
        let len = data.len() as u64;
        assert!(holes * MEMORY_PAGE_BYTES <= len, "holes lie wholly below the length");
        Ok(len - holes * MEMORY_PAGE_BYTES)
    }

    fn sync_data(&self) -> Result<()> {
        self.accounting.on_sync();
        Ok(())
    }
}

/// Resizes without aborting the process when memory runs out.
fn try_resize(data: &mut Vec<u8>, len: usize, name: &str) -> Result<()> {
    if len > data.len() {
        data.try_reserve(len - data.len()).map_err(|_| Error::NoSpace {
            context: format!("growing in-memory file {name} to {len} bytes"),
        })?;
    }
    data.resize(len, 0);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_follow_renames_and_survive_removal() {
        let s = MemoryStorage::new();
        let f = s.open("a", OpenMode::CreateNew).unwrap();
        f.write_all_at(0, b"hello").unwrap();
        s.rename("a", "b").unwrap();
        f.write_all_at(5, b"!").unwrap();
        assert_eq!(s.read_all("b").unwrap(), b"hello!");
        assert!(!s.exists("a").unwrap());
        s.remove("b").unwrap();
        f.write_all_at(0, b"x").unwrap(); // unlinked but open: still works
        assert_eq!(s.io_stats().live_bytes, 0);
    }
}
