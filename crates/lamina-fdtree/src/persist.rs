//! Durability of a persistent tree (the paper leaves it to "separate logging", section 2.1).
//!
//! - Every modification is appended to the group-commit log (`lamina_storage::log`) under
//!   the tree's write lock, so log order is apply order; `Durability::Sync` callers wait for
//!   the log to be synced after releasing the lock (group commit).
//! - After every merge (and at close) the tree is checkpointed: the new level files are
//!   already synced by merge-execute; `L_0` is written to a snapshot file; the manifest
//!   (levels, counters, snapshot, and the sequence number of the last log record the state
//!   reflects) is committed through the superblock; only then are the replaced level files
//!   and the previous snapshot removed, and the log truncated.
//! - Recovery opens the superblock's state, removes level and snapshot files it does not
//!   name (a crash between writing them and committing), and replays the log records after
//!   the committed sequence number.

use std::collections::BTreeSet;
use std::sync::Arc;

use lamina_core::codec::{Decode, Encode};
use lamina_core::{BatchOp, Error, Result};
use lamina_storage::log::{Record, RecordOp, SegmentLog, SeqNo};
use lamina_storage::{SlotState, Superblock};

use crate::block::{BLOCK_HEADER_BYTES, Block};
use crate::entry::Entry;
use crate::level::DiskLevel;
use crate::manifest::{LevelRecord, Manifest};
use crate::options::Params;
use crate::store::BlockStore;
use crate::top::TopLevel;
use crate::tree::Tree;

/// Superblock file of a persistent tree.
pub const SUPERBLOCK_FILE_NAME: &str = "fdtree.super";
/// Block size of the superblock (a manifest of 256 levels fits).
pub const SUPERBLOCK_BYTES: usize = 16 << 10;
/// Owner id written into the superblock's blocks.
const SUPERBLOCK_OWNER: u64 = u64::from_le_bytes(*b"FDTREE01");
/// File name prefix of the log's segments.
pub const LOG_FILE_PREFIX: &str = "fdtree_wal";

/// The durable side of a persistent tree.
#[derive(Debug)]
pub struct Persist {
    superblock: Superblock,
    log: Option<Arc<SegmentLog>>,
    /// The current `L_0` snapshot file and its block count.
    top_file: Option<(u32, u32)>,
    /// The committed progress record of an FD+FC merge in progress (`fc/commit.rs`).
    pub(crate) merge_file: Option<u32>,
}

impl Persist {
    /// Commits `manifest` through the superblock (after syncing the log, so that the log
    /// keeps numbering after `applied_seq`), then makes `top_file` and `merge_file` the
    /// current ones and returns the ones they replace (to be removed by the caller).
    pub(crate) fn commit_merge_state(
        &mut self,
        manifest: &Manifest,
        top_file: Option<(u32, u32)>,
    ) -> Result<Vec<u32>> {
        if let Some(log) = &self.log {
            log.sync()?;
        }
        self.superblock.commit(&manifest.encode())?;
        let mut replaced = Vec::new();
        if let Some(top) = top_file
            && let Some(old) = self.top_file.replace(top)
        {
            replaced.push(old.0);
        }
        let merge_file = (manifest.merge_file != 0).then_some(manifest.merge_file);
        if let Some(old) = std::mem::replace(&mut self.merge_file, merge_file)
            && Some(old) != merge_file
        {
            replaced.push(old);
        }
        if let Some(log) = &self.log {
            log.truncate(manifest.applied_seq)?;
        }
        Ok(replaced)
    }
}

