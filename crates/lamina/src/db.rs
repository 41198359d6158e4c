//! [`Db`]: a database directory opened with one engine.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lamina_core::{
    CasOutcome, Entry, Error, IntoKeyRange, KeyRange, OpenIntent, OrderedIndex, Result, Stats,
    WriteBatch,
};
#[cfg(feature = "fdtree")]
use lamina_fdtree::FdTree;
#[cfg(feature = "fptree")]
use lamina_fptree::FpTreeEngine;
#[cfg(feature = "latree")]
use lamina_latree::LaTreeEngine;
#[cfg(feature = "mem")]
use lamina_mem::{MemEngine, MemOptions};
#[cfg(feature = "nbtree")]
use lamina_nbtree::NbTree;
use lamina_storage::{AccountingOptions, FileOptions, FileStorage, Storage};
#[cfg(feature = "trie")]
use lamina_trie::{TrieEngine, TrieOptions};

use crate::iter::ScanIter;
use crate::meta::{META_FILE_NAME, Meta};
use crate::{EngineKind, Options};

/// Name of the `fptree` engine's persistent-memory region file in the database directory.
pub const FPTREE_FILE_NAME: &str = "fptree.pmem";

/// Name of the lock file that keeps a second process from opening the same directory.
pub const LOCK_FILE_NAME: &str = "LOCK";

/// The engines, dispatched by enum (no virtual call on the hot path).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per open database; boxing would add a pointer chase
pub(crate) enum Engine {
    #[cfg(feature = "mem")]
    Mem(MemEngine),
    #[cfg(feature = "fdtree")]
    Fdtree(FdTree),
    #[cfg(feature = "trie")]
    Trie(TrieEngine),
    #[cfg(feature = "nbtree")]
    Nbtree(NbTree),
    #[cfg(feature = "latree")]
    Latree(LaTreeEngine),
    #[cfg(feature = "fptree")]
    Fptree(FpTreeEngine),
}

/// Calls `$body` on whichever engine `$self.engine` holds.
macro_rules! dispatch {
    ($self:expr, $engine:ident => $body:expr) => {
        match &$self.engine {
            #[cfg(feature = "mem")]
            Engine::Mem($engine) => $body,
            #[cfg(feature = "fdtree")]
            Engine::Fdtree($engine) => $body,
            #[cfg(feature = "trie")]
            Engine::Trie($engine) => $body,
            #[cfg(feature = "nbtree")]
            Engine::Nbtree($engine) => $body,
            #[cfg(feature = "latree")]
            Engine::Latree($engine) => $body,
            #[cfg(feature = "fptree")]
            Engine::Fptree($engine) => $body,
        }
    };
}

/// An open database. `Send + Sync`: share it between threads with `Arc` or by reference.
#[derive(Debug)]
pub struct Db {
    engine: Engine,
    kind: EngineKind,
    dir: PathBuf,
    /// Held (with an exclusive advisory lock) for as long as the `Db` lives.
    _lock: File,
}

impl Db {
    /// Opens (or creates) the database in `dir` with `options`.
    ///
    /// Fails with `InvalidArgument` for bad options, `Incompatible` if `dir` holds another
    /// engine's database or something that is not a lamina database, `Corruption` if the
    /// database exists (its `LAMINA` file says so) but its engine's files are missing or
    /// damaged, and `Io` if `dir` is locked by another process.
    ///
    /// The engine learns whether the database exists from the `LAMINA` file
    /// ([`OpenIntent`]): it is written before the engine first creates its files, without its
    /// `created` flag, and rewritten with it once the engine has opened; from then on every
    /// open tells the engine [`OpenIntent::MustExist`], so a lost file is never taken for a
    /// new, empty database.
    ///
    /// Emits a `tracing` span `lamina_open` (fields `engine`, `dir`) around the open and
    /// the engine's recovery, an info event when the database is open, and an error event
    /// if it fails.
    pub fn open(dir: impl AsRef<Path>, options: Options) -> Result<Db> {
        let dir = dir.as_ref();
        let span = tracing::info_span!("lamina_open", engine = %options.engine, dir = ?dir);
        let _entered = span.enter();
        let result = Db::open_inner(dir, options);
        match &result {
            Ok(db) => tracing::info!(keys = ?db.stats().keys, "database open"),
            Err(e) => tracing::error!(error = %e, "opening the database failed"),
        }
        result
    }

