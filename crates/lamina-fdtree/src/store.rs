//! Block and file I/O: every read and write of a level goes through here, and through the
//! `lamina-storage` trait below it.
//!
//! Files, all named `fd-<id>` with an 8-digit id that is never reused:
//! - `.lvl`: a level or `L_0` run, block `n` at `n * block_bytes` (the paper's linked list of
//!   blocks is the file order; a merge writes each new level sequentially);
//! - `.idx`: that level's index (`format/index.rs`), written when the level is finished;
//! - `.fen`: `L_0`'s fences at a checkpoint (`persist/fences.rs`);
//! - `.mrg`: an FD+FC merge's progress record (`fc/progress.rs`).
//!
//! FD+FC (section 4) reclaims old blocks one at a time during a merge by punching them out
//! of their file (`StorageFile::punch_hole`): the file keeps its length, the block's space
//! is freed, and the file is removed once the merge is over.
//!
//! Lookups read single segments in place from a finished level's read-only map
//! (`level_map.rs`), else through an optional cache of segments (segments are written once
//! and never modified, and file ids are never reused, so a cached segment is valid as long as
//! it is reachable; segments of removed files age out).

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::{Error, Result};
use lamina_storage::cache::{Access, BlockCache, BlockKey, CacheConfig};
use lamina_storage::{OpenMode, Storage, StorageFile};

use crate::format::index::SegmentPos;
use crate::format::segment::{
    EntryRun, SEGMENT_HEADER_BYTES, SegmentAddr, checked_segment_entries, parse_segment,
};
use crate::level_map::Mapped;
use crate::options::Params;

/// Kinds of files a tree keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A level or run's blocks.
    Level,
    /// A level or run's index.
    Index,
    /// `L_0`'s fences.
    Fences,
    /// An FD+FC merge's progress record.
    Progress,
}

impl FileKind {
    const ALL: [FileKind; 4] =
        [FileKind::Level, FileKind::Index, FileKind::Fences, FileKind::Progress];

    fn suffix(self) -> &'static str {
        match self {
            FileKind::Level => "lvl",
            FileKind::Index => "idx",
            FileKind::Fences => "fen",
            FileKind::Progress => "mrg",
        }
    }
}

/// Name of file `id` of `kind`.
pub fn file_name(id: u32, kind: FileKind) -> String {
    format!("fd-{id:08}.{}", kind.suffix())
}

/// The id and kind of a tree file name.
pub fn parse_file_name(name: &str) -> Option<(u32, FileKind)> {
    let rest = name.strip_prefix("fd-")?;
    let (id, suffix) = rest.split_once('.')?;
    if id.len() != 8 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let kind = FileKind::ALL.into_iter().find(|k| k.suffix() == suffix)?;
    Some((id.parse().ok()?, kind))
}

