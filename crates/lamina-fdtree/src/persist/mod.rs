//! Durability of a persistent tree (the paper leaves it to "separate logging", section 2.1).
//!
//! - Every modification is appended to the group-commit log (`lamina_storage::log`) before
//!   it is applied to the active memtable.
//! - A frozen memtable is written as a run (`flush.rs`); the manifest naming the run and the
//!   last log record it holds (`applied_seq`) is then committed through the superblock, and
//!   the log is truncated to it. Merges commit their new levels and `L_0`'s new fences the
//!   same way; FD+FC merges also commit their progress (`fc/commit.rs`, Remark A.6).
//! - A commit: sync the log through `applied_seq` (so that it never numbers records below
//!   `applied_seq` after a crash; the records after it are not waited for), sync the
//!   directory (names of the files the manifest refers to; their contents were synced when
//!   written), commit the superblock; then remove the files the previous
//!   manifest named and this one does not, and truncate the log.
//! - Recovery opens the committed state, refuses a damaged or missing one where data
//!   exists, removes `fd-*` files it does not name (written before a crash, before their
//!   commit), resumes an FD+FC merge in progress, and replays the log after `applied_seq`.

pub mod fences;
pub mod manifest;

use std::collections::BTreeSet;
use std::sync::Arc;

use lamina_core::codec::{Decode, Encode};
use lamina_core::{Error, Result};
use lamina_storage::{SlotState, StorageFile, Superblock};

use crate::format::index::LevelIndex;
use crate::level::{BlockLatches, DiskLevel, IndexRef};
use crate::level_map::LevelMap;
use crate::options::Params;
use crate::store::{BlockStore, FileKind, parse_file_name};
use crate::tree::Tree;
use manifest::{LevelRecord, Manifest};

/// Superblock file of a persistent tree.
pub const SUPERBLOCK_FILE_NAME: &str = "fdtree.super";
/// Block size of the superblock (a manifest of 256 levels and 1024 runs fits).
pub const SUPERBLOCK_BYTES: usize = 32 << 10;
/// Owner id written into the superblock's blocks.
const SUPERBLOCK_OWNER: u64 = u64::from_le_bytes(*b"FDTREE02");
/// File name prefix of the log's segments.
pub const LOG_FILE_PREFIX: &str = "fdtree_wal";

/// The durable side of a persistent tree: its superblock.
#[derive(Debug)]
pub struct Persist {
    superblock: Superblock,
}

impl Persist {
    /// Commits `manifest` (module documentation: log sync, directory sync, superblock).
    pub(crate) fn commit(
        &mut self,
        store: &BlockStore,
        log: Option<&lamina_storage::log::SegmentLog>,
        manifest: &Manifest,
    ) -> Result<()> {
        if let Some(log) = log {
            // Through `applied_seq` only: the records appended since (the active memtable's)
            // are not this commit's, and under `Durability::None` syncing them too waited
            // for every queued log buffer, one sync each (180-270 ms per commit of a run at
            // 10M inserts, while the writers froze and filled the next memtable).
            log.sync_through(manifest.applied_seq)?;
        }
        store.storage().sync_dir()?;
        self.superblock.commit(&manifest.encode()).map(drop)
    }
}

impl Tree {
    /// The manifest of the state as it is committed now: during a merge, the levels, runs
    /// and fences as the merge began, the runs written since, and the merge's progress.
    pub(crate) fn manifest(&self) -> Manifest {
        let rec = |l: &DiskLevel| LevelRecord {
            label: l.label as u64,
            file_id: l.file_id,
            blocks: l.blocks,
        };
        let (levels, runs, new_runs): (Vec<LevelRecord>, Vec<LevelRecord>, Vec<LevelRecord>) =
            if let Some(fc) = &self.fc {
                (
                    fc.old_levels.iter().map(rec).collect(),
                    fc.old_runs.iter().map(rec).collect(),
                    self.top.runs.iter().map(rec).collect(),
                )
            } else if let Some(side) = &self.side {
                (
                    side.old_levels.iter().map(rec).collect(),
                    side.old_runs.iter().map(rec).collect(),
                    self.top.runs.iter().map(rec).collect(),
                )
            } else {
                (
                    self.levels.iter().map(rec).collect(),
                    self.top.runs.iter().map(rec).collect(),
                    Vec::new(),
                )
            };
        let p = &self.params;
        Manifest {
            block_bytes: p.block_bytes,
            segment_bytes: p.segment_bytes,
            size_ratio: p.size_ratio as u32,
            kappa0_blocks: p.kappa0_blocks,
            key_bytes_max: p.key_bytes_max as u32,
            value_bytes_max: p.value_bytes_max as u32,
            next_file_id: self.next_file_id,
            levels,
            runs,
            new_runs,
            fences_file: self.fences_file,
            applied_seq: self.applied_seq,
            merge_file: self.merge_file,
        }
    }