    fn open_inner(dir: &Path, options: Options) -> Result<Db> {
        options.validate()?;
        prepare_dir(dir, options.create_if_missing)?;
        // Refuse a foreign directory before creating anything in it (not even `LOCK`).
        if Meta::read(dir)?.is_none() {
            refuse_foreign_dir(dir)?;
        }
        let lock = lock_dir(dir)?;
        let created = match Meta::read(dir)? {
            Some(meta) if meta.engine != options.engine.format_name() => {
                return Err(Error::Incompatible {
                    reason: format!(
                        "{} holds a `{}` database; it cannot be opened as `{}`",
                        dir.display(),
                        meta.engine,
                        options.engine
                    ),
                });
            }
            Some(meta) => meta.created,
            None => {
                // Checked again under the lock: another process may have written meanwhile.
                refuse_foreign_dir(dir)?;
                let engine = options.engine.format_name().to_string();
                Meta { engine, created: false }.write(dir)?;
                false
            }
        };
        let intent = if created { OpenIntent::MustExist } else { OpenIntent::CreateIfMissing };
        let engine = {
            // The engine's open: for an existing database, its recovery (log replay, checks).
            let _span = tracing::info_span!("recovery", existing = created).entered();
            open_engine(dir, &options, intent, None)?
        };
        if !created {
            let engine = options.engine.format_name().to_string();
            Meta { engine, created: true }.write(dir)?;
        }
        Ok(Db { engine, kind: options.engine, dir: dir.to_path_buf(), _lock: lock })
    }

    /// The engine recorded in `dir`, if `dir` holds a lamina database.
    pub fn engine_of(dir: impl AsRef<Path>) -> Result<Option<EngineKind>> {
        Meta::read(dir.as_ref())?.map(|meta| EngineKind::from_format_name(&meta.engine)).transpose()
    }

    /// The engine this database uses.
    pub fn engine(&self) -> EngineKind {
        self.kind
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// An iterator over `range` in ascending key order, fetched in pages; the same as
    /// [`Db::range`] (which also takes `std` ranges).
    pub fn iter(&self, range: KeyRange) -> ScanIter<'_, Db> {
        ScanIter::new(self, range)
    }

    /// An iterator over the keys in `range`, ascending; `.rev()` for descending. `range` is
    /// any `std` range of byte-string-like keys or a [`KeyRange`] (see [`IntoKeyRange`]):
    ///
    /// ```
    /// # fn main() -> lamina::Result<()> {
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let db = lamina::Db::open(dir.path(), lamina::Options::default())?;
    /// for key in ["apple", "banana", "cherry", "date"] {
    ///     db.put(key, "fruit")?;
    /// }
    /// fn keys(iter: impl Iterator<Item = lamina::Result<lamina::Entry>>) -> Vec<Vec<u8>> {
    ///     iter.map(|entry| entry.unwrap().0).collect()
    /// }
    /// assert_eq!(keys(db.range("b".."d")), [b"banana".to_vec(), b"cherry".to_vec()]);
    /// assert_eq!(keys(db.range(b"b"..=b"c")), [b"banana".to_vec()]);
    /// assert_eq!(keys(db.range(..).rev())[0], b"date");
    /// assert_eq!(keys(db.prefix("c").rev()), [b"cherry".to_vec()]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// Each item is a `Result`: a page fetch can fail (I/O error, closed handle), after
    /// which the iterator ends.
    pub fn range(&self, range: impl IntoKeyRange) -> ScanIter<'_, Db> {
        ScanIter::new(self, range.into_key_range())
    }

    /// An iterator over the keys that start with `prefix`, ascending; `.rev()` for
    /// descending. The empty prefix iterates over everything.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> ScanIter<'_, Db> {
        ScanIter::new(self, KeyRange::prefix(prefix))
    }
}

