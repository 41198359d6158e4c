//! Block I/O: every read and write of a level block goes through here, and through the
//! `lamina-storage` trait below it. One level is one file (`fd-<id>.lvl`) of consecutive
//! blocks, so "the next block of a level" (the paper's linked list) is the next index, a merge
//! writes each new level sequentially, and a replaced level is reclaimed by removing its file.
//!
//! FD+FC (section 4) reclaims old blocks one at a time during a merge by punching them out
//! of their level file (`StorageFile::punch_hole`): the file keeps its length, the block's
//! space is freed, and the file is removed once the merge has reclaimed all of it.

use std::sync::Arc;

use lamina_core::codec::Decode;
use lamina_core::{Error, Result};
use lamina_storage::cache::{Access, BlockCache, BlockKey, CacheConfig};
use lamina_storage::{OpenMode, Storage, StorageFile};

use crate::block::Block;
use crate::entry::Entry;
use crate::options::Params;

/// Name of level file `id`.
pub fn level_file_name(id: u32) -> String {
    format!("fd-{id:08}.lvl")
}

/// Name of `L_0` snapshot file `id` (same block format, see `persist.rs`).
pub fn snapshot_file_name(id: u32) -> String {
    format!("fd-{id:08}.top")
}

/// Name of FD+FC merge progress record file `id` (`fc/progress.rs`).
pub fn progress_file_name(id: u32) -> String {
    format!("fd-{id:08}.mrg")
}

/// The id of a level, snapshot or merge progress file name.
pub fn parse_file_name(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("fd-")?;
    let id = rest
        .strip_suffix(".lvl")
        .or_else(|| rest.strip_suffix(".top"))
        .or_else(|| rest.strip_suffix(".mrg"))?;
    if id.len() != 8 {
        return None;
    }
    id.parse().ok()
}

/// Reads and writes level blocks.
#[derive(Debug, Clone)]
pub struct BlockStore {
    storage: Arc<dyn Storage>,
    /// Block cache for lookups (Algorithm 2 probes). Level files are written once by a
    /// merge and never modified, and file ids are never reused, so a cached block is valid
    /// for as long as it is reachable; blocks of removed files age out.
    cache: Option<Arc<BlockCache>>,
    block_bytes: usize,
    key_bytes_max: usize,
    value_bytes_max: usize,
}

impl BlockStore {
    /// A block store over `storage`.
    pub fn new(storage: Arc<dyn Storage>, params: &Params) -> Self {
        let cache = (params.cache_bytes > 0).then(|| {
            let config = CacheConfig {
                capacity_bytes: params.cache_bytes,
                block_bytes: params.block_bytes as usize,
                pinned_overflow_bytes_max: params.cache_bytes / 8,
            };
            Arc::new(BlockCache::new(config).expect("options checked: the cache holds a block"))
        });
        BlockStore {
            storage,
            cache,
            block_bytes: params.block_bytes as usize,
            key_bytes_max: params.key_bytes_max,
            value_bytes_max: params.value_bytes_max,
        }
    }

    /// The storage below.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Creates level file `id` (it must not exist).
    pub fn create(&self, id: u32) -> Result<Arc<dyn StorageFile>> {
        self.storage.open(&level_file_name(id), OpenMode::CreateNew)
    }

    /// Creates snapshot file `id` (it must not exist).
    pub fn create_snapshot(&self, id: u32) -> Result<Arc<dyn StorageFile>> {
        self.storage.open(&snapshot_file_name(id), OpenMode::CreateNew)
    }

    /// Opens existing level or snapshot file `id`.
    pub fn open_existing(&self, id: u32) -> Result<Arc<dyn StorageFile>> {
        let name = level_file_name(id);
        if self.storage.exists(&name)? {
            return self.storage.open(&name, OpenMode::Existing);
        }
        self.storage.open(&snapshot_file_name(id), OpenMode::Existing)
    }

    /// Removes level, snapshot or merge progress file `id`.
    pub fn remove(&self, id: u32) -> Result<()> {
        for name in [level_file_name(id), progress_file_name(id)] {
            if self.storage.exists(&name)? {
                return self.storage.remove(&name);
            }
        }
        self.storage.remove(&snapshot_file_name(id))
    }

    /// Writes block `index` of level file `file_id`.
    pub fn write(
        &self,
        file: &dyn StorageFile,
        file_id: u32,
        index: u32,
        entries: &[Entry],
    ) -> Result<()> {
        crate::block::write_entries(file, self.block_bytes, file_id, index, entries)
    }