impl Tree {
    /// Opens the persistent tree in `store`'s storage (an empty one if there is none yet).
    pub fn recover(params: Params, store: BlockStore) -> Result<Tree> {
        let storage = store.storage().clone();
        let mut superblock = Superblock::open(
            storage.clone(),
            SUPERBLOCK_FILE_NAME,
            SUPERBLOCK_OWNER,
            SUPERBLOCK_BYTES,
        )?;
        let mut tree = Tree::new(params, store);
        let Some(committed) = superblock.current() else {
            if superblock.slots().iter().any(|s| matches!(s, SlotState::Damaged { .. })) {
                return Err(Error::corruption(
                    superblock.path(),
                    0,
                    "the only superblock commit is damaged",
                ));
            }
            // A new store: commit the empty state before anything depends on it.
            superblock.commit(&tree.manifest(0, 0).encode())?;
            tree.persist =
                Some(Persist { superblock, log: None, top_file: None, merge_file: None });
            tree.remove_unknown_files(&BTreeSet::new())?;
            return Ok(tree);
        };
        let path = superblock.path().to_path_buf();
        let m = Manifest::decode(&committed.payload)
            .map_err(|e| Error::corruption(&path, 0, format!("manifest: {e}")))?;
        tree.check_compatible(&m)?;
        let mut known = BTreeSet::new();
        let mut prev_label = 0;
        for r in &m.levels {
            let label = usize::try_from(r.label).unwrap_or(usize::MAX);
            if label <= prev_label || label > 4096 || r.file_id >= m.next_file_id || r.blocks == 0 {
                return Err(Error::corruption(&path, 0, format!("bad level record {r:?}")));
            }
            prev_label = label;
            let file = tree.store.open_existing(r.file_id)?;
            let expected = u64::from(r.blocks) * u64::from(tree.params.block_bytes);
            if file.len()? != expected {
                return Err(Error::corruption(
                    storage.path_of(file.name()),
                    0,
                    format!("level file is {} bytes, the manifest says {expected}", file.len()?),
                ));
            }
            known.insert(r.file_id);
            tree.levels.push(DiskLevel {
                label,
                file_id: r.file_id,
                file,
                blocks: r.blocks,
                stats: r.stats,
                shared: crate::latch::LevelShared::with_blocks(r.blocks),
            });
        }
        let mut top = TopLevel::new();
        let top_file = (m.top_file != 0).then_some((m.top_file, m.top_blocks));
        if let Some((id, blocks)) = top_file {
            known.insert(id);
            let file = tree.store.open_existing(id)?;
            for index in 0..blocks {
                for e in tree.store.read(&*file, id, index)?.entries {
                    top.add_entry(e);
                }
            }
        }
        tree.top = top;
        tree.counters = m.counters;
        tree.next_file_id = m.next_file_id;
        tree.applied_seq = m.applied_seq;
        tree.persist = Some(Persist { superblock, log: None, top_file, merge_file: None });
        if m.merge_file != 0 {
            tree.recover_merge(&m, &mut known)?;
        }
        tree.remove_unknown_files(&known)?;
        Ok(tree)
    }

    /// Attaches the log after recovery and replays `records` (those after the committed
    /// state, in sequence order).
    pub fn attach_log(&mut self, log: Arc<SegmentLog>, records: Vec<Record>) -> Result<()> {
        let next = log.stats().next_seq;
        if next <= self.applied_seq {
            return Err(Error::corruption(
                self.store.storage().path_of(LOG_FILE_PREFIX),
                0,
                format!(
                    "the log ends at {next}, before the committed state ({})",
                    self.applied_seq
                ),
            ));
        }
        self.persist.as_mut().expect("a persistent tree").log = Some(log);
        for record in records {
            if record.seq <= self.applied_seq {
                continue;
            }
            match &record.op {
                RecordOp::Put { key, value } => self.apply_put(key, value)?,
                RecordOp::Delete { key } => drop(self.apply_delete(key)?),
                RecordOp::Batch(ops) => {
                    for op in ops {
                        match op {
                            BatchOp::Put { key, value } => self.apply_put(key, value)?,
                            BatchOp::Delete { key } => drop(self.apply_delete(key)?),
                        }
                    }
                }
            }
            self.applied_seq = record.seq;
            self.run_triggered_merges()?;
        }
        Ok(())
    }

    /// A checkpoint must not run between a background merge's start and its switch: the
    /// snapshot would miss `L_0^old` (only possible if the merge thread died). The log keeps
    /// every record after the last commit, so recovery still has them.
    fn refuse_mid_merge(&self) -> Result<()> {
        if self.frozen_top.is_some() || self.fc.is_some() {
            return Err(Error::corruption(
                "fdtree L_0",
                0,
                "checkpoint refused: a background merge was interrupted (L_0^old unmerged)",
            ));
        }
        Ok(())
    }

    /// Sets the sequence number of the last applied log record.
    pub fn set_applied_seq(&mut self, seq: SeqNo) {
        debug_assert!(seq > self.applied_seq, "log records apply in sequence order");
        self.applied_seq = seq;
    }

