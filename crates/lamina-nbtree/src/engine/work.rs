//! Running the flush job (section 5.1, "Deamortization"): freezing a full root d-tree,
//! stepping the cascade a bounded number of pages at a time, and publishing and committing
//! each change.
//!
//! The schedule: a job's work is at most `W = work_bound_pages` pages and must be done
//! before the next root d-tree fills, that is within sigma bytes of inserts, so every
//! inserted byte grants the job `W / sigma` pages of credit. With
//! [`Deamortization::Foreground`] each insert does its credit itself (the paper's `1/sigma`
//! of the pending work per insert): an insert of `e` bytes writes at most
//! `ceil(e W / sigma)` pages plus what one push writes at once. With
//! [`Deamortization::Background`] a thread does the work and a writer helps only when the
//! job is more than [`HELP_SLACK_PAGES`] behind its credit. Either way, a writer that fills
//! the next root d-tree before the job is done finishes it first (a stall, counted).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use lamina_core::{Error, Result};

use super::inner::{Inner, Version, Work};
use crate::flush::{Event, FlushJob, Stepped, work_bound_pages};
use crate::memtable::Memtable;
use crate::options::Deamortization;
use crate::persist::manifest_of;

/// Pages the background thread writes per step (it releases the work lock between steps).
pub const BACKGROUND_STEP_PAGES: u64 = 32;
/// Pages the background thread's d-tree writers gather before writing them in one call
/// (`DTreeWriter::with_write_batch_pages`; half a step, so a step still writes).
pub const BACKGROUND_WRITE_BATCH_PAGES: u64 = 16;
/// How far (pages) the background job may fall behind its credit before writers help.
pub const HELP_SLACK_PAGES: u64 = 256;
/// Most pages one write helps with (`Deamortization::Background`): help is bounded; a job
/// still behind when the next root d-tree fills is finished by the writer that fills it.
pub const HELP_PAGES_MAX: u64 = 16;
/// The active memtable may exceed sigma by `sigma / OVERFLOW_SIGMA_DIVISOR` while the job
/// before it still runs (`Deamortization::Background`), its writers paced meanwhile.
pub const OVERFLOW_SIGMA_DIVISOR: u64 = 2;
/// The longest a write behind schedule pauses (spinning, `Inner::pause_behind`) when the
/// thread holds the work.
pub const HELP_PAUSE: std::time::Duration = std::time::Duration::from_micros(100);
/// Log bytes after which the active memtable is frozen even if it holds less than sigma
/// (overwrites of few keys), as a multiple of sigma: bounds the log and its replay.
pub const LOG_CHECKPOINT_SIGMAS: u64 = 4;

const MICRO: u64 = 1_000_000;

