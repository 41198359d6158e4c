//! Committing an FD+FC merge's progress (Remark A.6) in a persistent tree.
//!
//! - At a stage boundary, once enough old blocks have been reclaimed (or at once with
//!   `Params::merge_commit_blocks` = 1): the new levels' written blocks are synced, a new
//!   progress record is written and synced, and the manifest naming it is committed; then
//!   the old blocks reclaimed before the record are punched out (their entries are durable
//!   in the new levels or in the record), and the previous record is removed.
//! - The first such commit also commits the merge start: `L_0^old` is written as the `L_0`
//!   snapshot, the manifest keeps the levels as the merge started and `applied_seq` = the
//!   last log record in `L_0^old`; later log records are `L_0^new`'s. A merge that ends
//!   before its first commit is committed by the checkpoint after it, like FD+DS's.
//!
//! Space during a merge is therefore the steady state plus the new levels' unsynced part
//! (one block per level) plus at most `merge_commit_blocks` reclaimed-but-not-yet-freed old
//! blocks: `O(h)` blocks for a fixed setting, never a copy of the merged levels.

use lamina_core::codec::Encode;
use lamina_core::{Error, Result};
use lamina_storage::{OpenMode, StorageFile};

use super::progress::MergeProgress;
use super::run::FcHooks;
use crate::manifest::Manifest;
use crate::merge::execute::MergeRun;
use crate::persist::write_snapshot_file;
use crate::store::{BlockStore, progress_file_name};
use crate::tree::Tree;

/// The durable side of one FD+FC merge.
pub(crate) struct MergeCommits {
    /// The manifest as of the merge start; progress commits change only `merge_file` and
    /// `next_file_id`.
    base: Manifest,
    /// `L_0^old`'s entries to snapshot at the start (none once the start is committed).
    start_snapshot: Option<Vec<crate::entry::Entry>>,
    /// Old blocks reclaimed since the last commit, freed after the next one.
    pending_punch: Vec<(std::sync::Arc<dyn StorageFile>, u32)>,
    /// How many reclaimed blocks trigger a progress commit.
    commit_blocks: usize,
    /// Statistics fields of the record.
    pub(crate) skipped_preemptively: u64,
    pub(crate) tightened_preemptively: u64,
    pub(crate) trigger: crate::merge::Trigger,
    pub(crate) m: usize,
    pub(crate) height_before: usize,
}

impl std::fmt::Debug for MergeCommits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MergeCommits")
            .field("pending_punch", &self.pending_punch.len())
            .field("commit_blocks", &self.commit_blocks)
            .finish_non_exhaustive()
    }
}

impl MergeCommits {
    /// For a merge that starts now (`base` describes the tree before it; its `top_file` is
    /// the snapshot id to write `start_snapshot` to).
    pub(crate) fn starting(
        base: Manifest,
        start_snapshot: Vec<crate::entry::Entry>,
        commit_blocks: usize,
        pending: &super::FcPending,
    ) -> Self {
        MergeCommits {
            base,
            start_snapshot: Some(start_snapshot),
            pending_punch: Vec::new(),
            commit_blocks: commit_blocks.max(1),
            skipped_preemptively: pending.skipped_preemptively,
            tightened_preemptively: pending.tightened_preemptively,
            trigger: pending.trigger,
            m: pending.m,
            height_before: pending.height_before,
        }
    }

    /// For a merge resumed by recovery (its start and progress are committed).
    pub(crate) fn resumed(
        base: Manifest,
        commit_blocks: usize,
        pending: &super::FcPending,
    ) -> Self {
        MergeCommits {
            start_snapshot: None,
            ..Self::starting(base, Vec::new(), commit_blocks, pending)
        }
    }

    /// Whether the merge start is still to be committed (then the caller hands
    /// `L_0^old`'s entries to [`MergeCommits::set_start_snapshot`]).
    pub(crate) fn start_pending(&self) -> bool {
        self.start_snapshot.is_some()
    }

    /// `L_0^old`'s entries, written as the snapshot by the first commit.
    pub(crate) fn set_start_snapshot(&mut self, entries: Vec<crate::entry::Entry>) {
        assert!(self.start_snapshot.is_some(), "the start is not committed yet");
        self.start_snapshot = Some(entries);
    }

    /// Remembers an old block reclaimed by m-delete, to free after the next commit.
    pub(crate) fn reclaimed(&mut self, file: std::sync::Arc<dyn StorageFile>, index: u32) {
        self.pending_punch.push((file, index));
    }

    /// Whether enough reclaimed blocks wait for a commit.
    pub(crate) fn due(&self) -> bool {
        self.pending_punch.len() >= self.commit_blocks
    }

