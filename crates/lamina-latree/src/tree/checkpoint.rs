//! Checkpoints of the tree (issue 18, "Durability: structure checkpointed via the
//! superblock"). CONTRACT (skeleton; helper "latree-durable" builds it):
//!
//! - [`LaTree::checkpoint`] writes everything the tree holds only in memory (the buffer
//!   pool's tails, dirty nodes), syncs its files, and returns a [`TreeCheckpoint`]: what
//!   [`LaTree::open`] needs to rebuild exactly this state. Between two checkpoints nothing
//!   the last committed checkpoint reaches is overwritten (nodes it names are written
//!   elsewhere first when `crash_consistent`; buffer pages are never rewritten), so a crash
//!   at any point reopens the last committed checkpoint intact.
//! - The caller (the engine) commits the encoded checkpoint durably (superblock), then calls
//!   [`LaTree::checkpoint_committed`]: space only the previous checkpoint reached may be
//!   reused from then on.
//! - [`LaTree::open`] rebuilds the tree from a decoded checkpoint, validating it against the
//!   files (damage is `Error::Corruption` naming the file, never a panic or a different tree).

use lamina_core::codec::{Decode, DecodeError, Encode};
use lamina_core::{Error, Result};
use lamina_storage::Storage;

use super::LaTree;
use super::options::LaTreeOptions;

/// The state a checkpoint names (layout in `docs/format/latree-checkpoint.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeCheckpoint {
    _private: (),
}

impl Encode for TreeCheckpoint {
    fn encoded_len(&self) -> usize {
        0
    }

    fn encode_to(&self, _out: &mut Vec<u8>) {}
}

impl Decode for TreeCheckpoint {
    fn decode(_input: &[u8]) -> std::result::Result<Self, DecodeError> {
        Err(DecodeError::new(0, "latree checkpoints are not built yet"))
    }
}

impl LaTree {
    /// Writes out and syncs everything only in memory; returns the checkpoint to commit.
    pub fn checkpoint(&mut self) -> Result<TreeCheckpoint> {
        Err(Error::Unsupported { what: "latree checkpoints (not built yet)".into() })
    }

    /// The last checkpoint returned is durably committed.
    pub fn checkpoint_committed(&mut self) {}

    /// Reopens the tree a committed checkpoint names.
    pub fn open(
        _storage: &dyn Storage,
        _options: LaTreeOptions,
        _checkpoint: &TreeCheckpoint,
    ) -> Result<Self> {
        Err(Error::Unsupported { what: "reopening a latree (not built yet)".into() })
    }
}