    /// Reads and decodes block `index` of level file `file_id`: one read call.
    pub fn read(&self, file: &dyn StorageFile, file_id: u32, index: u32) -> Result<Block> {
        let path = self.storage.path_of(file.name());
        let limits = (self.key_bytes_max, self.value_bytes_max);
        Block::read(file, &path, self.block_bytes, file_id, index, limits)
    }

    /// Runs Algorithm 2 on block `index` of level file `file_id` for `key`: one read call,
    /// no decoding into owned entries.
    pub fn probe(
        &self,
        file: &dyn StorageFile,
        file_id: u32,
        index: u32,
        key: &[u8],
    ) -> Result<crate::probe::Probe> {
        let path = self.storage.path_of(file.name());
        if let Some(cache) = &self.cache {
            return self.cached_probe(cache, file, &path, file_id, index, key);
        }
        let payload = Block::read_payload(file, &path, self.block_bytes, file_id, index)?;
        crate::probe::probe(&payload, key, self.key_bytes_max, self.value_bytes_max).map_err(|e| {
            let header = lamina_storage::block::BLOCK_HEADER_BYTES as u64;
            e.at(&path, u64::from(index) * self.block_bytes as u64 + header)
        })
    }

    /// Probes a block through the cache. A miss reads the block, checks it (the storage
    /// block format's checksum, type, owner and position; a corrupt block is reported and
    /// never cached) and caches its payload, length-prefixed; a hit probes the cached
    /// payload in place (no checksum, no copy: it was checked when loaded).
    fn cached_probe(
        &self,
        cache: &BlockCache,
        file: &dyn StorageFile,
        path: &std::path::Path,
        file_id: u32,
        index: u32,
        key: &[u8],
    ) -> Result<crate::probe::Probe> {
        let offset = u64::from(index) * self.block_bytes as u64;
        let key_of = BlockKey::new(u64::from(file_id), u64::from(index));
        let pinned = cache.pin(key_of, Access::Point, |frame| {
            let mut raw = vec![0u8; self.block_bytes];
            file.read_exact_at(offset, &mut raw)?;
            let block =
                lamina_storage::block::Block::decode(&raw).map_err(|e| e.at(path, offset))?;
            block
                .expect(crate::block::LEVEL_BLOCK_TYPE, u64::from(file_id), u64::from(index))
                .map_err(|reason| Error::corruption(path, offset, reason))?;
            let len = block.payload.len();
            assert!(len + 4 <= frame.len(), "a block's payload fits its frame");
            frame[..4].copy_from_slice(&(len as u32).to_le_bytes());
            frame[4..4 + len].copy_from_slice(&block.payload);
            Ok(())
        })?;
        let guard = pinned.read();
        let len = u32::from_le_bytes(guard[..4].try_into().expect("4 bytes")) as usize;
        let payload = &guard[4..4 + len];
        crate::probe::probe(payload, key, self.key_bytes_max, self.value_bytes_max).map_err(|e| {
            let header = lamina_storage::block::BLOCK_HEADER_BYTES as u64;
            e.at(path, offset + header)
        })
    }

    /// The key and value limits blocks are decoded with.
    pub fn params_limits(&self) -> (usize, usize) {
        (self.key_bytes_max, self.value_bytes_max)
    }

    /// The block size.
    pub fn block_bytes(&self) -> usize {
        self.block_bytes
    }

    /// Frees the space of block `index` of a level file (FD+FC reclaims old blocks one at a
    /// time during a merge, section 4.4.2); the block reads as zeros afterwards.
    pub fn punch_block(&self, file: &dyn StorageFile, index: u32) -> Result<()> {
        let bytes = self.block_bytes as u64;
        file.punch_hole(u64::from(index) * bytes, bytes)
    }

    /// Block cache counters (hits, misses), if there is a cache.
    pub fn cache_stats(&self) -> Option<lamina_storage::cache::CacheStats> {
        self.cache.as_ref().map(|c| c.stats())
    }

    /// Makes a level file durable.
    pub fn sync(&self, file: &dyn StorageFile) -> Result<()> {
        file.sync_data()
    }

    /// The corruption error for a structural problem found in `file` at block `index`.
    pub fn corruption(
        &self,
        file: &dyn StorageFile,
        index: u32,
        reason: impl Into<String>,
    ) -> Error {
        Error::corruption(
            self.storage.path_of(file.name()),
            u64::from(index) * self.block_bytes as u64,
            reason,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_parse() {
        assert_eq!(parse_file_name(&level_file_name(42)), Some(42));
        assert_eq!(parse_file_name(&snapshot_file_name(7)), Some(7));
        assert_eq!(parse_file_name(&progress_file_name(9)), Some(9));
        assert_eq!(parse_file_name("fdtree.super"), None);
        assert_eq!(parse_file_name("fd-1.lvl"), None);
    }
}
