//! FD+FC, FD+tree with full concurrency (paper section 4).
//!
//! - `state.rs`: the data structure during a merge (section 4.1, Figure 5: `L_0^new`,
//!   `L_0^old` with the wavefront fence, new and old upper levels, below-merge levels) and
//!   merge-prepare with preemptive level skipping (section 4.4.1).
//! - `run.rs`: merge-execute's main loop, m-stage / m-insert / m-delete with block-wise data
//!   movement and block reclamation (section 4.4.2, Remark A.5), its end, and
//!   merge-finalize (section 4.4.3).
//! - `progress.rs`, `recover.rs`: crash recovery as in Remark A.6: progress records at stage
//!   boundaries, committed before the old blocks they cover are freed; recovery resumes the
//!   merge from the last record.
//!
//! Locks and why they cannot deadlock (section 4.5). Order: the commit lock (persistent
//! trees), the tree lock (the paper's `L_0` mutex), then a block latch or a tail's mutex;
//! nobody holds two latches.
//! - A lookup takes the tree lock shared for `L_0`, releases it, then takes one block's
//!   latch at a time (shared) for each read (`level/latches.rs`).
//! - m-insert holds no latch: the data level is read only up to its written blocks, and a
//!   fence-only level's tail is updated under its mutex for one fence at a time.
//! - m-delete changes `L_0^old`, `L_0^new`'s fences and the wavefront under the tree lock,
//!   releases it, then reclaims old head blocks one at a time (exclusive latch).
//! - The end of merge-execute and merge-finalize switch the tree under the tree lock, then
//!   mark the replaced levels reclaimed (each latch stripe exclusively, no lock held).
//! - Scans (not in the paper) take what a lookup takes: the tree lock for their views, then
//!   one block latch at a time for each segment they read; a scan that finds a block
//!   reclaimed starts again after the last pair it has (`scan.rs`). Neither waits for the
//!   merge, nor the merge for them.

pub(crate) mod progress;
mod recover;
mod run;
pub(crate) mod state;
mod verify;

use lamina_core::Result;
use parking_lot::RwLock;

pub use progress::{MergeProgress, NewLevelProgress};
pub(crate) use run::{MergeEnd, run_fc_merge};
pub(crate) use state::{FcMerge, FcState};

use crate::level::writer::RetryPolicy;
use crate::tree::Tree;

/// What an FD+FC merge needs from the engine around the tree.
pub(crate) trait FcHost {
    /// The tree lock.
    fn tree(&self) -> &RwLock<Option<Tree>>;
    /// Test hook, called after each stage with no lock held.
    fn hold_point(&self);
    /// The fraction of the old sources' blocks reclaimed so far, after each stage (writers
    /// are paced by it, `engine/pacing.rs`).
    fn progressed(&self, fraction: f64);
    /// What the new levels do when a write fails (a full disk is waited out).
    fn retry_policy(&self) -> RetryPolicy;
    /// Whether the tree is persistent (commits, and frees reclaimed blocks only after the
    /// progress record covering them is committed).
    fn persistent(&self) -> bool;
    /// Runs `work` holding the commit lock, then commits the tree's state (a no-op for a
    /// volatile tree, which removes replaced files at once instead). `work` gets the tree
    /// lock itself where it needs it.
    fn commit_after(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<()>;
    /// The background threads' turn at CPU-bound work, held for one stage (`None`: the
    /// host does not take turns).
    fn cpu_turn(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
        None
    }
    /// Whether the engine is closing: merge-execute then stops at the next stage boundary,
    /// its progress committed, for the reopened tree to resume (`MergeEnd::Paused`).
    fn stopping(&self) -> bool {
        false
    }
}

impl<H: FcHost + ?Sized> FcHost for &H {
    fn tree(&self) -> &RwLock<Option<Tree>> {
        (**self).tree()
    }
    fn hold_point(&self) {
        (**self).hold_point();
    }
    fn progressed(&self, fraction: f64) {
        (**self).progressed(fraction);
    }
    fn retry_policy(&self) -> RetryPolicy {
        (**self).retry_policy()
    }
    fn persistent(&self) -> bool {
        (**self).persistent()
    }
    fn commit_after(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        (**self).commit_after(work)
    }
    fn cpu_turn(&self) -> Option<parking_lot::MutexGuard<'_, ()>> {
        (**self).cpu_turn()
    }
    fn stopping(&self) -> bool {
        (**self).stopping()
    }
}

/// Runs `f` on the tree under its exclusive lock.
pub(crate) fn with_tree<R>(host: &dyn FcHost, f: impl FnOnce(&mut Tree) -> Result<R>) -> Result<R> {
    let mut guard = host.tree().write();
    f(guard.as_mut().ok_or(lamina_core::Error::Closed)?)
}
