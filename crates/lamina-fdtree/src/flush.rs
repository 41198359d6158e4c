//! Writing `L_0`'s memtable out as a run.
//!
//! The paper keeps `L_0` in memory ("persistence can be achieved by separate logging",
//! section 2.1) and lets a merge begin only when `L_0` is close to full; FD+FC then shares
//! `L_0`'s memory between `L_0^old` and `L_0^new` (section 4.2). lamina instead writes a full
//! memtable to disk as an immutable sorted run, Remark A.17's "writing `L_0^old` temporarily
//! to disk", which does three things at once:
//! - all of `L_0`'s memory goes to `L_0^new`: writers wait for a run to be written (tens of
//!   milliseconds), never for a merge, however long (issue 22: no collapse during long
//!   merges, which FD+FC's memory sharing admits writers only as fast as `L_0^old` drains);
//! - the run is `L_0`'s checkpoint: the log is truncated to it, so the log is bounded by the
//!   memtable (or by `log_checkpoint_bytes` when writes overwrite a few keys);
//! - a merge takes all of `L_0`'s runs as `L_0^old` and reads them like old levels.
//!
//! Its costs, as the remark says: each record is written once more, and lookups search the
//! runs (each has a Bloom filter, so a run that does not hold the key costs no I/O).
//!
//! The memtable is frozen under the engine's write gate (no write is half applied, and the
//! frozen memtable holds exactly the log records up to a sequence number), written without
//! any lock, then installed as the newest run under the tree lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::Result;
use lamina_storage::StorageFile;
use lamina_storage::bloom::{PipelinedInserts, key_hash};

use crate::level::{DiskLevel, LevelWriter, Visibility};
use crate::memtable::Memtable;
use crate::options::Params;
use crate::store::{BlockStore, FileKind};
use crate::top::RunsFilter;
use crate::tree::Tree;

/// Writes the entries of a frozen memtable as a run in the new file `file_id`; on error
/// the file is removed. The run's files are written, not synced: they are returned for
/// [`Tree::install_run`], and the commit that first names the run syncs them (a writer
/// waiting for room waited for both syncs, 10-15 ms each beside a merge at 3M keys, before).
/// `entries_written`, if given, is set to the entries written so far at every block (the
/// flush's progress, which writers are spaced by: `engine/flush_rate.rs`).
pub(crate) fn write_run(
    store: &BlockStore,
    params: &Params,
    file_id: u32,
    mem: &Memtable,
    union: Option<&RunsFilter>,
    entries_written: Option<&AtomicU64>,
) -> Result<(DiskLevel, Vec<Arc<dyn StorageFile>>)> {
    let file = store.create(file_id, FileKind::Level)?;
    let inner = mem.read();
    let keys = mem.stats().data_entries();
    let mut w = LevelWriter::new(store, params, 0, file_id, file, keys, Visibility::Private);
    let mut union_pipe = PipelinedInserts::default();
    let written = (|| {
        for (i, e) in inner.iter().enumerate() {
            if !w.fits([e.encoded_len()]) {
                w.start_block(None)?;
                if let Some(progress) = entries_written {
                    progress.store(i as u64, Ordering::Relaxed);
                }
            }
            if let Some(union) = union {
                union.insert_pipelined(&mut union_pipe, key_hash(e.key()));
            }
            w.push(e);
        }
        if let Some(progress) = entries_written {
            progress.store(keys, Ordering::Relaxed);
        }
        // Every key is in the union before the run can be installed.
        if let Some(union) = union {
            union.drain(&mut union_pipe);
        }
        w.finish_unsynced()
    })();
    if written.is_err() {
        let _ = store.remove_all(file_id); // best effort: the error is what matters
    }
    written
}

impl Tree {
    /// Freezes the active memtable and starts an empty one; `through_seq` is the last log
    /// record applied (the caller holds the write gate exclusively, so every record up to it
    /// is in the frozen memtable or older). Returns the frozen memtable, or `None` if one is
    /// still being written or the active one is empty.
    pub(crate) fn freeze(&mut self, through_seq: u64) -> Option<Arc<Memtable>> {
        if self.top.frozen.is_some() || self.top.active.is_empty() {
            return None;
        }
        let fresh = Memtable::new(self.params.memtable_bytes_max, self.params.bloom_bits_per_key);
        let frozen = std::mem::replace(&mut self.top.active, Arc::new(fresh));
        debug_assert!(frozen.seq_max() <= through_seq);
        self.top.frozen = Some(frozen.clone());
        self.top.frozen_through_seq = through_seq;
        self.top.publish_memtables();
        Some(frozen)
    }

    /// The union filter (`top/runs_filter.rs`) the run of `frozen` is to be added to; a
    /// new one is sized for runs of a full memtable of `frozen`'s mean entry size.
    pub(crate) fn filter_for_run(&self, frozen: &Memtable) -> Option<Arc<RunsFilter>> {
        let keys = frozen.stats().data_entries();
        let full = u128::from(keys) * u128::from(self.params.memtable_bytes_max)
            / u128::from(frozen.bytes().max(1));
        let keys_per_run = u64::try_from(full).unwrap_or(u64::MAX);
        self.top.filter_for_run(keys, keys_per_run, self.params.bloom_bits_per_key)
    }

    /// Installs the run written from the frozen memtable as `L_0`'s newest run; `added_to`:
    /// the union filter its keys were added to ([`Tree::filter_for_run`]); `unsynced`: its
    /// files, for the next commit to sync ([`Tree::unsynced_files`]).
    pub(crate) fn install_run(
        &mut self,
        run: DiskLevel,
        added_to: Option<Arc<RunsFilter>>,
        unsynced: Vec<Arc<dyn StorageFile>>,
    ) {
        assert!(self.top.frozen.is_some(), "a run replaces the frozen memtable");
        self.unsynced_files.extend(unsynced);
        self.top.push_run(run, added_to);
        self.top.frozen = None;
        self.top.publish_memtables();
        self.applied_seq = self.applied_seq.max(self.top.frozen_through_seq);
        self.merges.runs_written += 1;
    }
}
