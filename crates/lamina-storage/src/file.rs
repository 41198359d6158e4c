//! The `file` backend: one directory of real files, positional I/O (`pread`/`pwrite` through
//! `std::os::unix::fs::FileExt`), `fdatasync` for `sync_data` and `fsync` of the directory for
//! `sync_dir`.
//!
//! Optional `O_DIRECT`: with [`FileOptions::direct_io`], each file is opened a second time with
//! `O_DIRECT`, and an access whose offset, length and buffer address are all multiples of
//! [`DIRECT_IO_ALIGN_BYTES`] goes through it, bypassing the page cache. Everything else uses the
//! buffered descriptor (Linux keeps the two coherent: direct I/O flushes and invalidates the
//! cached range). If the filesystem refuses `O_DIRECT` (tmpfs, some overlays), or a direct
//! access fails with `EINVAL`, the file falls back to buffered I/O for good.
//!
//! `punch_hole` is `fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)`: whole filesystem
//! blocks of the range are freed at once (the freeing is a metadata change that becomes
//! durable with the next `sync_data`, like any other). If the filesystem does not support it
//! (`EOPNOTSUPP`), the range is overwritten with zeros instead: it reads back the same but
//! frees nothing, and [`StorageFile::allocated_bytes`] shows it.
//!
//! Platforms: `O_DIRECT`, `fallocate` and `sync_file_range` are Linux's. Elsewhere (other
//! Unix systems) `direct_io` is accepted and ignored (buffered I/O, as on a filesystem that
//! refuses `O_DIRECT`), `punch_hole` always takes the zero-filling fallback, and
//! `start_writeback` does nothing (it is a hint).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
#[cfg(target_os = "linux")]
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use lamina_core::{Error, IoStats, Result};
use parking_lot::Mutex;

use crate::accounting::{AccountingOptions, FileId, IoAccounting};
use crate::backend::{
    OpenMode, Storage, StorageFile, check_name, check_punch_range, check_range, punch_span,
};

/// Alignment of offset, length and buffer address for an access to go through `O_DIRECT`.
pub const DIRECT_IO_ALIGN_BYTES: u64 = 4096;

/// Largest buffer of zeros the `EOPNOTSUPP` fallback of `punch_hole` writes at once.
const PUNCH_ZEROS_CHUNK_BYTES: u64 = 1 << 20;

/// Options of [`FileStorage::open_dir`].
#[derive(Debug, Clone, PartialEq)]
pub struct FileOptions {
    /// Use `O_DIRECT` for aligned accesses where the filesystem allows it.
    pub direct_io: bool,
    /// Offer read-only maps ([`StorageFile::map_read`]); default true. Off, engines read
    /// everything with `pread` and every read is counted by the accounting.
    pub read_maps: bool,
    /// Block size, device profile and emulation of the accounting.
    pub accounting: AccountingOptions,
}

/// A second descriptor of `path` with `O_DIRECT`, or `None` when the filesystem refuses it
/// (`EINVAL`: tmpfs, some overlays), so the file falls back to buffered I/O.
#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT).open(path).ok()
}

/// No `O_DIRECT` outside Linux (macOS's `F_NOCACHE` is a different contract): buffered I/O.
#[cfg(not(target_os = "linux"))]
fn open_direct(path: &Path) -> Option<File> {
    let _ = path;
    None
}

impl Default for FileOptions {
    fn default() -> Self {
        FileOptions { direct_io: false, read_maps: true, accounting: AccountingOptions::default() }
    }
}

#[derive(Debug, Default)]
struct Names {
    ids: HashMap<String, FileId>,
    open: HashMap<String, Weak<DiskFile>>,
}

/// A [`Storage`] over one directory of real files.
#[derive(Debug)]
pub struct FileStorage {
    dir: PathBuf,
    dir_handle: File,
    direct_io: bool,
    read_maps: bool,
    names: Mutex<Names>,
    accounting: Arc<IoAccounting>,
}

/// An open file of a [`FileStorage`].
#[derive(Debug)]
pub struct DiskFile {
    name: String,
    path: PathBuf,
    id: FileId,
    buffered: File,
    direct: Option<File>,
    direct_failed: AtomicBool,
    read_maps: bool,
    accounting: Arc<IoAccounting>,
}

