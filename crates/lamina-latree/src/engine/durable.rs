//! Durability of a persistent LA-tree.
//!
//! - Every modification is appended to the group-commit log (`lamina_storage::log`, a
//!   `SegmentLog` with prefix [`LOG_FILE_PREFIX`]) before the tree applies it.
//! - A checkpoint: `LaTree::checkpoint` writes out and syncs what the tree holds only in
//!   memory; the log is synced through the last record the tree holds (`applied_seq`), so
//!   that the log never ends before what the superblock names; the [`CommitRecord`] is
//!   committed through the superblock ([`SUPERBLOCK_FILE`]), with the encoded checkpoint
//!   inline or, when it does not fit the block, in a new side file (synced, and its name made
//!   durable, first); then `LaTree::checkpoint_committed`, the previous side file removed and
//!   the log truncated to `applied_seq`.
//! - A new store commits the empty tree's checkpoint before anything depends on it.
//! - Recovery ([`recover`]) reads the superblock, refuses a missing or empty one where a store
//!   existed (`OpenIntent::MustExist`, log or checkpoint files present) and any damage
//!   (`Corruption` naming the file), opens the tree from the checkpoint, and returns what to
//!   clean up; the caller opens the log (which validates it) and only then cleans up and
//!   replays, so a refused open changes no file.

use std::sync::Arc;

use lamina_core::codec::{Decode, Encode};
use lamina_core::{Error, Result};
use lamina_storage::{OpenMode, SlotState, Storage, Superblock};

use super::payload::{
    CheckpointBytes, CommitRecord, checkpoint_file_name, parse_checkpoint_file_name,
};
use crate::tree::{LaTree, LaTreeOptions, TREE_FILES, TreeCheckpoint};

/// Superblock file of a persistent tree.
pub const SUPERBLOCK_FILE: &str = "latree.super";
/// Block size of the superblock: checkpoints up to about this size are committed inline.
pub const SUPERBLOCK_BYTES: usize = 64 << 10;
/// Owner id written into the superblock's blocks.
const SUPERBLOCK_OWNER: u64 = u64::from_le_bytes(*b"LATREE01");
/// File name prefix of the log's segments.
pub const LOG_FILE_PREFIX: &str = "latree_wal";

/// The superblock and the side file the current commit names.
#[derive(Debug)]
pub struct Durable {
    superblock: Superblock,
    /// The side file of the current commit, if its checkpoint is not inline.
    file: Option<u64>,
    /// Number of the next side file.
    next_file: u64,
    buffered: bool,
}

impl Durable {
    /// Commits `checkpoint` with `applied_seq` (see the module documentation; the caller
    /// synced the log through `applied_seq`).
    pub fn commit(
        &mut self,
        storage: &Arc<dyn Storage>,
        applied_seq: u64,
        checkpoint: &TreeCheckpoint,
        inline_bytes_max: usize,
    ) -> Result<()> {
        let bytes = checkpoint.encode();
        let capacity = self.superblock.payload_capacity();
        let inline = bytes.len() <= inline_bytes_max
            && CommitRecord::inline_overhead_bytes(applied_seq, bytes.len()) + bytes.len()
                <= capacity;
        let (payload, file) = if inline {
            (CheckpointBytes::Inline(bytes), None)
        } else {
            let number = self.next_file;
            self.next_file += 1;
            let name = checkpoint_file_name(number);
            if storage.exists(&name)? {
                storage.remove(&name)?; // a failed earlier attempt's
            }
            let f = storage.open(&name, OpenMode::CreateNew)?;
            f.write_all_at(0, &bytes)?;
            f.sync_data()?;
            storage.sync_dir()?;
            let crc = lamina_core::checksum::crc32c(&bytes);
            (CheckpointBytes::File { number, len: bytes.len() as u64, crc }, Some(number))
        };
        let record = CommitRecord { buffered: self.buffered, applied_seq, checkpoint: payload };
        self.superblock.commit(&record.encode())?;
        if let Some(old) = std::mem::replace(&mut self.file, file) {
            // Committed whatever happens here: a file left behind is removed at the next open.
            let _ = storage.remove(&checkpoint_file_name(old));
        }
        Ok(())
    }
}

/// Number of the first checkpoint side file a store writes (its creation's commit, when the
/// checkpoint is not inline).
const FIRST_SIDE_FILE: u64 = 1;

/// What recovery found.
#[derive(Debug)]
pub struct Recovered {
    /// The tree (`None`: a new store, created by [`create`] after the cleanup).
    pub tree: Option<LaTree>,
    pub durable: Durable,
    pub applied_seq: u64,
    /// Files to remove once the whole open was validated.
    pub cleanup: Vec<String>,
}

