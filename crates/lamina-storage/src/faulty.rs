//! The `faulty` backend: wraps another [`Storage`] and injects crashes, torn writes, bit flips
//! and I/O errors under a seeded [`FaultPlan`]. The tool every engine's crash tests use.
//!
//! # Crash model (what survives a simulated crash)
//!
//! A crash is the power failing between two operations. After it:
//! - **File contents** are exactly as of each file's last successful `sync_data`: every write
//!   and `set_len` made to that file since then is undone (a file never synced since it was
//!   opened by this storage keeps the contents it had when first opened or, if created, is
//!   empty). Syncing one file makes nothing of another file durable.
//! - **Names** are exactly as of the last successful `sync_dir`: files created since then are
//!   gone, files removed since then are back (with their durable contents), renames since
//!   then are reverted, including the file a rename replaced. `sync_data` does not make a new
//!   file's name durable.
//! - **A torn write**: if the crash strikes a write and [`FaultPlan::tear_crashing_write`] is
//!   set, a seeded prefix of that write's 512-byte sectors (possibly none, never all) reaches
//!   the medium and survives even though it was never synced. Data undo happens first, so the
//!   torn prefix lands on the durable contents; the gap between the durable end of the file
//!   and the prefix, if any, reads as zeros. Single-sector writes are atomic.
//! - **Bit flips** ([`FaultPlan::flip_bit_at_op`], [`FaultyStorage::flip_bit`]) change stored
//!   bytes; a flip in synced data survives crashes.
//!
//! Operations counted (numbered from 1, in the order they take the storage's lock, one at a
//! time): `open`, `remove`, `rename`, `sync_dir` on the storage; `read_exact_at`,
//! `write_all_at`, `set_len`, `sync_data` on files. `list`, `exists`, `len`, `io_stats`,
//! `path_of` and `name` touch no device and are not counted. An operation that fails by
//! argument check (bad name) is counted before the check.
//!
//! After the crash every call on the old storage and on its files returns an error
//! ([`is_simulated_crash`] recognizes it); [`FaultyStorage::reopen_after_crash`] gives a new
//! storage over the surviving state. Names starting with `.faulty-` are reserved (removed files
//! wait there until the next `sync_dir`). Files created in the inner storage behind this
//! wrapper's back are not seen.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::{Error, IoStats, Result};
use parking_lot::Mutex;

use crate::accounting::{AccountingOptions, FileId, IoAccounting};
use crate::backend::{OpenMode, Storage, StorageFile, check_name, not_found};
use crate::fault_plan::{FailKind, FaultPlan, SECTOR_BYTES, SplitMix};
use crate::memory::MemoryStorage;

const RESERVED_PREFIX: &str = ".faulty-";
const CRASH_MESSAGE: &str = "simulated crash";

type InodeId = u64;

/// Undo record of one write or `set_len`: restore length, then the bytes.
#[derive(Debug)]
struct DataUndo {
    old_len: u64,
    offset: u64,
    old_bytes: Vec<u8>,
}

#[derive(Debug)]
enum DirUndo {
    Created { name: String },
    Removed { name: String, trash: String },
    Renamed { from: String, to: String, replaced_trash: Option<String> },
}

#[derive(Debug)]
struct Inode {
    file: Arc<dyn StorageFile>,
    accounting_id: FileId,
    undo: Vec<DataUndo>,
}

#[derive(Debug)]
struct State {
    ops: u64,
    crashed: bool,
    rng: SplitMix,
    inodes: BTreeMap<InodeId, Inode>,
    names: BTreeMap<String, InodeId>,
    dir_undo: Vec<DirUndo>,
    next_inode: InodeId,
    next_trash: u64,
    /// Bytes held by all undo logs (bounded by [`UNDO_BYTES_MAX`]).
    undo_bytes: u64,
}

#[derive(Debug)]
struct Shared {
    inner: Arc<dyn Storage>,
    plan: FaultPlan,
    accounting: IoAccounting,
    state: Mutex<State>,
}

/// A [`Storage`] that injects faults into another one (see the module docs for the model).
#[derive(Debug, Clone)]
pub struct FaultyStorage {
    shared: Arc<Shared>,
}

/// An open file of a [`FaultyStorage`].
#[derive(Debug)]
pub struct FaultyFile {
    shared: Arc<Shared>,
    inode: InodeId,
    name: String,
}

/// Whether `err` is the error of a simulated crash (the crashing call or any later one).
pub fn is_simulated_crash(err: &Error) -> bool {
    matches!(err, Error::Io { source, .. } if source.to_string() == CRASH_MESSAGE)
}

