//! Read-only maps of files: a reader probes the bytes in place, with no system call, no copy
//! and no cache frame per read (how LMDB reads its B-tree; the OS page cache is the cache).
//!
//! A backend offers them through [`crate::StorageFile::map_read`]; the `file` backend maps
//! with `mmap(PROT_READ, MAP_SHARED)` and `madvise(MADV_RANDOM)` (a point lookup wants one
//! page, not the kernel's read-ahead around it), the `memory` and fault-injecting backends
//! offer none (their readers keep using `read_exact_at`, so injected faults and exact I/O
//! counts still apply to them).
//!
//! The contract that makes a map safe to read: **the mapped range is never cut off the file
//! while a map of it lives.** Writing, punching holes (they read back as zeros) and removing
//! the file's name are fine; truncating below the mapped length is not (a read of a page past
//! the end raises `SIGBUS`). Engines map only files they have finished writing and never
//! resize again (fdtree's finished level files). A file truncated behind the process's back
//! while it is open is outside that contract, as it is for LMDB.
//!
//! [`crate::StorageFile::map_read_ahead`] maps a file still being appended to, past its
//! current end, once: its reader touches only bytes already written (fdtree reads a level
//! being written only in blocks it has indexed, which it indexes after writing them).
//!
//! Reads through a map are not I/O calls and are not counted by the accounting
//! ([`crate::accounting`]); engines that map count their mapped reads themselves.

use std::fmt;
use std::ops::Deref;

/// A read-only map of a file's first [`ReadMap::len`] bytes.
pub struct ReadMap {
    map: memmap2::Mmap,
}

impl ReadMap {
    /// Wraps a map made by a backend that upholds the module's contract.
    pub(crate) fn new(map: memmap2::Mmap) -> Self {
        ReadMap { map }
    }

    /// The bytes at `offset..offset + len`, if the map covers them.
    pub fn get(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        self.map.get(start..start.checked_add(len)?)
    }
}

impl Deref for ReadMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl fmt::Debug for ReadMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadMap").field("len", &self.map.len()).finish()
    }
}
