//! Damaging copies of a store: sparse copies (fptree's region file is 8 GiB sparse), the data
//! extents of a file (so damage lands on written bytes, not on holes), the damages of the
//! issue 20 sweep, and running a check under a watchdog (a hang is a failure, not a stuck
//! test). Shared by `tests/crash_image_damage_sweep.rs` and `tests/recovery_never_panics.rs`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest a single damaged-store check may take before it counts as a hang.
pub const CASE_TIMEOUT: Duration = Duration::from_mins(2);

/// The lock file `lamina::Db` keeps in a store directory.
const LOCK_FILE_NAME: &str = "LOCK";

/// Bytes copied per read while copying sparsely.
const COPY_CHUNK_BYTES: usize = 1 << 20;

/// Free bytes `/dev/shm` must have to hold scratch stores (a container's default is 64 MiB).
const SHM_FREE_BYTES_MIN: u64 = 2 << 30;

/// Free bytes of the file system holding `path` (0 if unknown).
fn free_bytes(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return 0 };
    // SAFETY: statvfs writes only into `stat`, a plain struct that zeroed bytes initialise
    // validly; `c_path` is a NUL-terminated string that outlives the call.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: see above.
    if unsafe { libc::statvfs(c_path.as_ptr(), &raw mut stat) } != 0 {
        return 0;
    }
    stat.f_bavail.saturating_mul(stat.f_frsize)
}

/// A directory for scratch stores: `/dev/shm` when present with room (no fsync cost), else
/// the system's temporary directory.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir()
        && free_bytes(shm) >= SHM_FREE_BYTES_MIN
        && let Ok(dir) = tempfile::Builder::new().prefix("lamina-damage-").tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("a temporary directory")
}

/// The store's files that a sweep damages: all but `LOCK` (advisory, its contents unused)
/// and `LAMINA` (the directory's engine record, checked by `tests/open.rs` of `lamina`).
pub fn store_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the store directory")
        .map(|e| e.expect("a directory entry").file_name().into_string().expect("UTF-8 name"))
        .filter(|name| name != LOCK_FILE_NAME && name != lamina::META_FILE_NAME)
        .collect();
    names.sort();
    names
}

/// Copies every file of `from` into `to`, keeping holes holes.
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("the store directory") {
        let entry = entry.expect("a directory entry");
        copy_sparse(&entry.path(), &to.join(entry.file_name()));
    }
}

/// `[start, end)` ranges of `path` that hold data (the rest are holes that read as zeros).
pub fn data_extents(path: &Path) -> Vec<(u64, u64)> {
    let file = File::open(path).expect("a store file");
    let len = file.metadata().expect("metadata").len();
    let seek = |whence: i32, offset: u64| -> i64 {
        let Ok(offset) = libc::off_t::try_from(offset) else { return -1 };
        // SAFETY: lseek on a descriptor `file` owns has no memory effects; past the end or in
        // a trailing hole it returns -1 (ENXIO), handled by the callers.
        unsafe { libc::lseek(file.as_raw_fd(), offset, whence) }
    };
    let mut extents = Vec::new();
    let mut at = 0u64;
    while at < len {
        let Ok(data) = u64::try_from(seek(libc::SEEK_DATA, at)) else { break };
        let hole = u64::try_from(seek(libc::SEEK_HOLE, data)).unwrap_or(len).max(data).min(len);
        if hole > data {
            extents.push((data, hole));
        }
        at = hole.max(at + 1);
    }
    extents
}

/// Copies `from` to `to` keeping holes holes.
pub fn copy_sparse(from: &Path, to: &Path) {
    let mut src = File::open(from).expect("a store file");
    let len = src.metadata().expect("metadata").len();
    let mut dst = File::create(to).expect("the copy");
    dst.set_len(len).expect("set_len");
    let mut buf = vec![0u8; COPY_CHUNK_BYTES];
    for (start, end) in data_extents(from) {
        src.seek(SeekFrom::Start(start)).expect("seek");
        dst.seek(SeekFrom::Start(start)).expect("seek");
        let mut pos = start;
        while pos < end {
            let n = usize::try_from(end - pos).unwrap_or(usize::MAX).min(buf.len());
            src.read_exact(&mut buf[..n]).expect("read");
            dst.write_all(&buf[..n]).expect("write");
            pos += n as u64;
        }
    }
}

