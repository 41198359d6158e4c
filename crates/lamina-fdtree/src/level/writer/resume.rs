//! Continuing a level an FD+FC merge was writing, after a crash or a `close` (Remark A.6).
//!
//! The merge's progress record names, for each new level, how many blocks were written and
//! the entries of the block being filled. To continue the level, recovery also needs the
//! written blocks' index (segment directory, fences), Bloom filter and counts:
//! - after a crash it rebuilds them by reading and parsing every written block, which takes
//!   as long as reading what the merge wrote (5-13 s for a bottom-level merge at 50M keys,
//!   `docs/results/scale.md`, session 22);
//! - after a `close`, which pauses the merge at a stage boundary and commits its progress
//!   (`fc/run.rs`, `MergeEnd::Paused`), the pause also saves them
//!   ([`LevelWriter::save_written_index`]) in the level's index file, `fd-<id>.idx`, in the
//!   format of a finished level's index (`docs/format/fdtree-index.md`) covering only the
//!   written blocks, and recovery loads them from there and reads only the last written
//!   block (for its last key).
//!
//! A saved index is derived data, used only when it is exactly right: one that is missing,
//! damaged, or covers another number of blocks than the progress record says is passed
//! over and the index rebuilt from the blocks (checked as they are parsed). The blocks below
//! the record's count are never rewritten (the resumed merge cuts and rewrites only those
//! after it), so an index of exactly that many blocks of this level file describes them,
//! whichever writer saved it. The blocks a saved index describes were not checked by this
//! process, so the finished level does not count them as checked for reads in place
//! (`level_map.rs`): each is checked at its first read, as after an open.

use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::StorageFile;
use parking_lot::RwLock;

use super::{LevelWriter, Visibility};
use crate::format::block::SegmentInfo;
use crate::format::bloom::key_hash;
use crate::format::entry::{Entry, EntryRef};
use crate::format::index::LevelIndex;
use crate::format::segment::{SegmentAddr, parse_segment};
use crate::options::Params;
use crate::store::{BlockStore, FileKind, file_name};

impl LevelWriter {
    /// Saves the index, filter and counts of the written blocks in the level's index file,
    /// for the reopened tree to continue the level without reading them (module
    /// documentation). Call after the progress record naming [`LevelWriter::written_blocks`]
    /// is committed, with nothing pending ([`LevelWriter::sync_written`]).
    pub fn save_written_index(&self) -> Result<()> {
        assert!(self.pending.blocks.is_empty(), "the finished blocks are written first");
        debug_assert!(self.bloom_pipe.is_empty(), "the filter holds every key written");
        let encoded = {
            let index = self.index.read();
            assert_eq!(index.blocks(), self.written, "every written block is indexed");
            index.encode(self.file_id, &self.written_stats)
        };
        // One left by an earlier pause of this level (never read again: the progress record
        // has moved on), or by a `finish` that failed before its commit.
        let name = file_name(self.file_id, FileKind::Index);
        let storage = self.store.storage();
        if storage.exists(&name)? {
            storage.remove(&name)?;
        }
        self.store.write_file(self.file_id, FileKind::Index, &encoded)
    }

    /// A writer that continues a level an FD+FC merge had written `written` blocks of when
    /// its progress was committed (recovery, Remark A.6): the index, filter and counts are
    /// loaded from the index a pause saved, or else rebuilt by reading the written blocks;
    /// the block being filled is restored from `tail` (its entries, `None` if none was
    /// started). Nothing is written: recovery cuts the blocks after `written` off (and
    /// removes the index file) once the open is validated ([`crate::persist::RecoveryCleanup`]).
    #[allow(clippy::too_many_arguments)] // the pieces of a level's progress record
    pub fn restore(
        store: &BlockStore,
        params: &Params,
        label: usize,
        file_id: u32,
        file: Arc<dyn StorageFile>,
        written: u32,
        tail: Option<&[Entry]>,
        keys_max: u64,
        visibility: Visibility,
    ) -> Result<Self> {
        debug_assert!(file.len()? >= u64::from(written) * store.block_bytes() as u64);
        let mut w = LevelWriter::new(store, params, label, file_id, file, keys_max, visibility);
        if written > 0 && !w.load_saved_index(params, written)? {
            w.index_written_blocks(written)?;
        }
        w.started = written;
        w.written = written;
        w.written_stats = w.stats;
        w.written_last_key.clone_from(&w.last_key);
        if let Some(entries) = tail {
            let mut it = entries.iter();
            let leading = match entries.first() {
                Some(f @ Entry::Fence { .. }) => {
                    it.next();
                    Some(f.as_ref())
                }
                _ => None,
            };
            w.start_block(leading)?;
            for e in it {
                if !w.fits([e.encoded_len()]) {
                    return Err(store.corruption(
                        &*w.file,
                        written,
                        0,
                        "merge progress tail overflows its block",
                    ));
                }
                w.push(e.as_ref());
            }
        }
        Ok(w)
    }

