//! The storage boundary: a flat directory of named files with positional I/O.
//!
//! Modelled on leveldb's `Env` and redb's `StorageBackend`: engines see only this narrow trait,
//! so the same engine code runs over real files ([`crate::FileStorage`]), memory
//! ([`crate::MemoryStorage`]) and the fault-injecting wrapper ([`crate::FaultyStorage`]).
//!
//! Semantics every backend follows (POSIX-like, so the file backend is a thin layer):
//! - A handle refers to the file it opened, not to its name: after `rename` the handle keeps
//!   working on the renamed file; after `remove` the handle's I/O still succeeds but the data is
//!   unreachable by name and no longer counted in live bytes.
//! - Opening a name that is already open returns a handle to the same file.
//! - Writes past the end extend the file (the gap reads as zeros).
//! - Nothing is durable until `sync_data` (file contents) and `sync_dir` (names) say so.
//! - `punch_hole` deallocates a byte range in place: it reads back as zeros, the length is
//!   unchanged, and only the part of the range inside the current length is affected.

use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::{Error, Result};

/// How [`Storage::open`] treats an existing or missing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the file if missing, else open it.
    Create,
    /// Create the file; fail if it exists.
    CreateNew,
    /// Open the file; fail if it is missing.
    Existing,
}

/// A directory of named files (flat names, no '/'), the storage boundary every engine uses.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Opens (or creates, per `mode`) the file `name`.
    fn open(&self, name: &str, mode: OpenMode) -> Result<Arc<dyn StorageFile>>;
    /// Removes `name`; fails if it is missing.
    fn remove(&self, name: &str) -> Result<()>;
    /// Renames `from` to `to`, atomically replacing `to` if it exists.
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    /// The names of all files, sorted.
    fn list(&self) -> Result<Vec<String>>;
    /// Whether `name` exists.
    fn exists(&self, name: &str) -> Result<bool>;
    /// Makes creations, renames and removals done so far durable.
    fn sync_dir(&self) -> Result<()>;
    /// Exact I/O counters since this storage was opened.
    fn io_stats(&self) -> lamina_core::IoStats;
    /// The path of `name`, for error messages ([`Error::Corruption`] names the file).
    fn path_of(&self, name: &str) -> PathBuf;

    /// Whether users of this storage must run their background work in lockstep with the
    /// calls that cause it, so that its operations come in an order fixed by those calls
    /// alone: the deterministic simulation's storage says so (`FaultyStorage::lockstep`),
    /// so that a seed replays exactly. In lockstep, timers never start storage work (the
    /// log flushes only when asked or full and retries a stalled flush only when asked,
    /// fdtree's writers wait for the flush they start, a full disk is retried when a writer
    /// asks); what is written is unchanged. Default: no (real storage).
    fn lockstep(&self) -> bool {
        false
    }

    /// Reads the whole file `name`.
    fn read_all(&self, name: &str) -> Result<Vec<u8>> {
        let file = self.open(name, OpenMode::Existing)?;
        let len = usize::try_from(file.len()?)
            .map_err(|_| Error::Unsupported { what: format!("reading all of {name}") })?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(0, &mut buf)?;
        Ok(buf)
    }
}

/// An open file of a [`Storage`].
pub trait StorageFile: Send + Sync + std::fmt::Debug {
    /// The name the file was opened under.
    fn name(&self) -> &str;
    /// Fills `buf` from `offset`; a read past the end is an [`Error::Io`] whose source has
    /// kind `UnexpectedEof`.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Writes all of `data` at `offset`, extending the file if needed.
    fn write_all_at(&self, offset: u64, data: &[u8]) -> Result<()>;
    /// Current length in bytes.
    fn len(&self) -> Result<u64>;
    /// Truncates or zero-extends to `len` bytes.
    fn set_len(&self, len: u64) -> Result<()>;
    /// `fdatasync`: everything written to THIS file so far is durable.
    fn sync_data(&self) -> Result<()>;
    /// Deallocates `len` bytes at `offset`: afterwards they read as zeros and, where the
    /// backend can, no longer occupy space (FD+FC section 4.4.2, m-delete: a merge frees old
    /// blocks of a level file one at a time, so the level needs no second copy). The length
    /// is unchanged: only the part of the range below the current length is punched, a range
    /// wholly past the end and a zero `len` do nothing (and succeed). Whole filesystem blocks
    /// inside the range are freed; partial ones at its edges are zeroed but stay allocated.
    /// Each backend documents its durability (see [`crate::faulty`] for the crash model).
    fn punch_hole(&self, offset: u64, len: u64) -> Result<()>;
    /// Bytes the file really occupies on its medium (file backend: `st_blocks * 512`; holes
    /// and never-written gaps do not count), as opposed to [`StorageFile::len`].
    fn allocated_bytes(&self) -> Result<u64>;

    /// A hint: start writing `offset..offset + len` back to the medium now, without waiting
    /// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`, RocksDB's `bytes_per_sync`). Durability
    /// is unchanged (only `sync_data` makes data durable); a writer that calls it every MiB
    /// or so keeps the device busy with a steady stream instead of one large burst at its
    /// `sync_data` or the kernel's next writeback, so other files' syncs do not queue behind
    /// that burst. Default: nothing.
    fn start_writeback(&self, offset: u64, len: u64) -> Result<()> {
        let _ = (offset, len);
        Ok(())
    }

