//! Syncing a checkpoint's writes without the tree: [`LaTree::checkpoint_unsynced`] issues
//! the writes (under the engine's tree lock), [`CheckpointFiles::sync`] makes them durable
//! (with the lock released, so writers do not wait for the syncs), then the caller commits
//! the checkpoint and calls [`LaTree::checkpoint_committed`].
//!
//! Why the tree may change between the checkpoint and its commit without touching what the
//! checkpoint names (it must not: a crash before the commit reopens the previous checkpoint,
//! one after it this one):
//! - **Node slots** (`crash_consistent`, copy-on-write or out of place): the checkpoint
//!   marked every node as reached (`NodeTable::checkpoint_taken`), so a node written later
//!   goes to another slot: one free since before the *previous* commit (reached by neither
//!   checkpoint) or the file's end. A slot vacated later waits for the *next* commit.
//! - **Node ids** freed later become reusable at this commit, but only as ids: the node
//!   table maps a reused id to a new slot, and the old slot stays vacated as above. (With
//!   plain in-place placement, `crash_consistent = false`, id = slot, so such a tree must not
//!   change in between; the engine's persistent trees are always crash consistent.)
//! - **Buffer units** are only appended, past the pages the checkpoint names.
//! - **Syncs**: a sync makes durable every write completed before it started; the syncs
//!   start after the checkpoint's writes returned. Later writes may or may not be durable
//!   too, which does not matter: nothing the checkpoint names is among them.

use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::StorageFile;

use super::LaTree;

/// The tree's files, to sync after [`LaTree::checkpoint_unsynced`].
#[derive(Debug, Clone)]
pub struct CheckpointFiles {
    files: Vec<Arc<dyn StorageFile>>,
}

impl CheckpointFiles {
    /// Syncs the buffer file, then the node file.
    pub fn sync(&self) -> Result<()> {
        for file in &self.files {
            file.sync_data()?;
        }
        Ok(())
    }
}

impl LaTree {
    /// The tree's files (buffer store, node store).
    pub(super) fn checkpoint_files(&self) -> CheckpointFiles {
        CheckpointFiles {
            files: vec![self.pool.store().sync_handle(), self.nodes.store().sync_handle()],
        }
    }
}