thread_local! {
    /// A lookup's segment buffer (no allocation per lookup).
    static SEGMENT_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Reads and writes level files.
#[derive(Debug, Clone)]
pub struct BlockStore {
    storage: Arc<dyn Storage>,
    cache: Option<Arc<BlockCache>>,
    block_bytes: usize,
    /// Frames of the cache: a 2-byte length, then a segment of at most this many bytes.
    frame_bytes: usize,
    key_bytes_max: usize,
    value_bytes_max: usize,
    /// Segments read through a map (shared by the clones of the store).
    mapped_reads: Arc<AtomicU64>,
    /// Set when recovery opened the older superblock commit because the newest one is
    /// damaged or missing ([`BlockStore::set_older_commit`]): the data that commit names
    /// may have been freed since, so damage found in it is reported as the superblock's.
    older_commit_of: Arc<std::sync::OnceLock<PathBuf>>,
}

impl BlockStore {
    /// A store over `storage`.
    pub fn new(storage: Arc<dyn Storage>, params: &Params) -> Self {
        let frame_bytes = params.segment_bytes as usize + 2;
        let cache = (params.cache_bytes >= frame_bytes).then(|| {
            let config = CacheConfig {
                capacity_bytes: params.cache_bytes,
                block_bytes: frame_bytes,
                pinned_overflow_bytes_max: params.cache_bytes / 8,
            };
            Arc::new(BlockCache::new(config).expect("options checked: the cache holds a frame"))
        });
        BlockStore {
            storage,
            cache,
            block_bytes: params.block_bytes as usize,
            frame_bytes,
            key_bytes_max: params.key_bytes_max,
            value_bytes_max: params.value_bytes_max,
            mapped_reads: Arc::new(AtomicU64::new(0)),
            older_commit_of: Arc::default(),
        }
    }

    /// Recovery opened the older commit of `superblock` (its newest slot is damaged or was
    /// cut off). A torn commit leaves the older one intact; but a commit damaged after it
    /// was made had already let the tree free what the older one names (reclaimed blocks,
    /// replaced files), so a read of such data fails: [`BlockStore::corruption`] then names
    /// the superblock, whose damage is the cause.
    pub fn set_older_commit(&self, superblock: PathBuf) {
        let _ = self.older_commit_of.set(superblock);
    }

    /// The superblock whose older commit is open, if recovery had to fall back to it.
    pub fn older_commit_of(&self) -> Option<&PathBuf> {
        self.older_commit_of.get()
    }

    /// `e`, met while opening or reading the older commit recovery fell back to, as the
    /// superblock's corruption (see [`BlockStore::set_older_commit`]); otherwise `e`.
    pub fn blame_older_commit(&self, e: Error) -> Error {
        let Some(superblock) = self.older_commit_of() else { return e };
        match &e {
            Error::Corruption { file, .. } if file == superblock => e,
            Error::Corruption { .. } | Error::Io { .. } => Error::corruption(
                superblock,
                0,
                format!(
                    "the newest commit is damaged or missing, and the older one names data \
                     freed since: {e}"
                ),
            ),
            _ => e,
        }
    }

    /// The storage below.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The block size.
    pub fn block_bytes(&self) -> usize {
        self.block_bytes
    }

    /// The key and value limits entries are decoded with.
    pub fn limits(&self) -> (usize, usize) {
        (self.key_bytes_max, self.value_bytes_max)
    }

    /// The path of file `id` of `kind` (for error messages).
    pub fn path(&self, id: u32, kind: FileKind) -> PathBuf {
        self.storage.path_of(&file_name(id, kind))
    }

    /// Creates file `id` of `kind` (it must not exist).
    pub fn create(&self, id: u32, kind: FileKind) -> Result<Arc<dyn StorageFile>> {
        self.storage.open(&file_name(id, kind), OpenMode::CreateNew)
    }

    /// Opens existing file `id` of `kind`.
    pub fn open_existing(&self, id: u32, kind: FileKind) -> Result<Arc<dyn StorageFile>> {
        self.storage.open(&file_name(id, kind), OpenMode::Existing)
    }

    /// Removes every file of id `id` that exists (a level and its index, a fences file, a
    /// progress record).
    pub fn remove_all(&self, id: u32) -> Result<()> {
        for kind in FileKind::ALL {
            let name = file_name(id, kind);
            if self.storage.exists(&name)? {
                self.storage.remove(&name)?;
            }
        }
        Ok(())
    }

    /// Writes `bytes` (whole blocks) as blocks `first..` of a level file.
    pub fn write_blocks(&self, file: &dyn StorageFile, first: u32, bytes: &[u8]) -> Result<()> {
        debug_assert_eq!(bytes.len() % self.block_bytes, 0, "whole blocks");
        file.write_all_at(u64::from(first) * self.block_bytes as u64, bytes)
    }

    /// Reads `count` blocks from block `first` of a level file into `buf` (resized).
    pub fn read_blocks(
        &self,
        file: &dyn StorageFile,
        first: u32,
        count: u32,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        buf.resize(count as usize * self.block_bytes, 0);
        file.read_exact_at(u64::from(first) * self.block_bytes as u64, buf)
    }

    /// Frees the space of blocks `first..first + count` of a level file (FD+FC reclaims old
    /// blocks during a merge, section 4.4.2); they read as zeros afterwards.
    pub fn punch_blocks(&self, file: &dyn StorageFile, first: u32, count: u32) -> Result<()> {
        let bytes = self.block_bytes as u64;
        file.punch_hole(u64::from(first) * bytes, u64::from(count) * bytes)
    }

    /// The corruption error for a structural problem found in level file `file` at block
    /// `index` (plus `offset` bytes).
    pub fn corruption(
        &self,
        file: &dyn StorageFile,
        index: u32,
        offset: u64,
        reason: impl Into<String>,
    ) -> Error {
        let path = self.storage.path_of(file.name());
        let offset = u64::from(index) * self.block_bytes as u64 + offset;
        match self.older_commit_of() {
            Some(superblock) => Error::corruption(
                superblock,
                0,
                format!(
                    "the newest commit is damaged or missing, and the older one names data \
                     freed since ({} at offset {offset}: {})",
                    path.display(),
                    reason.into()
                ),
            ),
            None => Error::corruption(path, offset, reason),
        }
    }

    /// Runs `f` on the entries of segment `pos` of level file `file_id` (checked: checksum,
    /// place, entry order), read in place from `mapped` (the level's map and the segment's
    /// number in the level) if it covers the segment (`level_map.rs`), else through the
    /// cache.
    pub fn with_segment<R>(
        &self,
        file: &dyn StorageFile,
        file_id: u32,
        mapped: Option<(&Mapped, usize)>,
        pos: SegmentPos,
        f: impl FnOnce(EntryRun<'_>) -> Result<R>,
    ) -> Result<R> {
        let addr = SegmentAddr { file: file_id, block: pos.block, offset: pos.offset };
        let at = u64::from(pos.block) * self.block_bytes as u64 + u64::from(pos.offset);
        let len = usize::from(pos.len);
        let bad = |e: lamina_core::codec::DecodeError| {
            self.blame_older_commit(e.at(&self.storage.path_of(file.name()), at))
        };
        if let Some((map, number)) = mapped
            && let Some(bytes) = map.bytes.get(at, len)
        {
            self.mapped_reads.fetch_add(1, Ordering::Relaxed);
            // Checked in full once, as the cache checks a segment when it loads it.
            if map.is_checked(number)
                && let Some(entries) = checked_segment_entries(bytes)
            {
                return f(entries);
            }
            let seg = parse_segment(bytes, addr).map_err(bad)?;
            map.set_checked(number);
            return f(seg.entries);
        }
        if let Some(cache) = &self.cache
            && len + 2 <= self.frame_bytes
        {
            let key = BlockKey::new(u64::from(file_id), at);
            let pinned = cache.pin(key, Access::Point, |frame| {
                file.read_exact_at(at, &mut frame[2..2 + len])?;
                // Checked once, when loaded: a corrupt segment is reported, never cached.
                parse_segment(&frame[2..2 + len], addr).map_err(bad)?;
                frame[..2].copy_from_slice(&(len as u16).to_le_bytes());
                Ok(())
            })?;
            let guard = pinned.read();
            let cached = usize::from(u16::from_le_bytes([guard[0], guard[1]]));
            if cached != len {
                return Err(self.corruption(
                    file,
                    pos.block,
                    u64::from(pos.offset),
                    format!("segment cached with {cached} bytes, the index says {len}"),
                ));
            }
            let count = u16::from_le_bytes([guard[2 + 20], guard[2 + 21]]);
            return f(EntryRun { bytes: &guard[2 + SEGMENT_HEADER_BYTES..2 + len], count });
        }
        SEGMENT_BUF.with_borrow_mut(|buf| {
            buf.resize(len, 0);
            file.read_exact_at(at, buf)?;
            let seg = parse_segment(buf, addr).map_err(bad)?;
            f(seg.entries)
        })
    }

    /// Segments read in place through a level's map (`level_map.rs`) since the store was
    /// made; those reads are not in the storage's I/O counters.
    pub fn mapped_reads(&self) -> u64 {
        self.mapped_reads.load(Ordering::Relaxed)
    }

    /// Segment cache counters (hits, misses), if there is a cache.
    pub fn cache_stats(&self) -> Option<lamina_storage::cache::CacheStats> {
        self.cache.as_ref().map(|c| c.stats())
    }

    /// Drops the cached segments of a removed level file.
    pub fn forget_file(&self, file_id: u32) {
        if let Some(cache) = &self.cache {
            cache.invalidate_file(u64::from(file_id));
        }
    }

    /// Writes a whole small file (an index, a fences file, a progress record) and syncs it.
    pub fn write_file(&self, id: u32, kind: FileKind, bytes: &[u8]) -> Result<()> {
        let file = self.write_file_unsynced(id, kind, bytes)?;
        let synced = file.sync_data();
        if synced.is_err() {
            drop(file);
            let _ = self.storage.remove(&file_name(id, kind)); // as in `write_file_unsynced`
        }
        synced
    }

    /// Writes a whole small file without syncing it; the caller syncs it before any commit
    /// names it (`Tree::unsynced_files`).
    pub fn write_file_unsynced(
        &self,
        id: u32,
        kind: FileKind,
        bytes: &[u8],
    ) -> Result<Arc<dyn StorageFile>> {
        let file = self.create(id, kind)?;
        if let Err(e) = file.write_all_at(0, bytes) {
            // All or nothing, so that writing it again (after a full disk) can create it anew;
            // a file that cannot be removed is removed by the next recovery (no committed
            // state names it).
            drop(file);
            let _ = self.storage.remove(&file_name(id, kind));
            return Err(e);
        }
        Ok(file)
    }

    /// Reads a whole small file.
    pub fn read_file(&self, id: u32, kind: FileKind) -> Result<Vec<u8>> {
        self.storage.read_all(&file_name(id, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_parse() {
        for kind in FileKind::ALL {
            assert_eq!(parse_file_name(&file_name(42, kind)), Some((42, kind)));
        }
        assert_eq!(parse_file_name("fdtree.super"), None);
        assert_eq!(parse_file_name("fd-1.lvl"), None);
        assert_eq!(parse_file_name("fd-0000000x.lvl"), None);
        assert_eq!(parse_file_name("fd-00000001.tmp"), None);
    }
}