/// Opens the tree in `storage` (see the module documentation). Nothing is written unless the
/// store is new (then only the superblock file is created, empty).
pub fn recover(
    storage: &Arc<dyn Storage>,
    tree_options: &LaTreeOptions,
    must_exist: bool,
) -> Result<Recovered> {
    let sb_path = storage.path_of(SUPERBLOCK_FILE);
    let existed = storage.exists(SUPERBLOCK_FILE)?;
    let names = storage.list()?;
    let logs = names.iter().filter(|n| n.starts_with(LOG_FILE_PREFIX)).count();
    let side_files: Vec<u64> = names.iter().filter_map(|n| parse_checkpoint_file_name(n)).collect();
    // A crash in the creation's first commit, after its side file was written (checkpoints
    // too large to be inline) and before the superblock was: that file and nothing else.
    let creation_side_file = logs == 0 && side_files == [FIRST_SIDE_FILE];
    let refuse_empty = |what: &str, creation_may_be_interrupted: bool| -> Result<()> {
        let interrupted = creation_may_be_interrupted && creation_side_file;
        if must_exist || logs > 0 || (!side_files.is_empty() && !interrupted) {
            return Err(Error::corruption(
                &sb_path,
                0,
                format!(
                    "the superblock is {what} but the tree was created ({} log segments, {} \
                     checkpoint files{}); refusing to start an empty tree over it",
                    logs,
                    side_files.len(),
                    if must_exist { ", and the database says it exists" } else { "" }
                ),
            ));
        }
        Ok(())
    };
    if !existed {
        // Before the superblock file is created; creation creates it first (a side file
        // without it is damage).
        refuse_empty("missing", false)?;
    }
    let superblock =
        Superblock::open(storage.clone(), SUPERBLOCK_FILE, SUPERBLOCK_OWNER, SUPERBLOCK_BYTES)?;
    let buffered = tree_options.buffered;
    let next_file = side_files.iter().max().map_or(FIRST_SIDE_FILE, |n| n + 1);
    let Some(committed) = superblock.current() else {
        if superblock.slots().iter().any(|s| matches!(s, SlotState::Damaged { .. })) {
            return Err(Error::corruption(&sb_path, 0, "the only superblock commit is damaged"));
        }
        refuse_empty("empty", true)?;
        // A new store, or one whose creation was interrupted before its first commit: the
        // tree's files and the commit's side file (if any) hold nothing anyone was told about.
        let cleanup = TREE_FILES
            .into_iter()
            .filter(|n| names.iter().any(|m| m == n))
            .map(str::to_string)
            .chain(side_files.iter().map(|&n| checkpoint_file_name(n)))
            .collect();
        let durable = Durable { superblock, file: None, next_file, buffered };
        // The tree is created after the cleanup (its files must not exist): see `create`.
        return Ok(Recovered { tree: None, durable, applied_seq: 0, cleanup });
    };
    let record = CommitRecord::decode(&committed.payload)
        .map_err(|e| Error::corruption(&sb_path, 0, format!("commit record: {e}")))?;
    if must_exist && logs == 0 {
        // The store was opened before (the database says so), and every open leaves a log
        // segment: a log that is gone took the writes after the checkpoint with it (the
        // committed `applied_seq` cannot tell, since it is 0 until a checkpoint applies
        // records), so a new empty log would silently drop them.
        return Err(Error::corruption(
            storage.path_of(&format!("{LOG_FILE_PREFIX}-*.seg")),
            0,
            format!(
                "no segment of the log is left, but the database exists (the checkpoint \
                 applied the log through sequence number {})",
                record.applied_seq
            ),
        ));
    }
    if record.buffered != buffered {
        return Err(Error::Incompatible {
            reason: format!(
                "{} holds a{} LA-tree; it cannot be opened as {}",
                sb_path.display(),
                if record.buffered { " buffered" } else { "n unbuffered (latree-btree)" },
                if buffered { "latree" } else { "latree-btree" }
            ),
        });
    }
    let (bytes, file) = match record.checkpoint {
        CheckpointBytes::Inline(bytes) => (bytes, None),
        CheckpointBytes::File { number, len, crc } => {
            (read_side_file(storage, number, len, crc)?, Some(number))
        }
    };
    let checkpoint = TreeCheckpoint::decode(&bytes).map_err(|e| match file {
        Some(n) => e.at(&storage.path_of(&checkpoint_file_name(n)), 0),
        None => Error::corruption(&sb_path, 0, format!("tree checkpoint: {e}")),
    })?;
    for name in checkpoint.files() {
        // The tree would report an I/O error (not found): a lost file is damage.
        if !names.iter().any(|n| n == name) {
            return Err(Error::corruption(
                storage.path_of(name),
                0,
                "the tree file is missing but the superblock names a checkpoint",
            ));
        }
    }
    let tree = LaTree::open(&**storage, tree_options.clone(), &checkpoint)?;
    let cleanup =
        side_files.iter().filter(|&&n| Some(n) != file).map(|&n| checkpoint_file_name(n)).collect();
    let durable = Durable { superblock, file, next_file, buffered };
    Ok(Recovered { tree: Some(tree), durable, applied_seq: record.applied_seq, cleanup })
}

/// Creates the tree of a new store and commits its empty checkpoint (after the cleanup).
pub fn create(
    storage: &Arc<dyn Storage>,
    tree_options: &LaTreeOptions,
    durable: &mut Durable,
    inline_bytes_max: usize,
) -> Result<LaTree> {
    let mut tree = LaTree::create(&**storage, tree_options.clone())?;
    let checkpoint = tree.checkpoint()?;
    durable.commit(storage, 0, &checkpoint, inline_bytes_max)?;
    tree.checkpoint_committed();
    Ok(tree)
}

fn read_side_file(storage: &Arc<dyn Storage>, number: u64, len: u64, crc: u32) -> Result<Vec<u8>> {
    let name = checkpoint_file_name(number);
    let path = storage.path_of(&name);
    if !storage.exists(&name)? {
        return Err(Error::corruption(
            path,
            0,
            "the checkpoint file the superblock names is missing",
        ));
    }
    let bytes = storage.read_all(&name)?;
    if bytes.len() as u64 != len {
        return Err(Error::corruption(
            path,
            0,
            format!("checkpoint file of {} bytes, the superblock says {len}", bytes.len()),
        ));
    }
    if lamina_core::checksum::crc32c(&bytes) != crc {
        return Err(Error::corruption(path, 0, "checkpoint file checksum mismatch"));
    }
    Ok(bytes)
}