    /// Opens the persistent tree in `store`'s storage, or creates an empty one if the
    /// storage holds no tree (`must_exist`: the caller knows a database exists there, so a
    /// missing superblock is corruption, never a new empty tree).
    ///
    /// Recovery writes nothing itself: what it must change on disk (files the committed state
    /// does not name, the cut of a resumed merge's levels) comes back as a
    /// [`RecoveryCleanup`] that the caller applies once the whole open has been validated
    /// (the log included), so that a refused open changes nothing.
    pub fn recover(
        params: Params,
        store: BlockStore,
        must_exist: bool,
    ) -> Result<(Tree, Persist, RecoveryCleanup)> {
        let storage = store.storage().clone();
        let existed = storage.exists(SUPERBLOCK_FILE_NAME)?;
        if !existed {
            // Refused before the superblock file is created: a refused open changes nothing.
            refuse_missing_superblock(&storage, must_exist)?;
        }
        let mut superblock = Superblock::open(
            storage.clone(),
            SUPERBLOCK_FILE_NAME,
            SUPERBLOCK_OWNER,
            SUPERBLOCK_BYTES,
        )?;
        let mut tree = Tree::new(params, store);
        let Some(committed) = superblock.current() else {
            let path = superblock.path().to_path_buf();
            if superblock.slots().iter().any(|s| matches!(s, SlotState::Damaged { .. })) {
                return Err(Error::corruption(path, 0, "the only superblock commit is damaged"));
            }
            let data = data_files(&storage)?;
            if must_exist || existed || !data.is_empty() {
                return Err(Error::corruption(
                    path,
                    0,
                    format!(
                        "the superblock is {} but the tree's data exists ({} files); refusing to \
                         start an empty tree over it",
                        if existed { "empty" } else { "missing" },
                        data.len()
                    ),
                ));
            }
            // A new store: commit the empty state before anything depends on it.
            superblock.commit(&tree.manifest().encode())?;
            return Ok((tree, Persist { superblock }, RecoveryCleanup::default()));
        };
        let path = superblock.path().to_path_buf();
        // The newest commit lost: a damaged slot, or (from the third commit on) an empty
        // one, which held the previous commit or the one after it.
        let older = superblock.slots().iter().any(|s| match s {
            SlotState::Damaged { .. } => true,
            SlotState::Empty => committed.seq >= 2,
            SlotState::Valid { .. } => false,
        });
        if older {
            tree.store.set_older_commit(path.clone());
        }
        let m = Manifest::decode(&committed.payload)
            .map_err(|e| Error::corruption(&path, 0, format!("manifest: {e}")))?;
        tree.check_compatible(&m)?;
        let mut known = BTreeSet::new();
        let mut cleanup = RecoveryCleanup::default();
        let mut prev_label = 0;
        let mut levels = Vec::with_capacity(m.levels.len());
        for r in &m.levels {
            let label = usize::try_from(r.label).unwrap_or(usize::MAX);
            if label <= prev_label || label > 4096 {
                return Err(Error::corruption(&path, 0, format!("bad level record {r:?}")));
            }
            prev_label = label;
            levels.push(tree.open_level(r, m.next_file_id, &mut known)?);
        }
        let mut open_runs = |records: &[LevelRecord]| -> Result<Vec<DiskLevel>> {
            records
                .iter()
                .map(|r| {
                    if r.label != 0 {
                        return Err(Error::corruption(&path, 0, format!("bad run record {r:?}")));
                    }
                    tree.open_level(r, m.next_file_id, &mut known)
                })
                .collect()
        };
        let runs = open_runs(&m.runs)?;
        let new_runs = open_runs(&m.new_runs)?;
        if m.fences_file != 0 {
            if m.fences_file >= m.next_file_id {
                return Err(Error::corruption(&path, 0, "fences file id beyond next_file_id"));
            }
            let bytes = tree.store.read_file(m.fences_file, FileKind::Fences)?;
            tree.top.fences = fences::decode(&bytes, tree.params.key_bytes_max)
                .map_err(|e| e.at(&tree.store.path(m.fences_file, FileKind::Fences), 0))?;
            known.insert(m.fences_file);
        } else if !levels.is_empty() {
            return Err(Error::corruption(&path, 0, "disk levels but no fences file"));
        }
        tree.next_file_id = m.next_file_id;
        tree.applied_seq = m.applied_seq;
        tree.fences_file = m.fences_file;
        tree.levels = levels.into();
        if m.merge_file == 0 {
            // No FD+FC merge committed progress: whatever merge ran is redone from scratch
            // (its files are unknown and removed below); the runs written while it ran are
            // L_0's newest.
            tree.top.runs = new_runs.into_iter().chain(runs).collect();
        } else {
            known.insert(m.merge_file);
            tree.recover_fc_merge(&m, runs, new_runs, &mut known, &mut cleanup)?;
        }
        tree.find_unknown_files(&known, &mut cleanup)?;
        Ok((tree, Persist { superblock }, cleanup))
    }

