//! The `overlay` backend: a directory read in place, every change kept in memory. It lets an
//! engine open (and recover) a closed store without changing a byte of it, which is what
//! `lamina verify` needs (issue 20: "Read-only"): recovery may cut a torn log tail, remove an
//! orphan file or write a new superblock, and all of that lands in memory and is dropped.
//!
//! A file of the directory is read through a read-only handle until its first change; then
//! its whole content is copied to memory (one file at a time, so the overlay holds what the
//! engine wrote plus the files it changed, not the store). New files live in memory only.
//! Removals and renames change only the overlay's table of names. [`OVERLAY_BYTES_MAX`]
//! bounds the memory: past it a change fails with `NoSpace` naming the overlay.
//!
//! Nothing here writes to the directory: files are opened with `O_RDONLY`, and `sync_data`
//! and `sync_dir` do nothing.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::{Error, IoStats, Result};
use parking_lot::{Mutex, RwLock};

use crate::backend::{
    OpenMode, Storage, StorageFile, already_exists, check_name, check_punch_range, check_range,
    eof_error, not_found, punch_span,
};

/// Most bytes the overlay holds in memory (copied and written files together).
pub const OVERLAY_BYTES_MAX: u64 = 4 << 30;

/// A directory opened read-only, with changes kept in memory.
#[derive(Debug)]
pub struct OverlayStorage {
    dir: PathBuf,
    /// Every name visible now; a file of the directory enters on its first open.
    files: Mutex<BTreeMap<String, Arc<OverlayFile>>>,
    /// Names of the directory that were removed or renamed away in the overlay.
    hidden: Mutex<std::collections::BTreeSet<String>>,
    memory_bytes: Arc<AtomicU64>,
    /// Bytes read from the directory's files.
    bytes_read: Arc<AtomicU64>,
}

/// An open file of an [`OverlayStorage`].
#[derive(Debug)]
pub struct OverlayFile {
    name: String,
    path: PathBuf,
    content: RwLock<Content>,
    memory_bytes: Arc<AtomicU64>,
    bytes_read: Arc<AtomicU64>,
}

#[derive(Debug)]
enum Content {
    /// Unchanged: read from the directory.
    Disk { file: File, len: u64 },
    /// Changed or new: held in memory.
    Memory(Vec<u8>),
}

