//! The engine's shared state and its locks.
//!
//! Locks, in the order they are taken (a thread never takes an earlier one while holding a
//! later one):
//! 0. `cpu_turn`: the flush thread's and the merge thread's turn at CPU-bound work, taken
//!    with no other lock held (around a run's writing, around a merge stage).
//! 1. `xm` (FD+XM only): the paper's single readers-writer lock of the tree, taken shared
//!    by lookups and scans, exclusively by modifications, which run flushes and merges
//!    under it (section 3).
//! 2. a key stripe (`stripes`): serializes the modifications of one key, so that delete and
//!    compare-and-swap, which look the key up first, apply to the value they saw; a batch
//!    takes the stripes of all its keys in increasing order. Nothing else waits for it.
//! 3. `persist` (the commit lock): one commit at a time (the commit thread's of the runs
//!    installed, the merge thread's), and what a merge switches in is committed with
//!    nothing in between (`fc/run.rs`).
//! 4. `tree`: the paper's `L_0` mutex; short critical sections, never across I/O.
//!    Modifications never take it (they use `mem_slot`), so a merge thread descheduled while
//!    holding it delays lookups, not writers.
//! 5. `write_gate`: shared by every modification from its log append until it is applied
//!    to the memtable, exclusive while the memtable is frozen (with the tree lock already
//!    held, so writers are held only for the swap itself), so the frozen memtable holds
//!    exactly the log records up to a sequence number.
//! 7. `mem_slot` (`Top::slot`): the active memtable and the frozen one's size, read by
//!    modifications, written whenever the tree changes either.
//! 8. a memtable's own lock, a block latch, a tail's mutex.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Weak};

use lamina_core::{Durability, Error, Result};
use lamina_storage::Storage;
use lamina_storage::log::SegmentLog;
use parking_lot::{Mutex, RwLock};

use super::control::Control;
use crate::options::{FcMode, Params};
use crate::persist::Persist;
use crate::store::BlockStore;
use crate::tree::Tree;

/// Key stripes (a power of two).
pub const STRIPES: usize = 4096;

/// The state every thread of the engine shares.
#[derive(Debug)]
pub(crate) struct Inner {
    /// The tree; `None` once closed.
    pub tree: RwLock<Option<Tree>>,
    pub store: BlockStore,
    pub params: Params,
    pub storage: Arc<dyn Storage>,
    pub log: Option<Arc<SegmentLog>>,
    pub durability: Durability,
    pub mode: FcMode,
    /// The commit lock and the superblock (`None`: a volatile tree).
    pub persist: Mutex<Option<Persist>>,
    pub persistent: bool,
    pub write_gate: RwLock<()>,
    /// The tree's `Top::slot`: what modifications need of `L_0`'s memory.
    pub mem_slot: Arc<RwLock<crate::top::MemSlot>>,
    pub stripes: Box<[Mutex<()>]>,
    pub xm: RwLock<()>,
    pub control: Control,
    pub user_bytes_written: AtomicU64,
    /// Log bytes appended since the memtable was last frozen.
    pub logged_bytes: AtomicU64,
    /// Runs installed and not committed yet: the commit thread's work (`background.rs`),
    /// taken under the commit lock.
    pub runs_uncommitted: std::sync::atomic::AtomicU32,
    /// Paces writers and runs to the merge's progress (`pacing.rs`).
    pub pacer: super::pacing::Pacer,
    /// Spaces writers to the flush's rate while a run is written (`flush_rate.rs`).
    pub flush_rate: super::flush_rate::FlushRate,
    /// Where the flush thread spends its time, for the waits for room (`flush_stage.rs`).
    pub flush_stages: super::flush_stage::FlushStages,
    /// The background threads' turn at CPU-bound work: the flush thread holds it while it
    /// writes a run, an FD+FC merge during each stage (FD+DS merges do not take turns), so
    /// at most one of them competes with the writers for the two cores.
    pub cpu_turn: Mutex<()>,
    /// Scans started again because a merge reclaimed a block they needed (`scan.rs`).
    pub scan_restarts: AtomicU64,
    pub closed: AtomicBool,
    /// This engine (for background work that must not keep it alive).
    pub me: Weak<Inner>,
}

impl Inner {
    /// Runs `f` on the tree under the shared tree lock.
    pub fn read<R>(&self, f: impl FnOnce(&Tree) -> Result<R>) -> Result<R> {
        let guard = self.tree.read();
        f(guard.as_ref().ok_or(Error::Closed)?)
    }

    /// Runs `f` on the tree under the exclusive tree lock.
    pub fn write<R>(&self, f: impl FnOnce(&mut Tree) -> Result<R>) -> Result<R> {
        let mut guard = self.tree.write();
        f(guard.as_mut().ok_or(Error::Closed)?)
    }

    /// Runs `f` on the tree under the exclusive tree lock and then the exclusive write gate
    /// (lock order above): no modification is between its log append and its memtable
    /// insert while `f` runs, and none waits for the tree lock meanwhile.
    pub fn write_gated<R>(&self, f: impl FnOnce(&mut Tree) -> Result<R>) -> Result<R> {
        let mut guard = self.tree.write();
        let tree = guard.as_mut().ok_or(Error::Closed)?;
        let _gate = self.write_gate.write();
        f(tree)
    }

    /// The stripe of a key (by its filter hash).
    pub fn stripe(&self, hash: u64) -> &Mutex<()> {
        &self.stripes[(hash as usize) & (STRIPES - 1)]
    }
}