/// The offset `permille`/1000 of the way through the file's data bytes (its extents laid end
/// to end), or `None` for a file without data.
pub fn data_offset(extents: &[(u64, u64)], permille: u64) -> Option<u64> {
    let total: u64 = extents.iter().map(|(s, e)| e - s).sum();
    if total == 0 {
        return None;
    }
    let mut want = (total * permille / 1000).min(total - 1);
    for &(start, end) in extents {
        if want < end - start {
            return Some(start + want);
        }
        want -= end - start;
    }
    unreachable!("want < total")
}

/// One damage of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// XOR one byte with 0x5a, `at_permille`/1000 of the way through the file's data.
    Flip {
        /// Where, in thousandths of the file's data.
        at_permille: u64,
    },
    /// Cut to half its length.
    CutInHalf,
    /// Cut to zero bytes.
    Empty,
    /// Removed.
    Delete,
}

/// The damages of the sweep, applied one at a time to fresh copies.
pub const DAMAGES: &[Damage] = &[
    Damage::Flip { at_permille: 0 },
    Damage::Flip { at_permille: 1 },
    Damage::Flip { at_permille: 250 },
    Damage::Flip { at_permille: 500 },
    Damage::Flip { at_permille: 999 },
    Damage::CutInHalf,
    Damage::Empty,
    Damage::Delete,
];

/// XORs the byte at `at` of `path` with `mask`.
pub fn xor_byte(path: &Path, at: u64, mask: u8) {
    let mut file = std::fs::OpenOptions::new().read(true).write(true).open(path).expect("open");
    let mut byte = [0u8];
    file.seek(SeekFrom::Start(at)).expect("seek");
    file.read_exact(&mut byte).expect("read");
    byte[0] ^= mask;
    file.seek(SeekFrom::Start(at)).expect("seek");
    file.write_all(&byte).expect("write");
}

/// Applies `damage` to `path` in place (never reading the file whole).
pub fn apply(path: &Path, damage: Damage) {
    let len = std::fs::metadata(path).expect("metadata").len();
    match damage {
        Damage::Flip { at_permille } => {
            if let Some(at) = data_offset(&data_extents(path), at_permille) {
                xor_byte(path, at, 0x5a);
            }
        }
        Damage::CutInHalf => set_len(path, len / 2),
        Damage::Empty => set_len(path, 0),
        Damage::Delete => std::fs::remove_file(path).expect("remove"),
    }
}

/// Cuts or extends `path` to `len` bytes.
pub fn set_len(path: &Path, len: u64) {
    std::fs::OpenOptions::new().write(true).open(path).expect("open").set_len(len).expect("len");
}

/// How a check of a damaged store ended when it did not return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Abnormal {
    /// It panicked (the message).
    Panic(String),
    /// It did not finish within [`CASE_TIMEOUT`].
    Hang,
}

/// Runs `check` on its own thread: its result, or how it failed to return one. A hung check's
/// thread is left behind (it cannot be stopped); the caller reports the hang.
pub fn bounded<T: Send + 'static>(
    check: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Abnormal> {
    let (send, receive) = std::sync::mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = send.send(check());
    });
    match receive.recv_timeout(CASE_TIMEOUT) {
        Ok(value) => {
            let _ = thread.join();
            Ok(value)
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(Abnormal::Hang),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            let payload = thread.join().expect_err("the thread ended without sending");
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "a panic without a message".to_string());
            Err(Abnormal::Panic(message))
        }
    }
}

/// A fresh scratch copy of `store` with `name` damaged by `damage`.
pub fn damaged_copy(store: &Path, name: &str, damage: Damage) -> (tempfile::TempDir, PathBuf) {
    let copy = scratch_dir();
    copy_dir(store, copy.path());
    let path = copy.path().join(name);
    apply(&path, damage);
    (copy, path)
}