impl OverlayStorage {
    /// Opens `dir`, which must exist and be a directory; nothing in it is created or changed.
    pub fn open_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        let meta = std::fs::metadata(&dir)
            .map_err(|e| Error::io(format!("opening {}", dir.display()), e))?;
        if !meta.is_dir() {
            return Err(Error::io(
                format!("opening {}", dir.display()),
                std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        Ok(OverlayStorage {
            dir,
            files: Mutex::new(BTreeMap::new()),
            hidden: Mutex::new(std::collections::BTreeSet::new()),
            memory_bytes: Arc::new(AtomicU64::new(0)),
            bytes_read: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Bytes held in memory now.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes.load(Ordering::Relaxed)
    }

    fn on_disk(&self, name: &str) -> Result<bool> {
        if self.hidden.lock().contains(name) {
            return Ok(false);
        }
        match std::fs::metadata(self.dir.join(name)) {
            Ok(meta) => Ok(meta.is_file()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(format!("reading {}", self.dir.join(name).display()), e)),
        }
    }
}

impl OverlayStorage {
    fn open_file(&self, name: &str, mode: OpenMode) -> Result<Arc<OverlayFile>> {
        check_name(name)?;
        let mut files = self.files.lock();
        let path = self.dir.join(name);
        if let Some(file) = files.get(name) {
            if mode == OpenMode::CreateNew {
                return Err(already_exists(format!("creating {name}")));
            }
            return Ok(file.clone());
        }
        let content = if self.on_disk(name)? {
            if mode == OpenMode::CreateNew {
                return Err(already_exists(format!("creating {name}")));
            }
            let file = File::open(&path)
                .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
            let len = file
                .metadata()
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))?
                .len();
            Content::Disk { file, len }
        } else if mode == OpenMode::Existing {
            return Err(not_found(format!("opening {name}")));
        } else {
            Content::Memory(Vec::new())
        };
        let file = Arc::new(OverlayFile {
            name: name.to_owned(),
            path,
            content: RwLock::new(content),
            memory_bytes: self.memory_bytes.clone(),
            bytes_read: self.bytes_read.clone(),
        });
        files.insert(name.to_owned(), file.clone());
        Ok(file)
    }
}

impl Storage for OverlayStorage {
    fn open(&self, name: &str, mode: OpenMode) -> Result<Arc<dyn StorageFile>> {
        Ok(self.open_file(name, mode)?)
    }

    fn remove(&self, name: &str) -> Result<()> {
        check_name(name)?;
        let mut files = self.files.lock();
        let was_open = files.remove(name).is_some();
        let on_disk = self.on_disk(name)?;
        if !was_open && !on_disk {
            return Err(not_found(format!("removing {name}")));
        }
        self.hidden.lock().insert(name.to_owned());
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        check_name(from)?;
        check_name(to)?;
        if from == to {
            return if self.exists(from)? {
                Ok(())
            } else {
                Err(not_found(format!("renaming {from} to {to}")))
            };
        }
        // Open `from` first (a file of the directory enters the table), then move the entry.
        let file = self.open_file(from, OpenMode::Existing)?;
        let mut files = self.files.lock();
        files.remove(from);
        files.insert(to.to_owned(), file);
        let mut hidden = self.hidden.lock();
        hidden.insert(from.to_owned());
        // `to` of the directory, if any, is replaced: the table's entry now shadows it.
        hidden.insert(to.to_owned());
        Ok(())
    }

    fn list(&self) -> Result<Vec<String>> {
        let mut names: std::collections::BTreeSet<String> =
            self.files.lock().keys().cloned().collect();
        let hidden = self.hidden.lock();
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|e| Error::io(format!("listing {}", self.dir.display()), e))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| Error::io(format!("listing {}", self.dir.display()), e))?;
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if let (true, Ok(name)) = (is_file, entry.file_name().into_string())
                && !hidden.contains(&name)
            {
                names.insert(name);
            }
        }
        Ok(names.into_iter().collect())
    }

    fn exists(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        if self.files.lock().contains_key(name) {
            return Ok(true);
        }
        self.on_disk(name)
    }

    fn sync_dir(&self) -> Result<()> {
        Ok(())
    }

    fn io_stats(&self) -> IoStats {
        let mut stats = IoStats::default();
        stats.bytes_read = self.bytes_read.load(Ordering::Relaxed);
        stats
    }

    fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl OverlayFile {
    /// Copies the directory's content to memory before the first change.
    fn make_memory(&self, content: &mut Content) -> Result<()> {
        if let Content::Disk { file, len } = content {
            let bytes = *len;
            self.charge(bytes)?;
            let mut data = vec![0u8; usize::try_from(bytes).expect("checked by charge")];
            self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
            file.read_exact_at(&mut data, 0)
                .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
            *content = Content::Memory(data);
        }
        Ok(())
    }

    fn charge(&self, bytes: u64) -> Result<()> {
        let held = self.memory_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if held > OVERLAY_BYTES_MAX {
            self.memory_bytes.fetch_sub(bytes, Ordering::Relaxed);
            return Err(Error::NoSpace {
                context: format!(
                    "the read-only overlay of {} would hold {held} bytes of changes, above \
                     its {OVERLAY_BYTES_MAX}-byte limit",
                    self.path.display()
                ),
            });
        }
        Ok(())
    }
}