    /// Takes the index a pause saved for exactly the `written` blocks, if there is one, and
    /// reads the last written block for its last key. Returns whether it did.
    fn load_saved_index(&mut self, params: &Params, written: u32) -> Result<bool> {
        debug_assert!(written > 0);
        if !self.store.storage().exists(&file_name(self.file_id, FileKind::Index))? {
            return Ok(false);
        }
        let bytes = self.store.read_file(self.file_id, FileKind::Index)?;
        let path = self.store.path(self.file_id, FileKind::Index);
        let decoded =
            LevelIndex::decode(&bytes, self.file_id, params.key_bytes_max, params.block_bytes);
        let (index, stats) = match decoded {
            Ok((index, stats)) if index.blocks() == written => (index, stats),
            Ok((index, _)) => {
                tracing::debug!(
                    path = %path.display(),
                    "a level index of {} blocks, the merge progress says {written}: rebuilt",
                    index.blocks()
                );
                return Ok(false);
            }
            Err(e) => {
                tracing::warn!(
                    path = %path.display(),
                    error = %e,
                    "the saved index of a level a merge is writing is damaged: rebuilding it \
                     from the level's blocks"
                );
                return Ok(false);
            }
        };
        let mut last_key = Vec::new();
        let mut buf = Vec::new();
        for_each_entry(&self.store, &*self.file, self.file_id, written - 1, &mut buf, |e| {
            last_key.clear();
            last_key.extend_from_slice(e.key());
        })?;
        self.bloom = index.bloom().clone();
        self.index = Arc::new(RwLock::new(index));
        self.stats = stats;
        self.last_key = Some(last_key);
        self.written_blocks_unchecked = true;
        Ok(true)
    }

    /// Rebuilds the index, filter and counts of blocks `0..written` by reading them.
    fn index_written_blocks(&mut self, written: u32) -> Result<()> {
        let mut buf = Vec::new();
        let mut last_key = Vec::new();
        for block in 0..written {
            let mut fences = Vec::new();
            let mut first = true;
            let (stats, bloom) = (&mut self.stats, &self.bloom);
            let segments =
                for_each_entry(&self.store, &*self.file, self.file_id, block, &mut buf, |e| {
                    stats.add(&e, first);
                    first = false;
                    match e {
                        EntryRef::Fence { key, ptr } => fences.push((key.to_vec(), ptr)),
                        _ => bloom.insert_hash(key_hash(e.key())),
                    }
                    last_key.clear();
                    last_key.extend_from_slice(e.key());
                })?;
            self.index.write().add_block(
                block,
                &segments,
                fences.iter().map(|(k, p)| (k.as_slice(), *p)),
            );
        }
        self.last_key = Some(last_key);
        Ok(())
    }
}

/// Reads block `block` of level file `file_id` into `buf`, parses its segments (checking
/// each), calls `visit` with each entry in order and returns
/// the block's segment directory.
fn for_each_entry(
    store: &BlockStore,
    file: &dyn StorageFile,
    file_id: u32,
    block: u32,
    buf: &mut Vec<u8>,
    mut visit: impl FnMut(EntryRef<'_>),
) -> Result<Vec<SegmentInfo>> {
    let (kmax, vmax) = store.limits();
    store.read_blocks(file, block, 1, buf)?;
    let mut segments = Vec::new();
    let mut at = 0;
    loop {
        let addr = SegmentAddr { file: file_id, block, offset: at as u32 };
        let seg = parse_segment(&buf[at..], addr)
            .map_err(|e| store.corruption(file, block, (at + e.offset) as u64, e.reason))?;
        let mut first_key = Vec::new();
        for (i, e) in seg.entries.iter(kmax, vmax).enumerate() {
            let e = e.map_err(|e| store.corruption(file, block, at as u64, e.reason))?;
            if i == 0 {
                first_key = e.key().to_vec();
            }
            visit(e);
        }
        segments.push(SegmentInfo { offset: at as u32, len: seg.header.len, first_key });
        at += usize::from(seg.header.len);
        if seg.header.is_last() {
            break;
        }
    }
    Ok(segments)
}
