//! The engine's shared state and its locks.
//!
//! Locks, in the order they are taken (a thread never takes an earlier one while holding a
//! later one):
//! 1. a key stripe (`stripes`): serializes the modifications of one key, from the lookup of
//!    a delete or compare-and-swap through the log append and the memtable insert, so that
//!    per key the log order is the memtable order. A batch takes its keys' stripes in
//!    increasing order.
//! 2. `work`: the flush job, the working copy of the s-tree and the superblock. Held for one
//!    step of the job (a bounded number of pages), by the background thread or by a writer
//!    that helps or freezes. Never taken while holding `write_gate`.
//! 3. `write_gate`: shared by a modification from its log append until its memtable insert;
//!    exclusive to freeze the active memtable, so the frozen one holds exactly the records
//!    up to a sequence number.
//! 4. `published`: the active memtable and the published version (frozen memtable and
//!    s-tree). Readers hold it only to clone two `Arc`s: they never wait for a flush
//!    (issue 16: "readers never block on a flush"); old d-trees are removed when their last
//!    reader drops them (`DTree::remove_when_unused`).
//! 5. a memtable's own lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use lamina_core::{Error, Result};
use lamina_storage::Storage;
use lamina_storage::log::SegmentLog;
use parking_lot::{Condvar, Mutex, RwLock};

use crate::flush::{FlushJob, WriterContext};
use crate::memtable::Memtable;
use crate::options::NbTreeOptions;
use crate::persist::Persist;
use crate::stree::STree;

/// Key stripes (a power of two).
pub const STRIPES: usize = 1024;

/// The index of `key`'s stripe.
pub fn stripe_index(key: &[u8]) -> usize {
    (xxhash_rust::xxh3::xxh3_64(key) as usize) & (STRIPES - 1)
}

/// What readers see of the tree, swapped whole by the flush job.
#[derive(Debug)]
pub struct Version {
    /// The s-tree.
    pub stree: Arc<STree>,
    /// The root's full d-tree, while the job moves it to the root's children.
    pub frozen: Option<Arc<Memtable>>,
}

/// The active memtable and the published version.
#[derive(Debug)]
pub struct Published {
    /// The root's d-tree that writers insert into.
    pub active: Arc<Memtable>,
    /// The rest.
    pub version: Arc<Version>,
}

/// The flush side: only one thread works on it at a time.
#[derive(Debug)]
pub struct Work {
    /// The s-tree as the job changes it (published after each event).
    pub tree: STree,
    /// The cascade in progress.
    pub job: Option<FlushJob>,
    /// A frozen memtable whose job failed (a full disk): restarted by the next write.
    pub restart: Option<Arc<Memtable>>,
    /// The superblock (`None`: a volatile tree).
    pub persist: Option<Persist>,
    /// Every log record up to here is in the d-trees.
    pub flushed_seq: u64,
    /// The last log record of the frozen memtable.
    pub frozen_seq: u64,
}

/// Counters (relaxed atomics; exact when the engine is quiet).
#[derive(Debug, Default)]
pub struct Counters {
    pub user_bytes_written: AtomicU64,
    /// Bytes logged since the active memtable was created (log checkpoint trigger).
    pub logged_bytes: AtomicU64,
    /// Pages the current job has written, and its bound ([`crate::flush::work_bound_pages`]).
    pub job_pages: AtomicU64,
    pub job_bound_pages: AtomicU64,
    /// Work credit granted to the current job by inserts, in millionths of a page.
    pub job_credit_micropages: AtomicU64,
    /// Whether a job is in progress.
    pub job_active: AtomicBool,
    pub jobs: AtomicU64,
    /// Jobs a writer had to finish because the next root d-tree filled first.
    pub stalls: AtomicU64,
    /// Pages written by writers helping the background thread.
    pub helped_pages: AtomicU64,
    pub commits: AtomicU64,
    /// Whether a failed job's memtable waits to be flushed again (`Work::restart`).
    pub restart_pending: AtomicBool,
}

/// The state every thread of the engine shares.
#[derive(Debug)]
pub struct Inner {
    pub options: NbTreeOptions,
    /// `f` and sigma as the tree was created with.
    pub fanout: usize,
    pub sigma_bytes: u64,
    pub storage: Arc<dyn Storage>,
    pub log: Option<SegmentLog>,
    pub published: RwLock<Published>,
    pub write_gate: RwLock<()>,
    pub stripes: Box<[Mutex<()>]>,
    pub work: Mutex<Work>,
    /// Wakes the background thread.
    pub work_ready: Condvar,
    pub context: WriterContext,
    pub counters: Counters,
    /// The one writer behind schedule that may spin instead of sleeping
    /// (`Inner::pause_behind`, `lamina_storage::pause`).
    pub pause_slot: lamina_storage::pause::SpinSlot,
    pub closed: AtomicBool,
    pub stop: AtomicBool,
    /// A failure that leaves the tree unusable (every later call gets it). Set once; read
    /// by every call (an atomic load).
    pub failure: std::sync::OnceLock<String>,
    /// The recovered tree is a state committed in the middle of a flush job (a crash
    /// interrupted it): the size limits that hold between jobs may not hold until a later
    /// job ends with them holding (`verify` allows what it allows during a job meanwhile).
    pub recovered_mid_job: std::sync::atomic::AtomicBool,
}

impl Inner {
    /// The stripe of `key`.
    pub fn stripe(&self, key: &[u8]) -> &Mutex<()> {
        &self.stripes[stripe_index(key)]
    }

    /// Refuses calls after `close` or a failure.
    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if let Some(reason) = self.failure.get() {
            return Err(Error::Io {
                context: format!("the NB-tree failed earlier and accepts nothing more: {reason}"),
                source: std::io::Error::other("earlier failure"),
            });
        }
        Ok(())
    }

    /// Records `e` as the tree's failure unless it is a full disk (which a later call may
    /// get past); returns it.
    pub fn record_failure(&self, e: Error) -> Error {
        if !matches!(e, Error::NoSpace { .. }) {
            let _ = self.failure.set(e.to_string()); // the first failure is the one kept
        }
        e
    }

    /// A snapshot of what readers see.
    pub fn snapshot(&self) -> (Arc<Memtable>, Arc<Version>) {
        let p = self.published.read();
        (p.active.clone(), p.version.clone())
    }
}
