//! The engine's shared state and its locks.
//!
//! The paper's tree is single-threaded; the engine serializes it. Invariants:
//!
//! 1. **One tree lock** (`state`, a readers-writer lock). Every operation that changes the
//!    tree — puts, deletes, compare-and-swap, batches, and a lookup's emptying — holds it
//!    exclusively. Lookups and range scans hold it shared: a lookup's walk
//!    (`LaTree::lookup_pass`, `&self`) changes only ADAPT's registers, under their own
//!    mutex, and the node cache, under its own; when ADAPT decides to empty a buffer the
//!    lookup releases the shared lock and takes it exclusively (`LaTree::get_after_pass`,
//!    which first checks the buffer is still on the key's path).
//! 2. **Log order = apply order.** A modification is appended to the group-commit log and
//!    applied to the tree under the exclusive tree lock, so records are numbered in the order
//!    the tree applies them and `State::applied_seq` is the last record in the tree.
//! 3. **Durability waits happen after the tree lock is released.** The log is opened with a
//!    short linger instead of `Sync`; a `Sync` write calls `SegmentLog::sync` only after
//!    releasing the lock, so concurrent writers share one sync.
//! 4. **No lookup misses an entry moving between buffers.** Emptying (a buffer's entries
//!    moving to the next buffers or the leaves) only runs under the exclusive lock; a lookup
//!    or scan (shared lock) never overlaps one.
//! 5. **Arguments are checked before any lock is taken**, against the tree's own key and
//!    value limits: a refused call changes nothing and logs nothing.
//! 6. **A checkpoint holds the tree lock only to write.** First, without the tree lock, it
//!    writes the node cache's dirty nodes back a few at a time (`node_cache`, shared; the
//!    cache's own lock serializes this with the tree's operations, as an eviction would),
//!    and waits (briefly, bounded) for the updates to finish a root draining
//!    (`tree/drain.rs`). Then `LaTree::checkpoint_unsynced`
//!    (the pool's tails and dirty nodes written, the checkpoint and `applied_seq` taken)
//!    runs under the exclusive lock; the tree files' syncs, the log's sync and the
//!    superblock commit run without it, so writers go on meanwhile; then
//!    `LaTree::checkpoint_committed` runs under it again. Nothing the checkpoint names is
//!    overwritten in between (`tree/checkpoint_files.rs` says why: persistent trees are
//!    crash consistent, so later node writes go to other slots, buffer units are appended).
//!    One checkpoint at a time (`checkpointing`). The background thread takes one when
//!    `checkpoint_log_bytes` were logged; writers only wake it. `close`'s last checkpoint
//!    holds the lock throughout.
//! 7. **Lock order:** `checkpointing`, then `state`, then `durable`; inside the tree, the
//!    ADAPT map's and the node cache's mutexes are leaves (held for no I/O but the cache's
//!    evictions). The log has its own locks and never calls back into the engine.
//! 8. **A failure that may leave the tree half-changed is sticky**: an error from the tree
//!    after the log append (e.g. an I/O error in the middle of an emptying) or from a sync
//!    refuses every later call; the log holds every acknowledged write for the next open. A
//!    full disk refused before anything changed is not sticky, nor is a failed checkpoint
//!    (retried; the last committed one and the log still hold everything).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use lamina_core::{Error, Result};
use lamina_storage::Storage;
use lamina_storage::log::SegmentLog;
use parking_lot::{Condvar, Mutex, RwLock};

use super::durable::Durable;
use super::options::LaTreeEngineOptions;
use crate::node::NodeLayout;
use crate::tree::LaTree;

/// What the tree lock guards.
#[derive(Debug)]
pub struct State {
    /// The tree.
    pub tree: LaTree,
    /// The last log record applied to the tree (0: none, or a volatile tree).
    pub applied_seq: u64,
    /// Log bytes appended since the last checkpoint (checkpoint trigger).
    pub logged_bytes: u64,
}

/// Counters (relaxed atomics).
#[derive(Debug, Default)]
pub struct Counters {
    pub user_bytes_written: AtomicU64,
    pub checkpoints: AtomicU64,
    pub replayed_records: AtomicU64,
}

/// The background checkpointer's wake-up.
#[derive(Debug, Default)]
pub struct Wake {
    /// A checkpoint is due.
    pub due: bool,
    /// The thread must stop.
    pub stop: bool,
}

/// The state every thread of the engine shares.
#[derive(Debug)]
pub struct Inner {
    pub options: LaTreeEngineOptions,
    /// The tree's node layout: its key and value limits, checked before any lock.
    pub layout: NodeLayout,
    pub storage: Arc<dyn Storage>,
    /// The log (`None`: a volatile tree).
    pub log: Option<SegmentLog>,
    pub state: RwLock<Option<State>>,
    /// The tree's node cache, shared: a checkpoint writes dirty nodes back through it before
    /// taking the tree lock (invariant 6).
    pub node_cache: Arc<crate::node::NodeCache>,
    /// The superblock (`None`: a volatile tree). Taken while holding `state` or not.
    pub durable: Mutex<Option<Durable>>,
    /// Held through a whole checkpoint (one at a time); taken before `state`.
    pub checkpointing: Mutex<()>,
    pub wake: Mutex<Wake>,
    pub wake_cv: Condvar,
    pub counters: Counters,
    pub closed: AtomicBool,
    /// A failure that leaves the tree unusable (every later call gets it).
    pub failure: OnceLock<String>,
}

impl Inner {
    /// Refuses calls after `close` or a failure.
    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(reason) = self.failure.get() {
            return Err(Error::Io {
                context: format!("the LA-tree failed earlier and accepts nothing more: {reason}"),
                source: std::io::Error::other("earlier failure"),
            });
        }
        Ok(())
    }

    /// Records `e` as the tree's failure unless it is a full disk; returns it.
    pub fn record_failure(&self, e: Error) -> Error {
        if !matches!(e, Error::NoSpace { .. }) {
            let _ = self.failure.set(e.to_string()); // the first failure is the one kept
        }
        e
    }

    /// Wakes the checkpointer if `state` has logged enough.
    pub fn maybe_want_checkpoint(&self, logged_bytes: u64) {
        if self.log.is_some() && logged_bytes >= self.options.checkpoint_log_bytes {
            let mut wake = self.wake.lock();
            if !wake.due {
                wake.due = true;
                self.wake_cv.notify_all();
            }
        }
    }
}