impl FileStorage {
    /// Opens (creating if missing) the directory `path`. Files already in it count toward
    /// live bytes.
    pub fn open_dir(path: impl AsRef<Path>, options: FileOptions) -> Result<Self> {
        options.accounting.validate()?;
        let dir = path.as_ref().to_path_buf();
        let ctx = |what: &str| format!("{what} {}", dir.display());
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(ctx("creating directory"), e))?;
        let dir_handle = File::open(&dir).map_err(|e| Error::io(ctx("opening directory"), e))?;
        let accounting = Arc::new(IoAccounting::new(options.accounting));
        let mut names = Names::default();
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io(ctx("listing"), e))? {
            let entry = entry.map_err(|e| Error::io(ctx("listing"), e))?;
            let meta = entry.metadata().map_err(|e| Error::io(ctx("listing"), e))?;
            if let (true, Ok(name)) = (meta.is_file(), entry.file_name().into_string()) {
                names.ids.insert(name, accounting.on_existing(meta.len()));
            }
        }
        Ok(FileStorage {
            dir,
            dir_handle,
            direct_io: options.direct_io,
            read_maps: options.read_maps,
            names: Mutex::new(names),
            accounting,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Storage for FileStorage {
    fn open(&self, name: &str, mode: OpenMode) -> Result<Arc<dyn StorageFile>> {
        check_name(name)?;
        let path = self.path_of(name);
        let mut names = self.names.lock();
        if let Some(file) = names.open.get(name).and_then(Weak::upgrade) {
            if mode == OpenMode::CreateNew {
                return Err(crate::backend::already_exists(format!("creating {}", path.display())));
            }
            return Ok(file);
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        let (buffered, created) = match mode {
            OpenMode::Existing => (options.open(&path), false),
            OpenMode::CreateNew => (options.create_new(true).open(&path), true),
            OpenMode::Create => match options.clone().create_new(true).open(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    (options.open(&path), false)
                }
                other => (other, true),
            },
        };
        let buffered = buffered.map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let id = if created {
            self.accounting.on_create()
        } else if let Some(&id) = names.ids.get(name) {
            id
        } else {
            // Created behind our back since open_dir: count it as found.
            let len = buffered.metadata().map_or(0, |m| m.len());
            self.accounting.on_existing(len)
        };
        names.ids.insert(name.to_owned(), id);
        let direct = if self.direct_io { open_direct(&path) } else { None };
        let file = Arc::new(DiskFile {
            name: name.to_owned(),
            path,
            id,
            buffered,
            direct,
            direct_failed: AtomicBool::new(false),
            read_maps: self.read_maps,
            accounting: self.accounting.clone(),
        });
        names.open.insert(name.to_owned(), Arc::downgrade(&file));
        Ok(file)
    }

    fn remove(&self, name: &str) -> Result<()> {
        check_name(name)?;
        let path = self.path_of(name);
        let mut names = self.names.lock();
        std::fs::remove_file(&path)
            .map_err(|e| Error::io(format!("removing {}", path.display()), e))?;
        names.open.remove(name);
        match names.ids.remove(name) {
            Some(id) => self.accounting.on_remove(id),
            None => self.accounting.on_remove(FileId::MAX),
        }
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        check_name(from)?;
        check_name(to)?;
        let (src, dst) = (self.path_of(from), self.path_of(to));
        let mut names = self.names.lock();
        let ctx = || format!("renaming {} to {}", src.display(), dst.display());
        if from == to {
            std::fs::metadata(&src).map_err(|e| Error::io(ctx(), e))?;
            return Ok(());
        }
        let replaced = dst.is_file();
        std::fs::rename(&src, &dst).map_err(|e| Error::io(ctx(), e))?;
        if replaced {
            let id = names.ids.remove(to).unwrap_or(FileId::MAX);
            self.accounting.on_remove(id);
        }
        names.open.remove(to);
        if let Some(id) = names.ids.remove(from) {
            names.ids.insert(to.to_owned(), id);
        }
        if let Some(weak) = names.open.remove(from) {
            names.open.insert(to.to_owned(), weak);
        }
        Ok(())
    }

    fn list(&self) -> Result<Vec<String>> {
        let ctx = || format!("listing {}", self.dir.display());
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(|e| Error::io(ctx(), e))? {
            let entry = entry.map_err(|e| Error::io(ctx(), e))?;
            let is_file = entry.file_type().map_err(|e| Error::io(ctx(), e))?.is_file();
            if let (true, Ok(name)) = (is_file, entry.file_name().into_string()) {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }

    fn exists(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        let path = self.path_of(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) => Ok(meta.is_file()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(format!("checking {}", path.display()), e)),
        }
    }

    fn sync_dir(&self) -> Result<()> {
        self.dir_handle
            .sync_all()
            .map_err(|e| Error::io(format!("syncing directory {}", self.dir.display()), e))?;
        self.accounting.on_sync();
        Ok(())
    }

    fn io_stats(&self) -> IoStats {
        self.accounting.stats()
    }

    fn path_of(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl DiskFile {
    /// A read-only shared map of the file's first `len` bytes, which may reach past its end
    /// (the callers, `map_read` and `map_read_ahead`, state what the reader must keep to).
    fn map_bytes(&self, len: u64) -> Result<Option<crate::ReadMap>> {
        if !self.read_maps || len == 0 {
            return Ok(None);
        }
        let len_usize = usize::try_from(len).map_err(|_| Error::Unsupported {
            what: format!("mapping {len} bytes of {}", self.name),
        })?;
        // SAFETY: the map is read-only and shared, so the process never writes through it and
        // Rust's aliasing rules hold for the `&[u8]` it hands out; what remains is the file
        // changing underneath: writes and punched holes only change the bytes seen (the
        // callers synchronise those with their readers, as they do for `pread`), and the
        // caller reads only bytes the file holds and never cuts the file below a byte it
        // reads while the map lives (the contract of `crate::read_map` and of
        // `map_read_ahead`), so no page it touches lies past the end of the file (SIGBUS).
        let map = unsafe { memmap2::MmapOptions::new().len(len_usize).map(&self.buffered) }
            .map_err(|e| Error::io(format!("mapping {len} bytes of {}", self.path.display()), e))?;
        // Advice only: a failure changes speed, never content.
        let _ = map.advise(memmap2::Advice::Random);
        Ok(Some(crate::ReadMap::new(map)))
    }

    /// Whether `O_DIRECT` is in use for aligned accesses of this file.
    pub fn direct_io_active(&self) -> bool {
        self.direct.is_some() && !self.direct_failed.load(Ordering::Relaxed)
    }

    /// The `O_DIRECT` descriptor if this access qualifies for it.
    fn direct_for(&self, offset: u64, len: usize, addr: *const u8) -> Option<&File> {
        let aligned = |x: u64| x.is_multiple_of(DIRECT_IO_ALIGN_BYTES);
        let ok = aligned(offset) && aligned(len as u64) && aligned(addr as u64) && len > 0;
        if ok && self.direct_io_active() { self.direct.as_ref() } else { None }
    }

    /// Runs `op` on the direct descriptor if eligible, falling back to buffered on `EINVAL`.
    fn with_file(
        &self,
        offset: u64,
        len: usize,
        addr: *const u8,
        mut op: impl FnMut(&File) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        if let Some(direct) = self.direct_for(offset, len, addr) {
            match op(direct) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    self.direct_failed.store(true, Ordering::Relaxed);
                }
                other => return other,
            }
        }
        op(&self.buffered)
    }

    /// `fallocate(PUNCH_HOLE | KEEP_SIZE)` on `start..end`; `Ok(false)` if the filesystem
    /// does not support it.
    #[cfg(target_os = "linux")]
    fn fallocate_punch(&self, start: u64, end: u64) -> std::io::Result<bool> {
        let (Ok(off), Ok(len)) = (libc::off_t::try_from(start), libc::off_t::try_from(end - start))
        else {
            return Err(std::io::Error::from_raw_os_error(libc::EFBIG));
        };
        let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: `fallocate` only reads its integer arguments; the descriptor is owned by
        // `self.buffered`, open for writing, and outlives the call.
        let rc = unsafe { libc::fallocate(self.buffered.as_raw_fd(), mode, off, len) };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EOPNOTSUPP) => Ok(false),
            _ => Err(err),
        }
    }

    /// Outside Linux there is no portable hole punch: always `Ok(false)` (zero-filling).
    #[cfg(not(target_os = "linux"))]
    #[allow(clippy::unused_self, clippy::unnecessary_wraps)] // the Linux version's signature
    fn fallocate_punch(&self, start: u64, end: u64) -> std::io::Result<bool> {
        let _ = (start, end);
        Ok(false)
    }

    /// The fallback of `punch_hole`: zeros over `start..end`, in bounded chunks.
    fn write_zeros(&self, start: u64, end: u64) -> std::io::Result<()> {
        let zeros = vec![0u8; PUNCH_ZEROS_CHUNK_BYTES.min(end - start) as usize];
        let mut at = start;
        while at < end {
            let n = (end - at).min(zeros.len() as u64) as usize;
            self.buffered.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        Ok(())
    }
}

impl StorageFile for DiskFile {
    fn name(&self) -> &str {
        &self.name
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        check_range(&self.name, offset, buf.len())?;
        let (len, addr) = (buf.len(), buf.as_ptr());
        self.with_file(offset, len, addr, |f| f.read_exact_at(buf, offset)).map_err(|e| {
            Error::io(format!("reading {len} bytes at {offset} of {}", self.path.display()), e)
        })?;
        self.accounting.on_read(self.id, offset, len);
        Ok(())
    }

    fn write_all_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        check_range(&self.name, offset, data.len())?;
        self.with_file(offset, data.len(), data.as_ptr(), |f| f.write_all_at(data, offset))
            .map_err(|e| {
                let path = self.path.display();
                Error::io(format!("writing {} bytes at {offset} of {path}", data.len()), e)
            })?;
        self.accounting.on_write(self.id, offset, data.len());
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        let meta = self
            .buffered
            .metadata()
            .map_err(|e| Error::io(format!("reading length of {}", self.path.display()), e))?;
        Ok(meta.len())
    }

    fn set_len(&self, len: u64) -> Result<()> {
        check_range(&self.name, len, 0)?;
        self.buffered
            .set_len(len)
            .map_err(|e| Error::io(format!("resizing {} to {len}", self.path.display()), e))?;
        self.accounting.on_set_len(self.id, len);
        Ok(())
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<()> {
        check_punch_range(&self.name, offset, len)?;
        let Some((start, end)) = punch_span(offset, len, self.len()?) else { return Ok(()) };
        let ctx =
            || format!("punching {} bytes at {start} of {}", end - start, self.path.display());
        let punched = self.fallocate_punch(start, end).map_err(|e| Error::io(ctx(), e))?;
        if !punched {
            self.write_zeros(start, end).map_err(|e| Error::io(ctx(), e))?;
        }
        self.accounting.on_punch(end - start);
        Ok(())
    }

    #[cfg(target_os = "linux")]
    fn start_writeback(&self, offset: u64, len: u64) -> Result<()> {
        check_punch_range(&self.name, offset, len)?;
        let (Ok(off), Ok(n)) = (libc::off64_t::try_from(offset), libc::off64_t::try_from(len))
        else {
            return Ok(()); // a hint: nothing to start for a range no file reaches
        };
        if n == 0 {
            return Ok(());
        }
        // SAFETY: `sync_file_range` only reads its integer arguments; the descriptor is owned
        // by `self.buffered` and outlives the call.
        let rc = unsafe {
            libc::sync_file_range(self.buffered.as_raw_fd(), off, n, libc::SYNC_FILE_RANGE_WRITE)
        };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            let ctx =
                format!("starting writeback of {len} bytes at {offset} of {}", self.path.display());
            return Err(Error::io(ctx, err));
        }
        Ok(())
    }

    fn map_read(&self, len: u64) -> Result<Option<crate::ReadMap>> {
        let file_len = self.len()?;
        if len > file_len {
            let len_usize = usize::try_from(len).unwrap_or(usize::MAX);
            return Err(crate::backend::eof_error(&self.name, 0, len_usize, file_len));
        }
        self.map_bytes(len)
    }

    fn map_read_ahead(&self, len: u64) -> Result<Option<crate::ReadMap>> {
        self.map_bytes(len)
    }

    fn allocated_bytes(&self) -> Result<u64> {
        let meta = self.buffered.metadata().map_err(|e| {
            Error::io(format!("reading allocated size of {}", self.path.display()), e)
        })?;
        // st_blocks counts 512-byte units whatever the filesystem's block size (stat(2)).
        Ok(meta.blocks() * 512)
    }

    fn sync_data(&self) -> Result<()> {
        self.buffered
            .sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))?;
        self.accounting.on_sync();
        Ok(())
    }
}
