//! [`Db::verify`]: checks a closed database without changing it (issue 20, `lamina verify`).
//!
//! The engine is opened over an [`OverlayStorage`]: the directory's files are read in place and
//! whatever recovery would write (a cut log tail, a removed orphan, a new superblock) stays in
//! memory, so the store is byte-for-byte unchanged afterwards. Opening checks every file the
//! engine reads at open (superblocks, manifests, the log: checksums and the committed state);
//! then the engine's own structural verification runs (fdtree, nbtree, latree `verify`), and a
//! full scan reads every entry (every data block's checksum) and checks that keys ascend and
//! that a point read of each key returns the value the scan returned, so the index paths and
//! the data agree.
//!
//! The first problem found is returned as the engine's error (`Corruption` names the file and
//! the offset); a clean store gives a [`VerifyReport`].

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use lamina_core::{Error, KeyRange, OpenIntent, Result};
use lamina_storage::{OverlayStorage, Storage};

use crate::db::{LOCK_FILE_NAME, open_engine};
use crate::meta::{META_FILE_NAME, Meta};
use crate::{Db, EngineKind, Options};

/// Entries fetched per scan call while verifying.
const VERIFY_SCAN_PAGE_ENTRIES: usize = 4096;

/// What [`Db::verify`] checked in a clean store.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyReport {
    /// The engine recorded in the store.
    pub engine: EngineKind,
    /// Entries found by the full scan (each also read back by key).
    pub entries: u64,
    /// Their key bytes.
    pub key_bytes: u64,
    /// Their value bytes.
    pub value_bytes: u64,
    /// Files in the directory.
    pub files: usize,
    /// Bytes read from the store's files.
    pub bytes_read: u64,
}

impl Db {
    /// Checks the closed database in `dir` without changing any of its files: opening (with
    /// recovery kept in memory), the engine's structural invariants, and a full scan checked
    /// against point reads. `options` are the options the store is used with (its engine is
    /// taken from the store's `LAMINA` file).
    ///
    /// Fails with `Io` if another process has the database open, `Incompatible` if `dir` is
    /// not a lamina database, and the first `Corruption` (file, offset, what) found.
    pub fn verify(dir: impl AsRef<Path>, options: Options) -> Result<VerifyReport> {
        let dir = dir.as_ref();
        let Some(meta) = Meta::read(dir)? else {
            return Err(Error::Incompatible {
                reason: format!(
                    "{} has no {META_FILE_NAME} file: not a lamina database",
                    dir.display()
                ),
            });
        };
        // fdtree's modes share one format: keep the caller's mode when it names this format.
        let engine = if options.engine.format_name() == meta.engine {
            options.engine
        } else {
            EngineKind::from_format_name(&meta.engine)?
        };
        let _lock = lock_if_present(dir)?;
        let options = Options { engine, ..options };
        options.validate()?;
        let overlay = Arc::new(OverlayStorage::open_dir(dir)?);
        let files = overlay.list()?.len();
        let intent = if meta.created { OpenIntent::MustExist } else { OpenIntent::CreateIfMissing };
        let opened = open_engine(dir, &options, intent, Some(overlay.clone()))?;
        let checked = check(&opened, engine);
        let closed = opened.index().close();
        let mut report = checked?;
        closed?;
        report.files = files;
        report.bytes_read = overlay.io_stats().bytes_read;
        Ok(report)
    }
}

/// The engine's verification, then the full scan against point reads.
fn check(engine: &crate::db::Engine, kind: EngineKind) -> Result<VerifyReport> {
    engine.verify_structure()?;
    let index = engine.index();
    let mut report = VerifyReport {
        engine: kind,
        entries: 0,
        key_bytes: 0,
        value_bytes: 0,
        files: 0,
        bytes_read: 0,
    };
    let mut range = KeyRange::all();
    let mut last: Option<Vec<u8>> = None;
    loop {
        let page = index.scan(&range, VERIFY_SCAN_PAGE_ENTRIES)?;
        for (key, value) in &page {
            if let Some(previous) = &last
                && previous.as_slice() >= key.as_slice()
            {
                return Err(disagreement(format!(
                    "the scan returned key {key:?} after {previous:?}: keys must ascend"
                )));
            }
            match index.get(key)? {
                Some(found) if found == *value => {}
                found => {
                    return Err(disagreement(format!(
                        "the scan returned {} bytes under key {key:?}, a point read {}",
                        value.len(),
                        found.map_or("found nothing".to_string(), |v| format!(
                            "returned {} different bytes",
                            v.len()
                        ))
                    )));
                }
            }
            report.entries += 1;
            report.key_bytes += key.len() as u64;
            report.value_bytes += value.len() as u64;
            last = Some(key.clone());
        }
        match page.last() {
            Some((key, _)) if page.len() == VERIFY_SCAN_PAGE_ENTRIES => {
                range = range.resume_after(key);
            }
            _ => return Ok(report),
        }
    }
}

fn disagreement(what: String) -> Error {
    Error::corruption("<the engine's index>", 0, what)
}

/// Takes the directory's lock if it has a `LOCK` file (never creating one): a store open in
/// another process is not verified, its files are changing.
fn lock_if_present(dir: &Path) -> Result<Option<File>> {
    let path = dir.join(LOCK_FILE_NAME);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("opening {}", path.display()), e)),
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Io {
            context: format!("locking {}", path.display()),
            source: std::io::Error::new(
                std::io::ErrorKind::ResourceBusy,
                "the database is open in another process or handle: close it before verifying",
            ),
        }),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::io(format!("locking {}", path.display()), e))
        }
    }
}