    /// Opens level (or run) `r`: its file (whose length must match), and its index (which
    /// must describe the same blocks).
    fn open_level(
        &self,
        r: &LevelRecord,
        next_file_id: u32,
        known: &mut BTreeSet<u32>,
    ) -> Result<DiskLevel> {
        let sb = self.store.storage().path_of(SUPERBLOCK_FILE_NAME);
        if r.file_id == 0 || r.file_id >= next_file_id || !known.insert(r.file_id) {
            return Err(Error::corruption(sb, 0, format!("bad or repeated file in {r:?}")));
        }
        let file = self.store.open_existing(r.file_id, FileKind::Level)?;
        let expected = u64::from(r.blocks) * u64::from(self.params.block_bytes);
        let len = file.len()?;
        if len != expected {
            return Err(Error::corruption(
                self.store.storage().path_of(file.name()),
                0,
                format!("level file is {len} bytes, the manifest says {expected}"),
            ));
        }
        let (index, stats) = self.read_index(r.file_id, r.blocks)?;
        Ok(DiskLevel {
            label: usize::try_from(r.label).unwrap_or(usize::MAX),
            file_id: r.file_id,
            file,
            blocks: r.blocks,
            stats,
            index: IndexRef::Fixed(Arc::new(index)),
            latches: Arc::new(BlockLatches::default()),
            tail: None,
            holds_data: true,
            map: Some(Arc::new(LevelMap::default())),
        })
    }

    /// Reads the index of level file `id`, which must cover `blocks` blocks.
    pub(crate) fn read_index(
        &self,
        id: u32,
        blocks: u32,
    ) -> Result<(LevelIndex, crate::format::stats::LevelStats)> {
        let path = self.store.path(id, FileKind::Index);
        let bytes = self.store.read_file(id, FileKind::Index)?;
        let (index, stats) =
            LevelIndex::decode(&bytes, id, self.params.key_bytes_max, self.params.block_bytes)
                .map_err(|e| e.at(&path, 0))?;
        if index.blocks() != blocks {
            return Err(Error::corruption(
                path,
                0,
                format!("the index covers {} blocks, the level has {blocks}", index.blocks()),
            ));
        }
        Ok((index, stats))
    }

    fn check_compatible(&self, m: &Manifest) -> Result<()> {
        let p = &self.params;
        if (m.block_bytes, m.segment_bytes, u64::from(m.size_ratio), m.kappa0_blocks)
            != (p.block_bytes, p.segment_bytes, p.size_ratio, p.kappa0_blocks)
            || (m.key_bytes_max as usize, m.value_bytes_max as usize)
                != (p.key_bytes_max, p.value_bytes_max)
        {
            return Err(Error::Incompatible {
                reason: format!(
                    "the fdtree was created with block_bytes {}, segment_bytes {}, gamma {}, \
                     kappa_0 {}, key/value limits {}/{}; the options given differ",
                    m.block_bytes,
                    m.segment_bytes,
                    m.size_ratio,
                    m.kappa0_blocks,
                    m.key_bytes_max,
                    m.value_bytes_max
                ),
            });
        }
        Ok(())
    }