impl Inner {
    /// After a modification of `bytes` to the active memtable: grants the job its credit,
    /// does or helps with the work the schedule asks, and freezes a full active memtable.
    pub fn after_write(&self, bytes: u64) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(()); // closing abandons the job; the log holds this write
        }
        let c = &self.counters;
        let logged = c.logged_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        if c.job_active.load(Ordering::Acquire) {
            let bound = c.job_bound_pages.load(Ordering::Relaxed);
            let grant = u128::from(bytes) * u128::from(bound) * u128::from(MICRO)
                / u128::from(self.sigma_bytes);
            let credit = c
                .job_credit_micropages
                .fetch_add(grant as u64, Ordering::Relaxed)
                .saturating_add(grant as u64);
            let owed = (credit / MICRO).saturating_sub(c.job_pages.load(Ordering::Relaxed));
            let help = match self.options.deamortization {
                Deamortization::Foreground => owed,
                Deamortization::Background => {
                    owed.saturating_sub(HELP_SLACK_PAGES).min(HELP_PAGES_MAX)
                }
            };
            if help > 0 {
                let done = match self.options.deamortization {
                    Deamortization::Foreground => self.run(&mut self.work.lock(), help)?,
                    // Behind schedule: help if the work is free; if the thread holds it (it
                    // may be waiting for a sync), give it the processor for a moment rather
                    // than wait behind the sync.
                    Deamortization::Background => {
                        let done = match self.work.try_lock() {
                            Some(mut work) => self.help(&mut work, help)?,
                            None => 0,
                        };
                        if done == 0 {
                            self.pause_behind();
                        }
                        done
                    }
                };
                if self.options.deamortization == Deamortization::Background {
                    c.helped_pages.fetch_add(done, Ordering::Relaxed);
                }
            }
        }
        let active_bytes = self.published.read().active.fill_bytes();
        if active_bytes >= self.sigma_bytes || logged >= LOG_CHECKPOINT_SIGMAS * self.sigma_bytes {
            // Background: a writer never waits for the work lock (the thread may hold it
            // across a commit's syncs) while the active memtable may still grow: it freezes
            // the memtable if the lock is free and no job runs; while the job before still
            // runs, the memtable may overflow by sigma / OVERFLOW_SIGMA_DIVISOR, its writers
            // helping or pausing; only past that does a writer wait and finish the job (a
            // stall).
            let overflow_max = self.sigma_bytes / OVERFLOW_SIGMA_DIVISOR;
            if self.options.deamortization == Deamortization::Background
                && active_bytes < self.sigma_bytes + overflow_max
            {
                let done = match self.work.try_lock() {
                    Some(mut work) if work.job.is_none() && work.restart.is_none() => {
                        self.rotate(&mut work)?;
                        return Ok(());
                    }
                    Some(mut work) => self.help(&mut work, HELP_PAGES_MAX)?,
                    None => 0,
                };
                c.helped_pages.fetch_add(done, Ordering::Relaxed);
                if done == 0 {
                    self.pause_behind();
                }
                return Ok(());
            }
            let mut work = self.work.lock();
            self.rotate(&mut work)?;
        }
        Ok(())
    }

    /// A write behind schedule whose help the thread's hold of the work refused: waits up
    /// to [`HELP_PAUSE`] for the thread to report another step, or for the job to end.
    ///
    /// It spins rather than sleeps (`lamina_storage::pause`): a sleep of 100 us woke 1-16 ms
    /// late about once in a thousand, and 2-3% of inserts pause; a 10M-insert run had 91
    /// pauses of 2-13 ms and a p99.99 of 862-881 us, 218-227 us with the spin
    /// (`docs/results/nbtree.md`, 2026-12-01). The spin ends as soon as the job reports a
    /// step, so a writer waits for the work, not the clock.
    fn pause_behind(&self) {
        let c = &self.counters;
        let pages = c.job_pages.load(Ordering::Relaxed);
        let deadline = std::time::Instant::now() + HELP_PAUSE;
        lamina_storage::pause::pause_until(deadline, &self.pause_slot, || {
            c.job_pages.load(Ordering::Relaxed) != pages
                || !c.job_active.load(Ordering::Acquire)
                || self.closed.load(Ordering::Acquire)
        });
    }

    /// Freezes the active memtable if it is full (or the log checkpoint is due), after
    /// finishing the job in progress (a stall if it was not done).
    pub fn rotate(&self, work: &mut Work) -> Result<()> {
        let due = {
            let active = self.published.read().active.clone();
            active.fill_bytes() >= self.sigma_bytes
                || self.counters.logged_bytes.load(Ordering::Relaxed)
                    >= LOG_CHECKPOINT_SIGMAS * self.sigma_bytes
        };
        if !due {
            return Ok(()); // another writer froze it meanwhile
        }
        if work.job.is_some() || work.restart.is_some() {
            self.counters.stalls.fetch_add(1, Ordering::Relaxed);
            self.finish(work)?;
        }
        if !self.closed.load(Ordering::Acquire) {
            self.freeze(work);
        }
        Ok(())
    }

    /// Runs the job in progress (or restarts a failed one) to its end.
    pub fn finish(&self, work: &mut Work) -> Result<()> {
        while (work.job.is_some() || work.restart.is_some()) && !self.closed.load(Ordering::Acquire)
        {
            self.run(work, u64::MAX / 2)?;
        }
        Ok(())
    }

    /// Freezes the active memtable (if not empty) and starts its job. No job may be running.
    pub fn freeze(&self, work: &mut Work) {
        assert!(work.job.is_none() && work.restart.is_none());
        let _gate = self.write_gate.write();
        let mut published = self.published.write();
        if published.active.is_empty() {
            self.counters.logged_bytes.store(0, Ordering::Relaxed);
            return;
        }
        let frozen =
            std::mem::replace(&mut published.active, Arc::new(Memtable::new(self.sigma_bytes)));
        published.version = Arc::new(Version {
            stree: published.version.stree.clone(),
            frozen: Some(frozen.clone()),
        });
        drop(published);
        // Under the exclusive gate every record appended is applied: the frozen memtable
        // holds exactly the records up to here (since the previous freeze).
        work.frozen_seq = self.log.as_ref().map_or(0, |l| l.next_seq().saturating_sub(1));
        self.counters.logged_bytes.store(0, Ordering::Relaxed);
        self.start_job(work, frozen);
    }

    /// Splits overfull and merges underfull s-nodes a crash left between the steps of a
    /// job, before anything else.
    pub fn repair(&self, work: &mut Work) -> Result<()> {
        let tree = &work.tree;
        let overfull = tree.nodes.values().any(|n| n.children.len() > self.fanout);
        let underfull = crate::flush::underflow::find(tree, self.fanout, self.sigma_bytes)
            .is_some()
            || crate::flush::underflow::collapsible_root(tree).is_some();
        if overfull || underfull {
            work.job = Some(FlushJob::repair(self.sigma_bytes, self.fanout, self.context.clone()));
            self.counters.job_active.store(true, Ordering::Release);
            self.finish(work)?;
        }
        // A crash between two steps of a job's cascade left an s-node whose children hold
        // more than the between-jobs limit: the rest of that cascade is taken up again as a
        // job of its own, scheduled like any job (not done here: it may write
        // `(2f + 1) (sigma + e)` bytes per level, and opening stays quick).
        if self.recovered_mid_job.load(Ordering::Acquire)
            && let Some(path) =
                crate::verify::oversized_path(&work.tree, self.fanout, self.sigma_bytes)
        {
            tracing::info!(depth = path.len(), "nbtree resumes a flush job a crash interrupted");
            let job = FlushJob::resume(path, self.sigma_bytes, self.fanout, self.context.clone());
            self.begin_job(work, job);
        }
        Ok(())
    }

    fn start_job(&self, work: &mut Work, frozen: Arc<Memtable>) {
        let job = FlushJob::new(frozen, self.sigma_bytes, self.fanout, self.context.clone());
        self.begin_job(work, job);
    }

    /// Makes `job` the job in progress, with the schedule of its credit (module docs).
    fn begin_job(&self, work: &mut Work, job: FlushJob) {
        assert!(work.job.is_none(), "one job at a time");
        let bound = work_bound_pages(
            work.tree.height() as u64,
            self.fanout as u64,
            self.sigma_bytes,
            u64::from(self.options.page_bytes),
            u64::from(self.options.bloom_bits_per_key),
        );
        let c = &self.counters;
        // The background schedule follows what jobs really write: twice the previous job's
        // pages (a job one level deeper writes about that much more), never above the
        // bound. The bound's worst case (half-empty pages, every sibling full) is ten times
        // what jobs write, and would have writers pause long before the thread is behind. The
        // foreground schedule is the bound itself (section 5.1).
        let last = c.job_pages.load(Ordering::Relaxed);
        let bound = match self.options.deamortization {
            Deamortization::Background if last > 0 => bound.min(2 * last),
            Deamortization::Background => bound / 8,
            Deamortization::Foreground => bound,
        };
        c.job_pages.store(0, Ordering::Relaxed);
        c.job_credit_micropages.store(0, Ordering::Relaxed);
        c.job_bound_pages.store(bound, Ordering::Relaxed);
        c.jobs.fetch_add(1, Ordering::Relaxed);
        work.job = Some(job);
        c.job_active.store(true, Ordering::Release);
        self.work_ready.notify_all();
    }

    /// Does up to about `pages` pages of the job; returns the pages written. A failure
    /// abandons the job (its files removed) and reverts the working tree to the published
    /// one; a full disk leaves the frozen memtable to be flushed again by a later write,
    /// anything else makes the tree refuse every later call.
    pub fn run(&self, work: &mut Work, pages: u64) -> Result<u64> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(0);
        }
        if work.job.is_none()
            && let Some(frozen) = work.restart.take()
        {
            self.counters.restart_pending.store(false, Ordering::Release);
            self.start_job(work, frozen);
        }
        let mut done = 0;
        while done < pages {
            let Some(job) = work.job.as_mut() else { break };
            if job.is_done() {
                work.job = None;
                self.counters.job_active.store(false, Ordering::Release);
                break;
            }
            let stepped = job.step(&mut work.tree, (pages - done).max(1));
            let stepped = match stepped.and_then(|s| self.publish(work, s)) {
                Ok(pages) => pages,
                Err(e) => return Err(self.job_failed(work, e)),
            };
            done += stepped;
            self.counters.job_pages.fetch_add(stepped, Ordering::Relaxed);
        }
        if work.job.as_ref().is_some_and(FlushJob::is_done) {
            work.job = None;
            self.counters.job_active.store(false, Ordering::Release);
        }
        if work.job.is_none()
            && self.recovered_mid_job.load(Ordering::Acquire)
            && crate::verify::sizes_hold(&work.tree, self.fanout, self.sigma_bytes).is_ok()
        {
            self.recovered_mid_job.store(false, Ordering::Release);
        }
        Ok(done)
    }

    /// A writer's help (`Deamortization::Background`): up to `pages` pages of entries of
    /// the rewrite in progress, never a sync or a commit (those stay with the thread, so a
    /// writer never waits for the device).
    fn help(&self, work: &mut Work, pages: u64) -> Result<u64> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(0);
        }
        let Some(job) = work.job.as_mut() else { return Ok(0) };
        match job.step_as(&mut work.tree, pages, true) {
            Ok(stepped) => {
                debug_assert!(stepped.event == Event::None && stepped.obsolete.is_empty());
                self.counters.job_pages.fetch_add(stepped.pages, Ordering::Relaxed);
                Ok(stepped.pages)
            }
            Err(e) => Err(self.job_failed(work, e)),
        }
    }

    fn job_failed(&self, work: &mut Work, e: Error) -> Error {
        let job = work.job.take().expect("a job failed");
        let frozen = job.frozen().cloned();
        job.abandon();
        self.counters.job_active.store(false, Ordering::Release);
        let version = self.published.read().version.clone();
        // D-trees written since the last publish are in no committed state: remove them.
        let published: std::collections::BTreeSet<u64> =
            version.stree.dtrees().map(|d| d.id()).collect();
        for dtree in work.tree.dtrees().filter(|d| !published.contains(&d.id())) {
            dtree.remove_when_unused();
        }
        work.tree = (*version.stree).clone();
        if let Some(frozen) = frozen.filter(|_| version.frozen.is_some()) {
            work.restart = Some(frozen);
            self.counters.restart_pending.store(true, Ordering::Release);
        }
        self.record_failure(e)
    }

    /// Commits and publishes what a step changed; returns its pages.
    fn publish(&self, work: &mut Work, stepped: Stepped) -> Result<u64> {
        let Stepped { pages, event, obsolete } = stepped;
        if event == Event::None {
            debug_assert!(obsolete.is_empty());
            return Ok(pages);
        }
        let root_flushed = event == Event::RootFlushed;
        let flushed_seq = if root_flushed { work.frozen_seq } else { work.flushed_seq };
        if let Some(persist) = work.persist.as_mut() {
            let manifest = manifest_of(
                &work.tree,
                self.fanout as u32,
                self.sigma_bytes,
                self.context.next_id.load(Ordering::Relaxed),
                flushed_seq,
            );
            persist.commit(if root_flushed { self.log.as_ref() } else { None }, &manifest)?;
            self.counters.commits.fetch_add(1, Ordering::Relaxed);
        }
        work.flushed_seq = flushed_seq;
        {
            let mut published = self.published.write();
            let frozen = if root_flushed { None } else { published.version.frozen.clone() };
            published.version = Arc::new(Version { stree: Arc::new(work.tree.clone()), frozen });
        }
        for dtree in obsolete {
            dtree.remove_when_unused();
        }
        if root_flushed && let Some(log) = &self.log {
            log.truncate(flushed_seq)?;
        }
        if self.options.verify_each_flush {
            // Mid-job an s-node may have one child too many until the unwinding splits it.
            crate::verify::verify_tree(&work.tree, self.fanout, self.sigma_bytes, 1)?;
        }
        Ok(pages)
    }
}