    /// Writes `L_0`, commits the manifest through the superblock, then reclaims replaced
    /// files and truncates the log. A no-op for a volatile tree.
    pub fn checkpoint(&mut self) -> Result<()> {
        self.refuse_mid_merge()?;
        let Some(mut persist) = self.persist.take() else { return Ok(()) };
        let result = self.checkpoint_with(&mut persist);
        self.persist = Some(persist);
        result
    }

    fn checkpoint_with(&mut self, persist: &mut Persist) -> Result<()> {
        // The log must keep numbering after the committed state: make the records it reflects
        // durable first, or a crash could restart the log below `applied_seq` and later
        // records would be skipped by replay.
        if let Some(log) = &persist.log {
            log.sync()?;
        }
        let entries = self.top.entries();
        let new_top = if entries.is_empty() { None } else { Some(self.write_snapshot(&entries)?) };
        let (id, blocks) = new_top.unwrap_or((0, 0));
        // The names of the new level files and of the snapshot must be durable before the
        // manifest that refers to them (their contents were synced when written).
        let committed = self
            .store
            .storage()
            .sync_dir()
            .and_then(|()| persist.superblock.commit(&self.manifest(id, blocks).encode()));
        if let Err(e) = committed {
            if new_top.is_some() {
                let _ = self.store.remove(id); // never committed; the error is what matters
            }
            return Err(e);
        }
        let old_top = std::mem::replace(&mut persist.top_file, new_top);
        // An FD+FC merge's progress record, if the merge just ended, is no longer named.
        let old_merge = persist.merge_file.take();
        for file in std::mem::take(&mut self.obsolete_files)
            .into_iter()
            .chain(old_top.map(|t| t.0))
            .chain(old_merge)
        {
            self.store.remove(file)?;
        }
        if let Some(log) = &persist.log {
            log.truncate(self.applied_seq)?;
        }
        Ok(())
    }

    /// Writes `entries` (all of `L_0`) into a new snapshot file; returns its id and blocks.
    fn write_snapshot(&mut self, entries: &[Entry]) -> Result<(u32, u32)> {
        let id = self.alloc_file_id()?;
        let blocks = write_snapshot_file(&self.store, self.params.block_bytes, id, entries)?;
        Ok((id, blocks))
    }

    /// First half of a checkpoint taken without holding the tree lock for its I/O (FD+DS,
    /// so that lookups never wait for it): under the write lock, captures `L_0`, the
    /// manifest and the files to reclaim. `None` for a volatile tree.
    pub(crate) fn checkpoint_begin(&mut self) -> Result<Option<CheckpointJob>> {
        self.refuse_mid_merge()?;
        let Some(persist) = self.persist.take() else { return Ok(None) };
        let entries = self.top.entries();
        let snapshot_id = if entries.is_empty() {
            0
        } else {
            match self.alloc_file_id() {
                Ok(id) => id,
                Err(e) => {
                    self.persist = Some(persist);
                    return Err(e);
                }
            }
        };
        Ok(Some(CheckpointJob {
            manifest: self.manifest(snapshot_id, 0),
            persist,
            entries,
            obsolete: std::mem::take(&mut self.obsolete_files),
            store: self.store.clone(),
            block_bytes: self.params.block_bytes,
            committed: false,
        }))
    }

    /// Last half of a checkpoint (under the write lock): gives the durable side back; if
    /// the commit did not happen, the replaced files are still needed by the committed
    /// state and stay listed for the next checkpoint.
    pub(crate) fn checkpoint_end(&mut self, job: CheckpointJob) {
        if !job.committed {
            self.obsolete_files.extend(job.obsolete);
        }
        self.persist = Some(job.persist);
    }

    /// The manifest of the current state with the given `L_0` snapshot.
    pub(crate) fn manifest(&self, top_file: u32, top_blocks: u32) -> Manifest {
        Manifest {
            block_bytes: self.params.block_bytes,
            size_ratio: self.params.size_ratio as u32,
            kappa0_blocks: self.params.kappa0_blocks,
            key_bytes_max: self.params.key_bytes_max as u32,
            value_bytes_max: self.params.value_bytes_max as u32,
            next_file_id: self.next_file_id,
            counters: self.counters,
            levels: self
                .levels
                .iter()
                .map(|l| LevelRecord {
                    label: l.label as u64,
                    file_id: l.file_id,
                    blocks: l.blocks,
                    stats: l.stats,
                })
                .collect(),
            top_file,
            top_blocks,
            applied_seq: self.applied_seq,
            merge_file: 0,
        }
    }