fn crash_error(op: &str) -> Error {
    Error::io(format!("{op} on a crashed storage"), std::io::Error::other(CRASH_MESSAGE))
}

/// What the operation about to run must do differently.
enum Fault {
    None,
    FlipBit,
}

impl FaultyStorage {
    /// Wraps `inner`; every file already in it is treated as durable.
    pub fn new(inner: Arc<dyn Storage>, plan: FaultPlan) -> Result<Self> {
        // The wrapper counts what its callers do, with default settings; the inner backend's
        // own counters also include the reads the undo log needs.
        let accounting = IoAccounting::new(AccountingOptions::default());
        let mut state = State {
            ops: 0,
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
            shared: Arc::new(Shared { inner, plan, accounting, state: Mutex::new(state) }),
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

    /// Whether the simulated crash happened.
    pub fn crashed(&self) -> bool {
        self.shared.state.lock().crashed
    }

    /// Crashes now (no torn write). Idempotent.
    pub fn crash(&self) -> Result<()> {
        let mut state = self.shared.state.lock();
        self.shared.crash_locked(&mut state, None)
    }

    /// Crashes if not yet crashed, then opens a new storage (with no faults) over what
    /// survived. The old handle and its files keep failing.
    pub fn reopen_after_crash(&self) -> Result<FaultyStorage> {
        self.reopen_after_crash_with(FaultPlan::none())
    }

    /// Like [`FaultyStorage::reopen_after_crash`] with a new fault plan (e.g. to crash again
    /// during recovery).
    pub fn reopen_after_crash_with(&self, plan: FaultPlan) -> Result<FaultyStorage> {
        self.crash()?;
        FaultyStorage::new(self.shared.inner.clone(), plan)
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

impl State {
    fn add_inode(&mut self, name: String, inode: Inode) -> InodeId {
        let id = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(id, inode);
        self.names.insert(name, id);
        id
    }

    fn trash_name(&mut self) -> String {
        self.next_trash += 1;
        format!("{RESERVED_PREFIX}trash-{}", self.next_trash)
    }
}

impl Shared {
    /// Counts an operation and applies the plan to it. `write` is the write being attempted
    /// (inode, offset, data), for tearing.
    fn begin(
        &self,
        state: &mut State,
        what: &str,
        write: Option<(InodeId, u64, &[u8])>,
    ) -> Result<Fault> {
        if state.crashed {
            return Err(crash_error(what));
        }
        state.ops += 1;
        let op = state.ops;
        if self.plan.crash_at_op == Some(op) {
            let torn = write.filter(|_| self.plan.tear_crashing_write);
            self.crash_locked(state, torn)?;
            return Err(crash_error(what));
        }
        if self.plan.fails(op) {
            let errno = match self.plan.fail_with {
                FailKind::Eio => libc::EIO,
                FailKind::NoSpace => libc::ENOSPC,
            };
            return Err(Error::io(
                format!("{what} (injected failure at operation {op})"),
                std::io::Error::from_raw_os_error(errno),
            ));
        }
        if self.plan.flip_bit_at_op == Some(op) && write.is_some() {
            return Ok(Fault::FlipBit);
        }
        Ok(Fault::None)
    }

    /// Reverts the inner storage to the durable state (see the module docs) and marks the
    /// storage crashed.
    fn crash_locked(&self, state: &mut State, torn: Option<(InodeId, u64, &[u8])>) -> Result<()> {
        if state.crashed {
            return Ok(());
        }
        state.crashed = true;
        for inode in state.inodes.values_mut() {
            while let Some(undo) = inode.undo.pop() {
                inode.file.set_len(undo.old_len)?;
                if !undo.old_bytes.is_empty() {
                    inode.file.write_all_at(undo.offset, &undo.old_bytes)?;
                }
            }
        }
        if let Some((inode, offset, data)) = torn {
            let first_sector = offset / SECTOR_BYTES;
            let sectors = (offset + data.len() as u64).div_ceil(SECTOR_BYTES) - first_sector;
            let kept = state.rng.below(sectors.max(1));
            let kept_end = ((first_sector + kept) * SECTOR_BYTES).max(offset);
            let kept_bytes = (kept_end - offset) as usize;
            if kept_bytes > 0 {
                state.inodes[&inode].file.write_all_at(offset, &data[..kept_bytes])?;
            }
        }
        while let Some(undo) = state.dir_undo.pop() {
            match undo {
                DirUndo::Created { name } => self.inner.remove(&name)?,
                DirUndo::Removed { name, trash } => self.inner.rename(&trash, &name)?,
                DirUndo::Renamed { from, to, replaced_trash } => {
                    self.inner.rename(&to, &from)?;
                    if let Some(trash) = replaced_trash {
                        self.inner.rename(&trash, &to)?;
                    }
                }
            }
        }
        state.inodes.clear();
        state.names.clear();
        state.undo_bytes = 0;
        Ok(())
    }
}

/// Largest total of bytes the undo logs may hold (unsynced overwritten data); a write beyond
/// it fails with [`Error::NoSpace`] asking for a sync.
pub const UNDO_BYTES_MAX: u64 = 1 << 30;

impl Storage for FaultyStorage {
    fn open(&self, name: &str, mode: OpenMode) -> Result<Arc<dyn StorageFile>> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, &format!("opening {name}"), None)?;
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
        shared.begin(&mut state, &format!("removing {name}"), None)?;
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
        shared.begin(&mut state, &format!("renaming {from} to {to}"), None)?;
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
        shared.begin(&mut state, "syncing the directory", None)?;
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

impl StorageFile for FaultyFile {
    fn name(&self) -> &str {
        &self.name
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        let what = format!("reading {} bytes at {offset} of {}", buf.len(), self.name);
        shared.begin(&mut state, &what, None)?;
        let inode = &state.inodes[&self.inode];
        inode.file.read_exact_at(offset, buf)?;
        shared.accounting.on_read(inode.accounting_id, offset, buf.len());
        Ok(())
    }

    fn write_all_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        let what = format!("writing {} bytes at {offset} of {}", data.len(), self.name);
        let fault = shared.begin(&mut state, &what, Some((self.inode, offset, data)))?;
        crate::backend::check_range(&self.name, offset, data.len())?;
        if state.undo_bytes + data.len() as u64 > UNDO_BYTES_MAX {
            return Err(Error::NoSpace { context: format!("{what}: undo log full, sync first") });
        }
        let flipped;
        let mut stored = data;
        if matches!(fault, Fault::FlipBit) && !data.is_empty() {
            let bit = state.rng.below(data.len() as u64 * 8);
            let mut copy = data.to_vec();
            copy[(bit / 8) as usize] ^= 1 << (bit % 8);
            flipped = copy;
            stored = &flipped;
        }
        let inode = state.inodes.get_mut(&self.inode).expect("live inode");
        let old_len = inode.file.len()?;
        let end = offset + data.len() as u64;
        let mut old_bytes = vec![0u8; end.min(old_len).saturating_sub(offset) as usize];
        if !old_bytes.is_empty() {
            inode.file.read_exact_at(offset, &mut old_bytes)?;
        }
        let undo_len = old_bytes.len() as u64;
        inode.undo.push(DataUndo { old_len, offset, old_bytes });
        state.undo_bytes += undo_len;
        let inode = &state.inodes[&self.inode];
        inode.file.write_all_at(offset, stored)?;
        shared.accounting.on_write(inode.accounting_id, offset, data.len());
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        let state = self.shared.state.lock();
        if state.crashed {
            return Err(crash_error("reading a length"));
        }
        state.inodes[&self.inode].file.len()
    }

    fn set_len(&self, len: u64) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, &format!("resizing {} to {len}", self.name), None)?;
        crate::backend::check_range(&self.name, len, 0)?;
        let inode = state.inodes.get_mut(&self.inode).expect("live inode");
        let old_len = inode.file.len()?;
        let mut old_bytes = vec![0u8; old_len.saturating_sub(len) as usize];
        if !old_bytes.is_empty() {
            inode.file.read_exact_at(len, &mut old_bytes)?;
        }
        let undo_len = old_bytes.len() as u64;
        inode.undo.push(DataUndo { old_len, offset: len.min(old_len), old_bytes });
        state.undo_bytes += undo_len;
        let inode = &state.inodes[&self.inode];
        inode.file.set_len(len)?;
        shared.accounting.on_set_len(inode.accounting_id, len);
        Ok(())
    }

    fn sync_data(&self) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, &format!("syncing {}", self.name), None)?;
        let inode = state.inodes.get_mut(&self.inode).expect("live inode");
        inode.file.sync_data()?;
        let freed: u64 = inode.undo.drain(..).map(|u| u.old_bytes.len() as u64).sum();
        state.undo_bytes -= freed;
        shared.accounting.on_sync();
        Ok(())
    }
}
