//! Background work: writing memtables out as runs (the flush thread, `flush.rs`), committing
//! them (the commit thread), and merges (the merge thread: FD+DS builds new levels on the
//! side, FD+FC merges behind a wavefront). FD+XM does the same work inline, in the
//! modification that needs it, under its exclusive lock (`flush_now`, `merge_now`).
//!
//! The commit thread exists so that the flush thread never waits for a commit: a commit
//! syncs the runs' files, the log and the superblock, which beside a merge into the bottom
//! level took up to 765 ms at 50M keys, and a flush thread inside one could not write the
//! memtable the writers had frozen meanwhile, so they ran out of room (every insert maximum
//! of 60-500 ms at 50M, `docs/results/scale.md`, sessions 21-22). A run is installed
//! (readable, its memory free) before any commit names it, and its records stay in the log
//! until one does, so deferring commits loses nothing. In lockstep (the deterministic
//! simulation) the flush thread commits itself, as the threads take turns.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use lamina_core::{Error, Result};
use lamina_storage::StorageFile;

use super::control::{Next, RETRY_INTERVAL, clone_error, mark_background_thread};
use super::flush_stage::FlushStage;
use super::inner::Inner;
use crate::fc::{MergeEnd, run_fc_merge};
use crate::flush::write_run;
use crate::level::disk::DiskLevel;
use crate::merge::side::{IntoTop, finalize_plan};
use crate::options::FcMode;
use crate::persist::fences;
use crate::store::FileKind;
use crate::top::{Fences, RunsFilter};
use crate::tree::Tree;

/// Runs the flush thread may install before it commits them (module doc of `flush_one`):
/// a commit syncs the run's two files and the superblock, 20-45 ms beside a merge, during
/// which nothing freezes the active memtable.
const RUNS_UNCOMMITTED_MAX: u32 = 4;

impl Inner {
    /// The flush thread.
    pub fn flush_thread(&self) {
        self.serve(
            "flush",
            |retry| {
                self.flush_stages.enter(FlushStage::Idle);
                self.control.next_flush(retry)
            },
            || {
                let _span = tracing::debug_span!("fdtree_flush").entered();
                let result = self.flush_paced();
                if result.is_ok() && self.read(|t| Ok(t.merge_due().is_some())).unwrap_or(false) {
                    self.control.want_merge();
                }
                result
            },
        );
    }

    /// The merge thread (FD+DS, FD+FC).
    pub fn merge_thread(&self) {
        self.serve(
            "merge",
            |retry| self.control.next_merge(retry),
            || {
                let _span = tracing::debug_span!("fdtree_merge").entered();
                self.merge_now()
            },
        );
    }

    /// The commit thread (FD+DS, FD+FC, outside lockstep): commits the runs the flush thread
    /// installed, whenever it asks (module documentation).
    pub fn commit_thread(&self) {
        self.serve(
            "commit",
            |retry| self.control.next_commit(retry),
            || {
                let _span = tracing::debug_span!("fdtree_commit").entered();
                let start = std::time::Instant::now();
                let result = self.commit_owed_runs(false);
                let took_us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
                self.flush_stages.committed(took_us);
                result
            },
        );
    }

    /// A background thread's life: wait for work (`wait`, given the retry interval while
    /// the disk is full), do it (`work`), record its outcome (`Control::background_result`),
    /// until told to stop. A panic is a bug: the tree stays readable and modifications get
    /// a failure naming the `thread`.
    fn serve(
        &self,
        thread: &str,
        mut wait: impl FnMut(Option<std::time::Duration>) -> Next,
        mut work: impl FnMut() -> Result<()>,
    ) {
        mark_background_thread();
        let run = std::panic::AssertUnwindSafe(|| {
            loop {
                let retry = self.control.no_space().is_some().then_some(RETRY_INTERVAL);
                if wait(retry) == Next::Stop {
                    return;
                }
                let result = work();
                if let Err(e) = &result {
                    tracing::error!(error = %e, "fdtree {thread} failed");
                }
                self.control.background_result(&result);
            }
        });
        if std::panic::catch_unwind(run).is_err() {
            tracing::error!("the fdtree {thread} thread panicked; the tree refuses writes");
            self.control.fail(&Error::corruption(
                self.storage.path_of("fdtree"),
                0,
                format!("the {thread} thread panicked; reopen the tree"),
            ));
        }
    }