/// Opens the engine `options.engine` over `dir`'s files, or over `over` when given (the
/// read-only overlay of [`Db::verify`]).
#[allow(unused_variables)] // a build without some engines leaves some inputs unused
pub(crate) fn open_engine(
    dir: &Path,
    options: &Options,
    intent: OpenIntent,
    over: Option<Arc<dyn Storage>>,
) -> Result<Engine> {
    let read_only = over.is_some();
    let storage = match over {
        Some(storage) => storage,
        None => file_storage(dir, options)?,
    };
    let nonzero = |bytes: u64| (bytes != 0).then_some(bytes);
    let engine = match options.engine {
        #[cfg(feature = "mem")]
        EngineKind::Mem => {
            let defaults = MemOptions::default();
            let mem = MemOptions {
                durability: options.durability,
                disk_budget_bytes: nonzero(options.disk_budget_bytes),
                memory_limit_bytes: nonzero(options.memory_limit_bytes),
                log_buffer_bytes: options
                    .log_ring_settings()
                    .log_buffer_bytes
                    .unwrap_or(defaults.log_buffer_bytes),
                intent,
                ..defaults
            };
            Engine::Mem(MemEngine::open(storage, &mem)?)
        }
        #[cfg(feature = "fdtree")]
        EngineKind::Fdtree(mode) => {
            let fdtree = options.fdtree_options(mode);
            Engine::Fdtree(FdTree::open_with_intent(storage, &fdtree, intent)?)
        }
        #[cfg(feature = "trie")]
        EngineKind::Trie => {
            let mut trie = TrieOptions::default().durability(options.durability).intent(intent);
            if let Some(budget) = nonzero(options.disk_budget_bytes) {
                trie = trie.disk_budget_bytes(budget);
            }
            if let Some(limit) = nonzero(options.memory_limit_bytes) {
                trie = trie.memory_limit_bytes(limit);
            }
            if let Some(bytes) = options.log_ring_settings().log_buffer_bytes {
                trie = trie.log_buffer_bytes(bytes);
            }
            Engine::Trie(TrieEngine::open(storage, trie)?)
        }
        #[cfg(feature = "nbtree")]
        EngineKind::Nbtree => {
            let nbtree = options.nbtree_options(intent);
            Engine::Nbtree(NbTree::open(storage, &nbtree)?)
        }
        #[cfg(feature = "latree")]
        EngineKind::Latree | EngineKind::LatreeBtree => {
            let latree = options.latree_options(intent);
            Engine::Latree(LaTreeEngine::open(storage, &latree)?)
        }
        #[cfg(feature = "fptree")]
        EngineKind::Fptree => {
            // The region is a mapped file, not a `Storage`: verification maps it privately
            // (copy on write), so recovery's writes never reach the file.
            let mut fptree = options.fptree_options(intent);
            fptree.private_image = read_only;
            Engine::Fptree(FpTreeEngine::open_file(&dir.join(FPTREE_FILE_NAME), &fptree)?)
        }
    };
    Ok(engine)
}

impl Engine {
    /// The engine behind the common API.
    pub(crate) fn index(&self) -> &dyn OrderedIndex {
        match self {
            #[cfg(feature = "mem")]
            Engine::Mem(e) => e,
            #[cfg(feature = "fdtree")]
            Engine::Fdtree(e) => e,
            #[cfg(feature = "trie")]
            Engine::Trie(e) => e,
            #[cfg(feature = "nbtree")]
            Engine::Nbtree(e) => e,
            #[cfg(feature = "latree")]
            Engine::Latree(e) => e,
            #[cfg(feature = "fptree")]
            Engine::Fptree(e) => e,
        }
    }

    /// Checks the engine's own structural invariants where it defines them (fdtree, nbtree
    /// and latree `verify`; mem, trie and fptree check everything while opening).
    #[allow(clippy::unnecessary_wraps)] // infallible in builds with only mem, trie or fptree
    pub(crate) fn verify_structure(&self) -> Result<()> {
        match self {
            // Recovery checks every record at open: mem and trie their logs, fptree
            // (Algorithm 9) every leaf and record of its region.
            #[cfg(feature = "mem")]
            Engine::Mem(_) => Ok(()),
            #[cfg(feature = "trie")]
            Engine::Trie(_) => Ok(()),
            #[cfg(feature = "fptree")]
            Engine::Fptree(_) => Ok(()),
            #[cfg(feature = "fdtree")]
            // Without running a merge in progress to its end in the overlay's memory.
            Engine::Fdtree(e) => e.verify_as_it_stands(),
            #[cfg(feature = "nbtree")]
            Engine::Nbtree(e) => e.verify(),
            #[cfg(feature = "latree")]
            Engine::Latree(e) => e.verify().map(|_| ()),
        }
    }
}