    /// Adds the tree files the committed state does not name to `cleanup`'s removals.
    fn find_unknown_files(
        &self,
        known: &BTreeSet<u32>,
        cleanup: &mut RecoveryCleanup,
    ) -> Result<()> {
        for name in self.store.storage().list()? {
            if let Some((id, _)) = parse_file_name(&name)
                && !known.contains(&id)
            {
                cleanup.remove.push(name);
            }
        }
        Ok(())
    }

    /// Takes the files replaced before the current state (to remove after a commit).
    pub(crate) fn take_obsolete(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.obsolete_files)
    }
}

/// What recovery must change on disk, applied only after the whole open was validated.
#[derive(Default)]
#[must_use = "recovery's changes must be applied before the tree writes anything"]
pub struct RecoveryCleanup {
    /// Tree files to remove (written before a crash, before their commit; an index a
    /// resumed merge writes again).
    remove: Vec<String>,
    /// Files to cut to a length (a resumed merge's levels, to the blocks its progress
    /// record says were written).
    cut: Vec<(Arc<dyn StorageFile>, u64)>,
}

impl std::fmt::Debug for RecoveryCleanup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cut: Vec<(&str, u64)> =
            self.cut.iter().map(|(file, len)| (file.name(), *len)).collect();
        f.debug_struct("RecoveryCleanup").field("remove", &self.remove).field("cut", &cut).finish()
    }
}

impl RecoveryCleanup {
    /// Cuts `file` to `len` bytes when applied.
    pub(crate) fn cut(&mut self, file: Arc<dyn StorageFile>, len: u64) {
        self.cut.push((file, len));
    }

    /// Removes file `name` when applied.
    pub(crate) fn remove(&mut self, name: String) {
        self.remove.push(name);
    }

    /// Makes the changes (before the tree writes anything: a file written next may reuse
    /// a removed file's id).
    pub fn apply(self, storage: &Arc<dyn lamina_storage::Storage>) -> Result<()> {
        for (file, len) in self.cut {
            file.set_len(len)?;
        }
        for name in self.remove {
            if storage.exists(&name)? {
                storage.remove(&name)?;
            }
        }
        Ok(())
    }
}

/// The files of a tree's data: level files and log segments.
fn data_files(storage: &Arc<dyn lamina_storage::Storage>) -> Result<Vec<String>> {
    Ok(storage
        .list()?
        .into_iter()
        .filter(|n| parse_file_name(n).is_some() || n.starts_with(LOG_FILE_PREFIX))
        .collect())
}

/// A missing superblock is a new tree only when nothing says a tree was created: neither the
/// caller (`must_exist`, from the `LAMINA` file) nor data files. Otherwise `Corruption`
/// naming the superblock, never an empty tree started over the data.
fn refuse_missing_superblock(
    storage: &Arc<dyn lamina_storage::Storage>,
    must_exist: bool,
) -> Result<()> {
    let data = data_files(storage)?;
    if must_exist || !data.is_empty() {
        return Err(Error::corruption(
            storage.path_of(SUPERBLOCK_FILE_NAME),
            0,
            format!(
                "the superblock is missing but the tree was created ({} data files); refusing \
                 to start an empty tree over it",
                data.len()
            ),
        ));
    }
    Ok(())
}

/// The segment size an existing tree in `storage` was created with, read from its committed
/// manifest without changing anything; `None` for a new store or one whose superblock cannot
/// be read (the open that follows reports that). A reopened tree keeps the segment size it
/// was written with whatever the options say (a segment size only shapes the blocks new
/// merges write, so a tree need not be refused over it).
pub(crate) fn stored_segment_bytes(storage: &Arc<dyn lamina_storage::Storage>) -> Option<u32> {
    if !storage.exists(SUPERBLOCK_FILE_NAME).ok()? {
        return None;
    }
    let superblock =
        Superblock::open(storage.clone(), SUPERBLOCK_FILE_NAME, SUPERBLOCK_OWNER, SUPERBLOCK_BYTES)
            .ok()?;
    let manifest = Manifest::decode(&superblock.current()?.payload).ok()?;
    Some(manifest.segment_bytes)
}