    /// Whether the active memtable should be frozen and written out: full, or the log has
    /// grown past `log_checkpoint_bytes` since the last time.
    fn freeze_due(&self) -> Result<bool> {
        let active = self.read(|t| Ok(t.top.active.bytes()))?;
        let logged = self.logged_bytes.load(Ordering::Relaxed);
        Ok(active >= self.params.memtable_freeze_bytes()
            || (self.log.is_some() && logged >= self.params.log_checkpoint_bytes && active > 0))
    }

    /// Writes the frozen memtable out as a run (freezing the active one first if it is
    /// due), installs it and commits; repeats while there is one to write.
    pub fn flush_now(&self) -> Result<()> {
        while self.flush_one(false)? {}
        self.commit_owed_runs(false)
    }

    /// `flush_now` for the flush thread: each run waits for its room in `L_0^new`
    /// (`pacing.rs`).
    fn flush_paced(&self) -> Result<()> {
        loop {
            self.flush_stages.enter(FlushStage::Pacing);
            self.pace_run()?;
            if !self.flush_one(true)? {
                return self.commit_or_hand_over(true);
            }
        }
    }

    /// Writes one run out (the frozen memtable, or the active one if a freeze is due);
    /// whether there was one. The flush thread hands the commit to the commit thread
    /// (module documentation). Otherwise the run is committed at once, unless the next
    /// freeze is already due (up to [`RUNS_UNCOMMITTED_MAX`] runs in a row): then the next run is
    /// written first and one commit covers both. Nothing is less durable meanwhile: the
    /// runs' records are in the log until a commit names the runs (their files are synced
    /// by that commit, `Tree::unsynced_files`), and the log is truncated only after it. At
    /// 3M keys, a commit that waited behind the merge's commit lock let the writers fill
    /// both memtables while no flush ran (measured: most waits for room with nothing
    /// frozen, `docs/results/scale.md`). `on_flush_thread`: the stages are the flush
    /// thread's (`flush_stage.rs`).
    fn flush_one(&self, on_flush_thread: bool) -> Result<bool> {
        let stage = |s| self.flush_stage(on_flush_thread, s);
        stage(FlushStage::Starting);
        let frozen = self.read(|t| Ok(t.top.frozen.clone()))?;
        let frozen = match frozen {
            Some(f) => f,
            None => {
                if !self.freeze_due()? {
                    return Ok(false);
                }
                match self.freeze()? {
                    Some(f) => f,
                    None => return Ok(false),
                }
            }
        };
        let installed = self
            .write(|t| Ok((t.alloc_file_id()?, t.filter_for_run(&frozen))))
            .and_then(|(id, union)| {
                // The flush thread's turn at the CPU (`Inner::cpu_turn`): the merge thread
                // waits for the run, not the writers.
                let turn = on_flush_thread.then(|| self.cpu_turn.lock());
                stage(FlushStage::Writing);
                let written = write_run(
                    &self.store,
                    &self.params,
                    id,
                    &frozen,
                    union.as_deref(),
                    Some(self.flush_rate.entries_written()),
                );
                drop(turn);
                let (run, unsynced) = written?;
                stage(FlushStage::Installing);
                self.install(run, union, unsynced)
            });
        self.flush_rate.ended(installed.is_ok());
        installed?;
        let owed = self.runs_uncommitted.fetch_add(1, Ordering::Relaxed) + 1;
        if self.has_commit_thread(on_flush_thread) {
            self.control.want_commit();
            return Ok(true);
        }
        let next_ready = self.read(|t| Ok(t.top.frozen.is_some()))? || self.freeze_due()?;
        if owed < RUNS_UNCOMMITTED_MAX && !self.control.lockstep() && next_ready {
            // Writers are filling the last memtable: the next run first, one commit for both.
            return Ok(true);
        }
        self.commit_owed_runs(on_flush_thread)?;
        Ok(true)
    }

