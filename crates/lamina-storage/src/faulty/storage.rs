//! `FaultyStorage`: the directory-level operations and their undo records.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::{Error, IoStats, Result};
use parking_lot::Mutex;

use super::file::FaultyFile;
use super::state::{DIGEST_EMPTY, DirUndo, Inode, RESERVED_PREFIX, Shared, State, crash_error};
use crate::accounting::{AccountingOptions, IoAccounting};
use crate::backend::{OpenMode, Storage, StorageFile, check_name, not_found};
use crate::fault_plan::{FaultPlan, SplitMix};
use crate::memory::MemoryStorage;

/// A [`Storage`] that injects faults into another one (see the module docs for the model).
#[derive(Debug, Clone)]
pub struct FaultyStorage {
    shared: Arc<Shared>,
}

impl FaultyStorage {
    /// Wraps `inner`; every file already in it is treated as durable. Counts I/O with the
    /// default accounting options.
    pub fn new(inner: Arc<dyn Storage>, plan: FaultPlan) -> Result<Self> {
        Self::with_accounting(inner, plan, AccountingOptions::default())
    }

    /// Like [`FaultyStorage::new`], counting with `options` (block size, device profile,
    /// emulation). The wrapper counts what its callers do; the inner backend's own counters
    /// also include the reads the undo log needs.
    pub fn with_accounting(
        inner: Arc<dyn Storage>,
        plan: FaultPlan,
        options: AccountingOptions,
    ) -> Result<Self> {
        options.validate()?;
        let accounting = IoAccounting::new(options);
        let mut state = State {
            ops: 0,
            ops_digest: DIGEST_EMPTY,
            ops_trace: None,
            crashed: false,
            rng: SplitMix(plan.seed),
            inodes: BTreeMap::new(),
            names: BTreeMap::new(),
            dir_undo: Vec::new(),
            next_inode: 0,
            next_trash: 0,
            undo_bytes: 0,
        };
        for name in inner.list()? {
            let file = inner.open(&name, OpenMode::Existing)?;
            let accounting_id = accounting.on_existing(file.len()?);
            state.add_inode(name, Inode { file, accounting_id, undo: Vec::new() });
        }
        Ok(FaultyStorage {
            shared: Arc::new(Shared {
                inner,
                plan,
                accounting,
                state: Mutex::new(state),
                lockstep: std::sync::atomic::AtomicBool::new(false),
                healed: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// A faulty storage over a fresh [`MemoryStorage`].
    pub fn in_memory(plan: FaultPlan) -> Self {
        Self::new(Arc::new(MemoryStorage::new()), plan).expect("an empty memory storage")
    }

    /// Operations counted so far (the crashing one included).
    pub fn ops(&self) -> u64 {
        self.shared.state.lock().ops
    }

    /// Asks the users of this storage (engines opened over it afterwards) to run their
    /// background work in lockstep with the calls that cause it (`Storage::lockstep`), so
    /// that a seeded run does the same operations in the same order every time.
    pub fn set_lockstep(&self, lockstep: bool) {
        self.shared.lockstep.store(lockstep, std::sync::atomic::Ordering::Release);
    }

    /// A digest of every operation counted so far (what it was, on which file, where, how
    /// many bytes), in order: equal digests mean the same operations in the same order, so
    /// a seeded run that must replay exactly can be compared with its rerun.
    pub fn ops_digest(&self) -> u64 {
        self.shared.state.lock().ops_digest
    }

    /// Starts keeping every counted operation's description (for finding where two runs
    /// that should replay each other part); [`FaultyStorage::take_ops_trace`] returns them.
    pub fn trace_ops(&self) {
        self.shared.state.lock().ops_trace.get_or_insert_with(Vec::new);
    }

    /// The operations traced since [`FaultyStorage::trace_ops`] (empty if not tracing).
    pub fn take_ops_trace(&self) -> Vec<String> {
        self.shared.state.lock().ops_trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Whether the simulated crash happened.
    pub fn crashed(&self) -> bool {
        self.shared.state.lock().crashed
    }

    /// Crashes now (no torn write). Idempotent.
    pub fn crash(&self) -> Result<()> {
        let mut state = self.shared.state.lock();
        self.shared.crash_locked(&mut state, None)
    }

    /// Crashes if not yet crashed, then opens a new storage (with no faults, the same
    /// accounting options, fresh counters) over what survived. The old handle and its files
    /// keep failing.
    pub fn reopen_after_crash(&self) -> Result<FaultyStorage> {
        self.reopen_after_crash_with(FaultPlan::none())
    }

    /// Like [`FaultyStorage::reopen_after_crash`] with a new fault plan (e.g. to crash again
    /// during recovery).
    pub fn reopen_after_crash_with(&self, plan: FaultPlan) -> Result<FaultyStorage> {
        self.crash()?;
        let options = self.shared.accounting.options().clone();
        let next = FaultyStorage::with_accounting(self.shared.inner.clone(), plan, options)?;
        next.set_lockstep(self.storage_lockstep());
        Ok(next)
    }

    fn storage_lockstep(&self) -> bool {
        self.shared.lockstep.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Ends the plan's injected failures from now on (a full device got space back, a
    /// failing one was replaced); a planned crash still strikes. Operations keep counting.
    pub fn stop_failing(&self) {
        self.shared.healed.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Flips bit `bit` (counted from the start of the file) of the stored file `name`: media
    /// corruption. Not an operation; not undone by a crash.
    pub fn flip_bit(&self, name: &str, bit: u64) -> Result<()> {
        let state = self.shared.state.lock();
        let inode = state.names.get(name).ok_or_else(|| not_found(format!("corrupting {name}")))?;
        let file = &state.inodes[inode].file;
        let mut byte = [0u8];
        file.read_exact_at(bit / 8, &mut byte)?;
        byte[0] ^= 1 << (bit % 8);
        file.write_all_at(bit / 8, &byte)
    }
}

impl Storage for FaultyStorage {
    fn open(&self, name: &str, mode: OpenMode) -> Result<Arc<dyn StorageFile>> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, &format!("opening {name}"), None, true)?;
        check_user_name(name)?;
        let inode = match (state.names.get(name).copied(), mode) {
            (Some(_), OpenMode::CreateNew) => {
                return Err(crate::backend::already_exists(format!("creating {name}")));
            }
            (Some(inode), _) => inode,
            (None, OpenMode::Existing) => return Err(not_found(format!("opening {name}"))),
            (None, _) => {
                let file = shared.inner.open(name, OpenMode::CreateNew)?;
                let accounting_id = shared.accounting.on_create();
                state.dir_undo.push(DirUndo::Created { name: name.to_owned() });
                state.add_inode(name.to_owned(), Inode { file, accounting_id, undo: Vec::new() })
            }
        };
        Ok(Arc::new(FaultyFile { shared: shared.clone(), inode, name: name.to_owned() }))
    }

    fn remove(&self, name: &str) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, &format!("removing {name}"), None, false)?;
        check_user_name(name)?;
        let Some(&inode) = state.names.get(name) else {
            return Err(not_found(format!("removing {name}")));
        };
        let trash = state.trash_name();
        shared.inner.rename(name, &trash)?;
        state.names.remove(name);
        state.dir_undo.push(DirUndo::Removed { name: name.to_owned(), trash });
        shared.accounting.on_remove(state.inodes[&inode].accounting_id);
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, &format!("renaming {from} to {to}"), None, true)?;
        check_user_name(from)?;
        check_user_name(to)?;
        let Some(&inode) = state.names.get(from) else {
            return Err(not_found(format!("renaming {from} to {to}")));
        };
        if from == to {
            return Ok(());
        }
        let replaced = state.names.get(to).copied();
        let replaced_trash = match replaced {
            Some(_) => {
                let trash = state.trash_name();
                shared.inner.rename(to, &trash)?;
                Some(trash)
            }
            None => None,
        };
        if let Err(err) = shared.inner.rename(from, to) {
            if let Some(trash) = &replaced_trash {
                shared.inner.rename(trash, to)?;
            }
            return Err(err);
        }
        state.names.remove(from);
        state.names.insert(to.to_owned(), inode);
        if let Some(old) = replaced {
            shared.accounting.on_remove(state.inodes[&old].accounting_id);
        }
        state.dir_undo.push(DirUndo::Renamed {
            from: from.to_owned(),
            to: to.to_owned(),
            replaced_trash,
        });
        Ok(())
    }

    fn list(&self) -> Result<Vec<String>> {
        let state = self.shared.state.lock();
        if state.crashed {
            return Err(crash_error("listing"));
        }
        Ok(state.names.keys().cloned().collect())
    }

    fn exists(&self, name: &str) -> Result<bool> {
        check_user_name(name)?;
        let state = self.shared.state.lock();
        if state.crashed {
            return Err(crash_error("checking a name"));
        }
        Ok(state.names.contains_key(name))
    }

    fn sync_dir(&self) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, "syncing the directory", None, true)?;
        shared.inner.sync_dir()?;
        for undo in std::mem::take(&mut state.dir_undo) {
            match undo {
                DirUndo::Removed { trash, .. }
                | DirUndo::Renamed { replaced_trash: Some(trash), .. } => {
                    shared.inner.remove(&trash)?;
                }
                DirUndo::Created { .. } | DirUndo::Renamed { .. } => {}
            }
        }
        shared.accounting.on_sync();
        Ok(())
    }

    fn io_stats(&self) -> IoStats {
        self.shared.accounting.stats()
    }

    fn path_of(&self, name: &str) -> PathBuf {
        self.shared.inner.path_of(name)
    }

    fn lockstep(&self) -> bool {
        self.storage_lockstep()
    }
}

fn check_user_name(name: &str) -> Result<()> {
    check_name(name)?;
    if name.starts_with(RESERVED_PREFIX) {
        return Err(Error::option(
            "file name",
            format!("{name:?}: names starting with {RESERVED_PREFIX:?} are reserved"),
        ));
    }
    Ok(())
}