    /// A read-only map of the file's first `len` bytes (`len` at most the file's length),
    /// or `None` when this backend or file offers no maps (the caller then reads with
    /// [`StorageFile::read_exact_at`]). The caller must not cut the file below `len` while
    /// the map lives ([`crate::read_map`]); reads through the map are not counted as I/O.
    fn map_read(&self, len: u64) -> Result<Option<crate::ReadMap>> {
        let _ = len;
        Ok(None)
    }

    /// A read-only map of `len` bytes from the file's start that may reach past its current
    /// end: a file still being appended to (fdtree's level being written by a merge, read
    /// by lookups behind the wavefront), mapped once instead of again as it grows. The
    /// caller reads through it only bytes the file already holds, and never cuts the file
    /// below a byte it has read while the map lives: touching a page past the file's end
    /// raises `SIGBUS` ([`crate::read_map`]). `None` when this backend or file offers no
    /// maps. Default: none.
    fn map_read_ahead(&self, len: u64) -> Result<Option<crate::ReadMap>> {
        let _ = len;
        Ok(None)
    }

    /// Whether the file is empty.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }
}

/// Longest file name any backend accepts.
pub const FILE_NAME_BYTES_MAX: usize = 255;

/// Largest file any backend accepts (offset + length of an access must stay below it).
pub const FILE_BYTES_MAX: u64 = 1 << 44;

/// Refuses names that are not a single flat component.
pub fn check_name(name: &str) -> Result<()> {
    let bad = |reason: &str| Err(Error::option("file name", format!("{name:?}: {reason}")));
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > FILE_NAME_BYTES_MAX {
        return bad(&format!("longer than {FILE_NAME_BYTES_MAX} bytes"));
    }
    if name == "." || name == ".." {
        return bad("not a file name");
    }
    if name.contains('/') || name.contains('\0') {
        return bad("contains '/' or NUL; names are flat");
    }
    Ok(())
}

/// Refuses accesses that would end past [`FILE_BYTES_MAX`].
pub fn check_range(name: &str, offset: u64, len: usize) -> Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= FILE_BYTES_MAX => Ok(()),
        _ => Err(Error::option(
            "offset",
            format!("access of {len} bytes at {offset} in {name} ends past {FILE_BYTES_MAX}"),
        )),
    }
}

/// Refuses punches that would end past [`FILE_BYTES_MAX`] (like [`check_range`] for `u64`
/// lengths).
pub fn check_punch_range(name: &str, offset: u64, len: u64) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if end <= FILE_BYTES_MAX => Ok(()),
        _ => Err(Error::option(
            "offset",
            format!("punch of {len} bytes at {offset} in {name} ends past {FILE_BYTES_MAX}"),
        )),
    }
}

/// The part of the range `offset..offset + len` that lies below `file_len` (what a punch
/// affects), as `(start, end)`; `None` when that part is empty.
pub fn punch_span(offset: u64, len: u64, file_len: u64) -> Option<(u64, u64)> {
    let end = offset.saturating_add(len).min(file_len);
    (end > offset).then_some((offset, end))
}

/// The error of a read past the end of a file.
pub fn eof_error(name: &str, offset: u64, len: usize, file_len: u64) -> Error {
    Error::io(
        format!("reading {len} bytes at {offset} of {name}"),
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("file is {file_len} bytes long"),
        ),
    )
}

/// The error of opening a missing file with [`OpenMode::Existing`] (and similar).
pub fn not_found(context: String) -> Error {
    Error::io(context, std::io::Error::from(std::io::ErrorKind::NotFound))
}

/// The error of [`OpenMode::CreateNew`] on an existing file.
pub fn already_exists(context: String) -> Error {
    Error::io(context, std::io::Error::from(std::io::ErrorKind::AlreadyExists))
}

/// The `io::ErrorKind` of an [`Error::Io`], if it is one.
pub fn io_error_kind(err: &Error) -> Option<std::io::ErrorKind> {
    match err {
        Error::Io { source, .. } => Some(source.kind()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_flat() {
        check_name("L1.dat").unwrap();
        for bad in ["", ".", "..", "a/b", "a\0b"] {
            assert!(check_name(bad).unwrap_err().is_invalid_argument(), "{bad:?}");
        }
        assert!(check_name(&"x".repeat(256)).is_err());
    }

    #[test]
    fn ranges_are_bounded() {
        check_range("f", 0, 10).unwrap();
        assert!(check_range("f", u64::MAX, 1).is_err());
        assert!(check_range("f", FILE_BYTES_MAX, 1).is_err());
        check_punch_range("f", 0, FILE_BYTES_MAX).unwrap();
        assert!(check_punch_range("f", 1, FILE_BYTES_MAX).is_err());
        assert!(check_punch_range("f", u64::MAX, 1).is_err());
    }

    #[test]
    fn punch_span_is_clipped_to_the_length() {
        assert_eq!(punch_span(10, 5, 100), Some((10, 15)));
        assert_eq!(punch_span(90, 50, 100), Some((90, 100)));
        assert_eq!(punch_span(100, 5, 100), None);
        assert_eq!(punch_span(10, 0, 100), None);
    }
}