    /// Records the flush thread's `stage` (`flush_stage.rs`); other callers of the flush
    /// (FD+XM's inline flush, `FdTree::flush`, close) are not the flush thread.
    fn flush_stage(&self, on_flush_thread: bool, stage: FlushStage) {
        if on_flush_thread {
            self.flush_stages.enter(stage);
        }
    }

    /// Whether the flush thread leaves its commits to the commit thread (there is one
    /// outside lockstep; other callers of the flush commit themselves).
    fn has_commit_thread(&self, on_flush_thread: bool) -> bool {
        on_flush_thread && !self.control.lockstep()
    }

    /// Before the flush thread waits for work: the runs it installed are committed, by
    /// the commit thread if there is one, else here.
    fn commit_or_hand_over(&self, on_flush_thread: bool) -> Result<()> {
        if self.has_commit_thread(on_flush_thread) {
            if self.runs_uncommitted.load(Ordering::Relaxed) > 0 {
                self.control.want_commit();
            }
            return Ok(());
        }
        self.commit_owed_runs(on_flush_thread)
    }

    /// Commits the runs installed since the last commit, if any. The count is taken under
    /// the commit lock, so a caller that finds none owed knows that a commit naming every
    /// run installed before its call has finished (or failed and left them owed).
    fn commit_owed_runs(&self, on_flush_thread: bool) -> Result<()> {
        let stage = |s| self.flush_stage(on_flush_thread, s);
        stage(FlushStage::CommitLock);
        let persist = self.persist.lock();
        if self.runs_uncommitted.swap(0, Ordering::Relaxed) == 0 {
            return Ok(());
        }
        stage(FlushStage::Committing);
        let committed = self.commit_locked(persist, &mut || Ok(()));
        if committed.is_err() {
            self.runs_uncommitted.fetch_add(1, Ordering::Relaxed); // still owed
        }
        committed
    }

    /// Installs a run written from the frozen memtable and wakes the writers waiting for
    /// room at once: the memtable's bytes are free from here on, while the commit that
    /// follows (the run's syncs, superblock syncs, removals, the log's truncation) can take
    /// tens of milliseconds. Waking them only after the commit kept a writer asleep until
    /// its 50-ms recheck (`Control::wait_room`): insert maxima of 50, 100 and 150 ms at 3M
    /// keys (`docs/results/scale.md`, session 18). The run's files are not synced yet
    /// (`unsynced`): the next commit, whichever thread makes it, syncs them before it names
    /// the run (`Tree::unsynced_files`).
    pub(super) fn install(
        &self,
        run: DiskLevel,
        union: Option<Arc<RunsFilter>>,
        unsynced: Vec<Arc<dyn StorageFile>>,
    ) -> Result<()> {
        self.write(|t| {
            t.install_run(run, union, unsynced);
            self.pacer.set_runs(t.run_count());
            Ok(())
        })?;
        self.control.room_made();
        Ok(())
    }

    /// Freezes the active memtable under the exclusive write gate (no modification is
    /// between its log append and its memtable insert).
    pub(super) fn freeze(&self) -> Result<Option<Arc<crate::memtable::Memtable>>> {
        let frozen = self.write_gated(|t| {
            let through = match &self.log {
                Some(log) => log.next_seq().saturating_sub(1),
                None => 0,
            };
            Ok(t.freeze(through))
        })?;
        if let Some(f) = &frozen {
            self.logged_bytes.store(0, Ordering::Relaxed);
            self.flush_rate.began(f.stats().data_entries());
        }
        Ok(frozen)
    }

    /// Runs the merges that are due (or a merge recovery rebuilt) until none is.
    pub fn merge_now(&self) -> Result<()> {
        loop {
            if self.mode != FcMode::Xm && self.control.stopping() {
                return Ok(());
            }
            // A merge recovery rebuilt is FD+FC's, whatever the scheme the tree is opened with.
            let resume = self.read(|t| Ok(t.fc_resume.is_some()))?;
            let done = if self.mode == FcMode::Fc || resume {
                self.fc_merge_once()?
            } else {
                self.side_merge_once()?
            };
            if !done {
                return Ok(());
            }
            self.read(Tree::verify_if_configured)?;
        }
    }