impl StorageFile for OverlayFile {
    fn name(&self) -> &str {
        &self.name
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        check_range(&self.name, offset, buf.len())?;
        match &*self.content.read() {
            Content::Disk { file, len } => {
                if offset + buf.len() as u64 > *len {
                    return Err(eof_error(&self.name, offset, buf.len(), *len));
                }
                self.bytes_read.fetch_add(buf.len() as u64, Ordering::Relaxed);
                file.read_exact_at(buf, offset)
                    .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))
            }
            Content::Memory(data) => {
                let end = offset + buf.len() as u64;
                if end > data.len() as u64 {
                    return Err(eof_error(&self.name, offset, buf.len(), data.len() as u64));
                }
                buf.copy_from_slice(&data[offset as usize..end as usize]);
                Ok(())
            }
        }
    }

    fn write_all_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        check_range(&self.name, offset, data.len())?;
        let mut content = self.content.write();
        self.make_memory(&mut content)?;
        let Content::Memory(bytes) = &mut *content else { unreachable!("made memory above") };
        let end = (offset + data.len() as u64) as usize;
        if end > bytes.len() {
            self.charge((end - bytes.len()) as u64)?;
            bytes.resize(end, 0);
        }
        bytes[offset as usize..end].copy_from_slice(data);
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        Ok(match &*self.content.read() {
            Content::Disk { len, .. } => *len,
            Content::Memory(data) => data.len() as u64,
        })
    }

    fn set_len(&self, len: u64) -> Result<()> {
        check_range(&self.name, len, 0)?;
        let mut content = self.content.write();
        self.make_memory(&mut content)?;
        let Content::Memory(bytes) = &mut *content else { unreachable!("made memory above") };
        if len as usize > bytes.len() {
            self.charge(len - bytes.len() as u64)?;
        } else {
            self.memory_bytes.fetch_sub(bytes.len() as u64 - len, Ordering::Relaxed);
        }
        bytes.resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> Result<()> {
        Ok(())
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<()> {
        check_punch_range(&self.name, offset, len)?;
        let mut content = self.content.write();
        self.make_memory(&mut content)?;
        let Content::Memory(bytes) = &mut *content else { unreachable!("made memory above") };
        if let Some((start, end)) = punch_span(offset, len, bytes.len() as u64) {
            bytes[start as usize..end as usize].fill(0);
        }
        Ok(())
    }

    fn allocated_bytes(&self) -> Result<u64> {
        self.len()
    }
}

impl Drop for OverlayFile {
    fn drop(&mut self) {
        if let Content::Memory(data) = &*self.content.get_mut() {
            self.memory_bytes.fetch_sub(data.len() as u64, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        dir
    }

    fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())
            })
            .collect()
    }

    #[test]
    fn changes_are_seen_through_the_overlay_and_never_reach_the_directory() {
        let dir = dir_with(&[("a", b"hello"), ("b", b"world"), ("c", b"gone")]);
        let before = snapshot(dir.path());
        let storage = OverlayStorage::open_dir(dir.path()).unwrap();
        let a = storage.open("a", OpenMode::Existing).unwrap();
        let mut buf = [0u8; 5];
        a.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"hello");
        a.write_all_at(3, b"p!!").unwrap();
        let mut buf = [0u8; 6];
        a.read_exact_at(0, &mut buf).unwrap();
        assert_eq!(&buf, b"help!!");
        a.set_len(2).unwrap();
        assert_eq!(a.len().unwrap(), 2);
        storage.rename("b", "d").unwrap();
        storage.remove("c").unwrap();
        let n = storage.open("new", OpenMode::CreateNew).unwrap();
        n.write_all_at(0, b"x").unwrap();
        n.sync_data().unwrap();
        storage.sync_dir().unwrap();
        assert_eq!(storage.list().unwrap(), ["a", "d", "new"]);
        assert!(!storage.exists("b").unwrap() && !storage.exists("c").unwrap());
        assert_eq!(storage.read_all("d").unwrap(), b"world");
        assert!(storage.open("c", OpenMode::Existing).is_err());
        assert_eq!(snapshot(dir.path()), before, "the directory must not change");
        assert_eq!(storage.memory_bytes(), 2 + 1);
    }

    #[test]
    fn a_read_past_the_end_is_an_eof_error_and_create_new_refuses_a_directory_file() {
        let dir = dir_with(&[("a", b"abc")]);
        let storage = OverlayStorage::open_dir(dir.path()).unwrap();
        let a = storage.open("a", OpenMode::Create).unwrap();
        let mut buf = [0u8; 4];
        let err = a.read_exact_at(0, &mut buf).unwrap_err();
        assert_eq!(crate::backend::io_error_kind(&err), Some(std::io::ErrorKind::UnexpectedEof));
        let other = OverlayStorage::open_dir(dir.path()).unwrap();
        assert!(other.open("a", OpenMode::CreateNew).is_err());
        assert!(other.remove("missing").is_err());
        assert!(OverlayStorage::open_dir(dir.path().join("a")).is_err());
    }
}