    /// Commits a progress record for the state at this stage boundary, then frees the old
    /// blocks reclaimed before it.
    pub(crate) fn commit_progress(
        &mut self,
        hooks: &FcHooks<'_>,
        store: &BlockStore,
        run: &MergeRun<'_>,
    ) -> Result<()> {
        // The first commit of a merge also commits its start (Remark A.6's start-merge):
        // L_0^old as the snapshot, and where L_0^new begins in the log. Until then nothing
        // was freed, so the previous commit and the log still recover everything, and a
        // merge that ends before its first commit costs no extra write at all.
        let top = match self.start_snapshot.take() {
            None => None,
            Some(entries) if entries.is_empty() => {
                self.base.top_file = 0;
                self.base.top_blocks = 0;
                None
            }
            Some(entries) => {
                let id = self.base.top_file;
                self.base.top_blocks =
                    write_snapshot_file(store, self.base.block_bytes, id, &entries)?;
                Some((id, self.base.top_blocks))
            }
        };
        self.commit(hooks, store, run, top)?;
        for (file, index) in std::mem::take(&mut self.pending_punch) {
            store.punch_block(&*file, index)?;
        }
        Ok(())
    }

    fn commit(
        &mut self,
        hooks: &FcHooks<'_>,
        store: &BlockStore,
        run: &MergeRun<'_>,
        top: Option<(u32, u32)>,
    ) -> Result<()> {
        run.sync_new_levels()?;
        let mut parts = run.progress_parts();
        if !parts.started {
            // Before the first key group the new levels hold at most the empty first block
            // of a full merge (whose fence is not published yet): a resume starts afresh.
            for level in &mut parts.new_levels {
                *level = crate::fc::NewLevelProgress {
                    flushed_blocks: 0,
                    stats: crate::level::LevelStats::default(),
                    tail: None,
                    ..level.clone()
                };
            }
        }
        // The tree's part, under its lock: the wavefront, the old heads, L_0^new's fences,
        // a new file id; and the durable side, taken out for the I/O below.
        let parts_and_persist = hooks.with_tree(|t| {
            let fc = t.fc.as_ref().expect("an FD+FC merge is in progress");
            let m = self.m;
            let record = MergeProgress {
                trigger: self.trigger,
                m: m as u64,
                height_before: self.height_before as u64,
                skipped_preemptively: self.skipped_preemptively,
                tightened_preemptively: self.tightened_preemptively,
                started: parts.started,
                wavefront_key: fc.wavefront_key.clone(),
                wavefront_ptr: fc.wavefront_ptr,
                p_last: parts.p_last,
                cancellations: parts.cancellations,
                cancelled_bytes: parts.cancelled_bytes,
                old_heads: fc
                    .old_levels
                    .iter()
                    .filter(|l| l.label <= m)
                    .map(|l| (l.file_id, l.shared.head()))
                    .collect(),
                new_levels: parts.new_levels,
                top_fences: t.top.fences().map(|(k, p)| (k.clone(), *p)).collect(),
            };
            let id = t.alloc_file_id()?;
            let persist = t.persist.take().ok_or_else(|| {
                Error::corruption("fdtree", 0, "merge commit without a durable side")
            })?;
            self.base.next_file_id = t.next_file_id;
            // Files earlier merges replaced (when their checkpoint was skipped, see
            // `engine.rs`): the state committed here no longer names them.
            let obsolete = std::mem::take(&mut t.obsolete_files);
            Ok((record, id, persist, obsolete))
        })?;
        let (record, id, mut persist, obsolete) = parts_and_persist;
        let result = write_record(store, id, &record).and_then(|()| {
            store.storage().sync_dir()?;
            let manifest = Manifest { merge_file: id, ..self.base.clone() };
            persist.commit_merge_state(&manifest, top)
        });
        let committed = result.is_ok();
        hooks.with_tree(|t| {
            t.persist = Some(persist);
            if !committed {
                t.obsolete_files.extend(&obsolete);
            }
            Ok(())
        })?;
        for replaced in result?.into_iter().chain(obsolete) {
            store.remove(replaced)?;
        }
        Ok(())
    }
}

/// Writes progress record file `id` and syncs it.
fn write_record(store: &BlockStore, id: u32, record: &MergeProgress) -> Result<()> {
    let file = store.storage().open(&progress_file_name(id), OpenMode::CreateNew)?;
    file.write_all_at(0, &record.encode())?;
    file.sync_data()
}

impl Tree {
    /// The manifest a merge starting now commits first (`L_0^old` as snapshot `top_file`).
    pub(crate) fn merge_start_manifest(&mut self) -> Result<Manifest> {
        let snapshot = self.alloc_file_id()?;
        Ok(self.manifest(snapshot, 0))
    }
}