    /// One FD+FC merge, if one is due; whether one ran.
    fn fc_merge_once(&self) -> Result<bool> {
        let merge = self.write(|t| {
            if let Some(resumed) = t.fc_resume.take() {
                return Ok(Some(resumed));
            }
            match t.merge_due() {
                Some(trigger) => t.begin_fc_merge(trigger).map(Some),
                None => Ok(None),
            }
        })?;
        let Some(merge) = merge else { return Ok(false) };
        self.pacer.begin(true);
        let merged = run_fc_merge(self, merge);
        self.pacer.end();
        match merged {
            Ok(MergeEnd::Finished) => Ok(true),
            // Closing: the merge resumes when the tree is reopened.
            Ok(MergeEnd::Paused) => Ok(false),
            Err(e) => {
                // The merge cannot be undone (old blocks are gone): the tree stays readable
                // between two stages, modifications are refused until it is reopened (a
                // persistent tree resumes the merge from its last progress record). A full
                // disk is waited out inside the merge (its retry policy); it ends up here
                // only when closing, or the merge would be left half done for good.
                if !matches!(e, Error::NoSpace { .. }) || !self.control.stopping() {
                    self.control.fail(&e);
                }
                Err(e)
            }
        }
    }

    /// One FD+XM or FD+DS merge, if one is due; whether one ran. A failure leaves the old
    /// levels in place (the new files are removed) and `L_0^old`'s runs back in `L_0`.
    fn side_merge_once(&self) -> Result<bool> {
        let merge = self.write(|t| match t.merge_due() {
            Some(trigger) => t.begin_side_merge(trigger).map(Some),
            None => Ok(None),
        })?;
        let Some(mut merge) = merge else { return Ok(false) };
        self.pacer.begin(false);
        let executed = merge.execute();
        self.pacer.end();
        self.control.hold_point();
        let executed = match executed {
            Ok(e) => e,
            Err(e) => {
                self.write(|t| {
                    t.abort_side_merge();
                    Ok(())
                })?;
                return Err(e);
            }
        };
        let new_ids: Vec<u32> = executed.levels.iter().map(|l| l.file_id).collect();
        let mut executed = Some(executed);
        let persistent = self.persistent;
        let finished = self.commit_after(&mut || {
            let executed = executed.take().expect("finalized once");
            let (params, succ_below, m) = self.read(|t| {
                let side = t.side.as_ref().expect("a side merge is in progress");
                let succ = side
                    .old_levels
                    .iter()
                    .find(|l| l.label > merge.m)
                    .map(|l| l.size_blocks(&t.params));
                Ok((t.params.clone(), succ, merge.m))
            })?;
            let top_bytes = executed
                .top_fences
                .iter()
                .map(|(k, _)| crate::format::entry::fence_bytes(k.len()) as u64)
                .sum();
            let plan = finalize_plan(
                &params,
                &self.store,
                top_bytes,
                executed.levels.clone(),
                succ_below,
                executed.full,
            )?;
            let mut fences = Fences::new();
            match &plan.into_top {
                Some(IntoTop::Fences(f)) => f.iter().for_each(|(k, p)| fences.add(k, *p)),
                Some(IntoTop::Run(_)) => {}
                None => executed.top_fences.iter().for_each(|(k, p)| fences.add(k, *p)),
            }
            let id =
                if persistent && !fences.is_empty() { self.write(Tree::alloc_file_id)? } else { 0 };
            if id != 0 {
                self.store.write_file(id, FileKind::Fences, &fences::encode(&fences))?;
            }
            debug_assert_eq!(m, merge.m);
            self.write(|t| {
                t.finish_side_merge(&merge, &executed, plan, fences, id);
                Ok(())
            })
        });
        if let Err(e) = finished {
            // The switch did not happen if the error came before it (the tree still has
            // its side view); the new files are then removed.
            let aborted = self.write(|t| {
                let aborted = t.side.is_some();
                t.abort_side_merge();
                Ok(aborted)
            })?;
            if aborted {
                for id in new_ids {
                    let _ = self.store.remove_all(id); // never referenced; the error matters
                }
            }
            return Err(clone_error(&e));
        }
        Ok(true)
    }
}
