//! Shared state of a faulty storage: undo logs, operation counting, the crash itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{Error, Result};
use parking_lot::Mutex;

use crate::accounting::{FileId, IoAccounting};
use crate::backend::{Storage, StorageFile};
use crate::fault_plan::{FailKind, FaultPlan, SECTOR_BYTES, SplitMix};

pub(super) const RESERVED_PREFIX: &str = ".faulty-";
pub(super) const CRASH_MESSAGE: &str = "simulated crash";

pub(super) type InodeId = u64;

/// Undo record of one write or `set_len`: it changed `range_len` bytes at `offset` (for
/// `set_len`, the bytes between the old and new length) and the length from `old_len` to
/// `new_len`. `old_bytes` are the bytes of the range that lay within `old_len`.
#[derive(Debug)]
pub(super) struct DataUndo {
    pub(super) old_len: u64,
    pub(super) new_len: u64,
    pub(super) offset: u64,
    pub(super) range_len: u64,
    pub(super) old_bytes: Vec<u8>,
}

#[derive(Debug)]
pub(super) enum DirUndo {
    Created { name: String },
    Removed { name: String, trash: String },
    Renamed { from: String, to: String, replaced_trash: Option<String> },
}

#[derive(Debug)]
pub(super) struct Inode {
    pub(super) file: Arc<dyn StorageFile>,
    pub(super) accounting_id: FileId,
    pub(super) undo: Vec<DataUndo>,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) ops: u64,
    /// FNV-1a over every counted operation's description, in order: two runs that did the
    /// same operations in the same order have the same digest (exact-replay checks).
    pub(super) ops_digest: u64,
    /// Every counted operation's description, when tracing (`FaultyStorage::trace_ops`).
    pub(super) ops_trace: Option<Vec<String>>,
    pub(super) crashed: bool,
    pub(super) rng: SplitMix,
    pub(super) inodes: BTreeMap<InodeId, Inode>,
    pub(super) names: BTreeMap<String, InodeId>,
    pub(super) dir_undo: Vec<DirUndo>,
    pub(super) next_inode: InodeId,
    pub(super) next_trash: u64,
    /// Bytes held by all undo logs (bounded by [`UNDO_BYTES_MAX`]).
    pub(super) undo_bytes: u64,
}

#[derive(Debug)]
pub(super) struct Shared {
    pub(super) inner: Arc<dyn Storage>,
    pub(super) plan: FaultPlan,
    pub(super) accounting: IoAccounting,
    pub(super) state: Mutex<State>,
    /// Set by [`crate::FaultyStorage::set_lockstep`]: users run background work in lockstep
    /// (`Storage::lockstep`).
    pub(super) lockstep: std::sync::atomic::AtomicBool,
    /// Set by [`crate::FaultyStorage::stop_failing`]: the plan's injected failures are over.
    pub(super) healed: std::sync::atomic::AtomicBool,
}

/// Whether `err` is the error of a simulated crash (the crashing call or any later one).
pub fn is_simulated_crash(err: &Error) -> bool {
    matches!(err, Error::Io { source, .. } if source.to_string() == CRASH_MESSAGE)
}

pub(super) fn crash_error(op: &str) -> Error {
    Error::io(format!("{op} on a crashed storage"), std::io::Error::other(CRASH_MESSAGE))
}

/// The FNV-1a offset basis: the digest of no operations.
pub(super) const DIGEST_EMPTY: u64 = 0xcbf2_9ce4_8422_2325;

/// Folds `bytes` (and a separator) into an FNV-1a digest.
fn fnv1a(mut digest: u64, bytes: &[u8]) -> u64 {
    for &b in bytes.iter().chain(&[0xff]) {
        digest = (digest ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    digest
}

/// What the operation about to run must do differently.
pub(super) enum Fault {
    None,
    FlipBit,
}

impl State {
    pub(super) fn add_inode(&mut self, name: String, inode: Inode) -> InodeId {
        let id = self.next_inode;
        self.next_inode += 1;
        self.inodes.insert(id, inode);
        self.names.insert(name, id);
        id
    }

    pub(super) fn trash_name(&mut self) -> String {
        self.next_trash += 1;
        format!("{RESERVED_PREFIX}trash-{}", self.next_trash)
    }
}

impl Shared {
    /// Counts an operation and applies the plan to it. `write` is the write being attempted
    /// (inode, offset, data), for tearing. `may_need_space` says whether a real device could
    /// refuse the operation with `ENOSPC`: reads and removals never do, so a planned full-disk
    /// failure passes them by (an `EIO` plan fails them like anything else).
    pub(super) fn begin(
        &self,
        state: &mut State,
        what: &str,
        write: Option<(InodeId, u64, &[u8])>,
        may_need_space: bool,
    ) -> Result<Fault> {
        if state.crashed {
            return Err(crash_error(what));
        }
        state.ops += 1;
        let op = state.ops;
        state.ops_digest = fnv1a(state.ops_digest, what.as_bytes());
        if let Some(trace) = &mut state.ops_trace {
            let thread = std::thread::current();
            trace.push(format!("op {op}: {what} [{}]", thread.name().unwrap_or("?")));
        }
        if self.plan.crash_at_op == Some(op) {
            let torn = write.filter(|_| self.plan.tear_crashing_write);
            self.crash_locked(state, torn)?;
            return Err(crash_error(what));
        }
        let applies = may_need_space || self.plan.fail_with != FailKind::NoSpace;
        if applies && self.plan.fails(op) && !self.healed.load(std::sync::atomic::Ordering::Acquire)
        {
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
    pub(super) fn crash_locked(
        &self,
        state: &mut State,
        torn: Option<(InodeId, u64, &[u8])>,
    ) -> Result<()> {
        if state.crashed {
            return Ok(());
        }
        state.crashed = true;
        let survival = u64::from(self.plan.unsynced_survival_percent);
        for inode in state.inodes.values_mut() {
            // Newest first. `floor`: the file must keep at least this length because a newer
            // operation that survived wrote up to it.
            let mut floor = 0;
            while let Some(undo) = inode.undo.pop() {
                if survival > 0 && state.rng.below(100) < survival {
                    floor = floor.max(undo.new_len); // it reached the medium anyway
                    continue;
                }
                let target_len = undo.old_len.max(floor);
                inode.file.set_len(target_len)?;
                if !undo.old_bytes.is_empty() {
                    inode.file.write_all_at(undo.offset, &undo.old_bytes)?;
                }
                // Bytes of the range past the old length were a hole before: zeros.
                let zeros_from = undo.offset + undo.old_bytes.len() as u64;
                let zeros_to = (undo.offset + undo.range_len).min(target_len);
                if zeros_to > zeros_from {
                    inode
                        .file
                        .write_all_at(zeros_from, &vec![0; (zeros_to - zeros_from) as usize])?;
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