/// The file backend over `dir`, with the accounting's device model from `options`.
fn file_storage(dir: &Path, options: &Options) -> Result<Arc<dyn Storage>> {
    let accounting = AccountingOptions {
        device: options.benchmark.device,
        emulate: options.benchmark.emulate_device,
        ..AccountingOptions::default()
    };
    let file_options = FileOptions { accounting, ..FileOptions::default() };
    Ok(Arc::new(FileStorage::open_dir(dir, file_options)?))
}

fn prepare_dir(dir: &Path, create_if_missing: bool) -> Result<()> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Error::InvalidArgument(lamina_core::InvalidArgument::Option {
            name: "dir",
            reason: format!("{} exists and is not a directory", dir.display()),
        })),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create_if_missing => {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("creating {}", dir.display()), e))
        }
        Err(e) => Err(Error::io(format!("opening {}", dir.display()), e)),
    }
}

/// `Incompatible` if `dir` (which has no `LAMINA` file) holds anything but a `LOCK` file: it is
/// not a lamina database, and opening it must not write there.
fn refuse_foreign_dir(dir: &Path) -> Result<()> {
    let foreign = std::fs::read_dir(dir)
        .map_err(|e| Error::io(format!("listing {}", dir.display()), e))?
        .filter_map(std::result::Result::ok)
        .any(|entry| entry.file_name() != LOCK_FILE_NAME);
    if foreign {
        return Err(Error::Incompatible {
            reason: format!(
                "{} is not empty and has no {META_FILE_NAME} file: not a lamina database",
                dir.display()
            ),
        });
    }
    Ok(())
}

fn lock_dir(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE_NAME);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Io {
            context: format!("locking {}", path.display()),
            source: std::io::Error::new(
                std::io::ErrorKind::ResourceBusy,
                "the database is already open in another process or handle",
            ),
        }),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::io(format!("locking {}", path.display()), e))
        }
    }
}

/// The API, also callable without importing the trait. See [`OrderedIndex`] for the exact
/// semantics of each call. Keys and values are anything `AsRef<[u8]>` (`&[u8]`, `b"..."`,
/// `&str`, `Vec<u8>`, `String`).
impl Db {
    /// The value stored under `key`.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        let key = key.as_ref();
        dispatch!(self, e => e.get(key))
    }

    /// Inserts or overwrites `key`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        dispatch!(self, e => e.put(key, value))
    }

    /// Removes `key`; returns whether it existed.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<bool> {
        let key = key.as_ref();
        dispatch!(self, e => e.delete(key))
    }

    /// Atomically replaces the value if it equals `expected` (`None`: absent); `new` of
    /// `None` deletes the key. (`expected` and `new` are `Option<&[u8]>` rather than
    /// generic so that a bare `None` needs no type annotation; `Some(b"..")` and
    /// `Some(&vec)` coerce.)
    pub fn compare_and_swap(
        &self,
        key: impl AsRef<[u8]>,
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        let key = key.as_ref();
        dispatch!(self, e => e.compare_and_swap(key, expected, new))
    }

    /// Up to `limit` pairs in `range`, ascending.
    pub fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        lamina_core::limits::check_range(range)?;
        dispatch!(self, e => e.scan(range, limit))
    }

    /// Up to `limit` pairs in `range`, descending (the greatest keys first).
    pub fn scan_rev(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        lamina_core::limits::check_range(range)?;
        dispatch!(self, e => e.scan_rev(range, limit))
    }

    /// Applies `batch` atomically.
    pub fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        dispatch!(self, e => e.write_batch(batch))
    }

    /// Makes every acknowledged write durable.
    pub fn sync(&self) -> Result<()> {
        dispatch!(self, e => e.sync())
    }

    /// Counters of the engine's state and I/O.
    pub fn stats(&self) -> Stats {
        dispatch!(self, e => e.stats())
    }

    /// Flushes and releases the engine; later calls return `Error::Closed`. Idempotent.
    pub fn close(&self) -> Result<()> {
        dispatch!(self, e => e.close())
    }
}

impl OrderedIndex for Db {
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

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        Db::scan(self, range, limit)
    }

    fn scan_rev(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        Db::scan_rev(self, range, limit)
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        Db::write_batch(self, batch)
    }

    fn sync(&self) -> Result<()> {
        Db::sync(self)
    }

    fn stats(&self) -> Stats {
        Db::stats(self)
    }

    fn close(&self) -> Result<()> {
        Db::close(self)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // A dropped handle closes cleanly; errors here have no caller to go to, so callers
        // that care call `close` themselves and see them.
        let _ = self.close();
    }
}