    fn check_compatible(&self, m: &Manifest) -> Result<()> {
        let p = &self.params;
        if (m.block_bytes, u64::from(m.size_ratio), m.kappa0_blocks)
            != (p.block_bytes, p.size_ratio, p.kappa0_blocks)
            || (m.key_bytes_max as usize, m.value_bytes_max as usize)
                != (p.key_bytes_max, p.value_bytes_max)
        {
            return Err(Error::Incompatible {
                reason: format!(
                    "the fdtree was created with block_bytes {}, gamma {}, kappa_0 {}, key/value \
                     limits {}/{}; the options given differ",
                    m.block_bytes,
                    m.size_ratio,
                    m.kappa0_blocks,
                    m.key_bytes_max,
                    m.value_bytes_max
                ),
            });
        }
        Ok(())
    }

    /// Removes level and snapshot files the committed state does not name.
    fn remove_unknown_files(&self, known: &BTreeSet<u32>) -> Result<()> {
        let storage = self.store.storage();
        for name in storage.list()? {
            if let Some(id) = crate::store::parse_file_name(&name)
                && !known.contains(&id)
            {
                storage.remove(&name)?;
            }
        }
        Ok(())
    }
}

/// Writes `entries` into the new snapshot file `id`; returns its blocks.
pub(crate) fn write_snapshot_file(
    store: &BlockStore,
    block_bytes: u32,
    id: u32,
    entries: &[Entry],
) -> Result<u32> {
    let file = store.create_snapshot(id)?;
    let capacity = block_bytes as usize - BLOCK_HEADER_BYTES;
    let mut blocks = 0u32;
    let mut block = Block::default();
    let mut used = 0;
    let write = |block: &Block, index: u32| -> Result<()> {
        block.write(&*file, block_bytes as usize, id, index)
    };
    for e in entries {
        let n = e.encoded_len();
        if used + n > capacity {
            write(&block, blocks)?;
            blocks += 1;
            block.entries.clear();
            used = 0;
        }
        used += n;
        block.entries.push(e.clone());
    }
    write(&block, blocks)?;
    blocks += 1;
    file.sync_data()?;
    Ok(blocks)
}

/// A checkpoint captured by `Tree::checkpoint_begin`, written by [`CheckpointJob::run`]
/// with no lock held, and handed back by `Tree::checkpoint_end`.
#[derive(Debug)]
pub(crate) struct CheckpointJob {
    persist: Persist,
    entries: Vec<Entry>,
    manifest: Manifest,
    obsolete: Vec<u32>,
    store: BlockStore,
    block_bytes: u32,
    committed: bool,
}

impl CheckpointJob {
    /// The same steps and order as `Tree::checkpoint`: sync the log, write the snapshot,
    /// sync the directory, commit, then reclaim and truncate the log.
    pub(crate) fn run(&mut self) -> Result<()> {
        if let Some(log) = &self.persist.log {
            log.sync()?;
        }
        let id = self.manifest.top_file;
        if id != 0 {
            self.manifest.top_blocks =
                write_snapshot_file(&self.store, self.block_bytes, id, &self.entries)?;
        }
        let committed = self
            .store
            .storage()
            .sync_dir()
            .and_then(|()| self.persist.superblock.commit(&self.manifest.encode()));
        if let Err(e) = committed {
            if id != 0 {
                let _ = self.store.remove(id); // never committed; the error is what matters
            }
            return Err(e);
        }
        self.committed = true;
        let new_top = (id != 0).then_some((id, self.manifest.top_blocks));
        let old_top = std::mem::replace(&mut self.persist.top_file, new_top);
        let old_merge = self.persist.merge_file.take();
        for file in std::mem::take(&mut self.obsolete)
            .into_iter()
            .chain(old_top.map(|t| t.0))
            .chain(old_merge)
        {
            self.store.remove(file)?;
        }
        if let Some(log) = &self.persist.log {
            log.truncate(self.manifest.applied_seq)?;
        }
        Ok(())
    }
}
