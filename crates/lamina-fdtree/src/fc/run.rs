//! FD+FC merge-execute (section 4.4.2): the main loop of m-stage, m-insert and m-delete,
//! run by the merge thread while lookups and modifications go on, its end, and
//! merge-finalize (section 4.4.3).
//!
//! The wavefront (I7) moves only as far as the data level is written: after each stage it
//! is set to the last key of the data level's last written block (`LevelWriter::
//! written_through`), not to the last key processed. Entries processed beyond it are
//! still found through `L_0^old` and the old levels, whose blocks are reclaimed only once the
//! wavefront has passed the first key of the next block (Remark A.5), so a lookup behind the
//! wavefront never needs the block the merge is filling in the data level, and that block
//! needs no latch (`level/writer.rs`).

use lamina_core::Result;
use lamina_core::codec::Encode;

use super::progress::{MergeProgress, NewLevelProgress};
use super::state::FcMerge;
use super::{FcHost, with_tree};
use crate::level::DiskLevel;
use crate::level::writer::RetryPolicy;
use crate::merge::run::MergeRun;
use crate::merge::side::{IntoTop, finalize_plan};
use crate::persist::fences;
use crate::store::{BlockStore, FileKind};
use crate::top::Fences;

/// An old block reclaimed by m-delete whose space is freed after the next progress commit.
#[derive(Debug)]
struct Reclaimed {
    level: DiskLevel,
    block: u32,
}

/// How a call of [`run_fc_merge`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MergeEnd {
    /// Merge-finalize ran: the merge is over.
    Finished,
    /// The engine is closing ([`FcHost::stopping`]): merge-execute stopped at a stage
    /// boundary and, for a persistent tree, committed its progress there (Remark A.6), so the
    /// reopened tree resumes the merge as after a crash. The tree stays between two stages,
    /// which lookups read correctly, for the close's own checkpoint.
    Paused,
}

/// Runs merge-execute and merge-finalize of the FD+FC merge `merge` (begun by
/// `Tree::begin_fc_merge`, or rebuilt by recovery), or merge-execute until the engine closes.
/// An error leaves the tree in its state between two stages, which lookups read correctly;
/// the engine then refuses modifications (a persistent tree recovers from its last commit
/// and log when reopened).
///
/// Closing does not wait for the merge's end: a merge into the bottom level of a 50M-key
/// tree has tens of seconds left at any moment (close took 35 s in `lamina bench
/// --experiment scale --ops 50000000`), and a progress record at the next stage boundary
/// costs one commit.
pub(crate) fn run_fc_merge(host: &dyn FcHost, merge: FcMerge) -> Result<MergeEnd> {
    let store = with_tree(host, |t| Ok(t.store.clone()))?;
    let (commit_bytes, block_bytes) =
        with_tree(host, |t| Ok((t.params.merge_commit_bytes, u64::from(t.params.block_bytes))))?;
    let persistent = host.persistent();
    let FcMerge {
        trigger,
        m,
        height_before,
        old_runs,
        old_top_fences,
        old_levels,
        mut writers,
        skipped_preemptively,
        tightened_preemptively,
        resumed,
        shadowed_before,
    } = merge;
    let policy = host.retry_policy();
    for w in &mut writers {
        w.set_retry(policy.clone());
    }
    let sources: Vec<DiskLevel> =
        old_runs.iter().chain(old_levels.iter().filter(|l| l.label <= m)).cloned().collect();
    let mut run =
        MergeRun::new(&store, &old_runs, old_top_fences, &old_levels, m, writers, &resumed)?;
    let full = run.full();
    let parts = ProgressParts {
        trigger,
        m,
        height_before,
        skipped_preemptively,
        tightened_preemptively,
        shadowed_before,
    };
    let mut pending: Vec<Reclaimed> = Vec::new();
    loop {
        // M-stage and m-insert (no tree lock: there is no other writer of these levels).
        let turn = host.cpu_turn();
        let done = run.run_stage();
        // Handed to a waiting flush thread, if any, rather than taken again at once.
        if let Some(turn) = turn {
            parking_lot::MutexGuard::unlock_fair(turn);
        }
        let done = done?;
        let wavefront = m_delete_top(host, &mut run)?;
        // M-delete, part 2: reclaim old head blocks by Remark A.5's rule: a block goes once
        // the wavefront has passed the first key of the block after it.
        if let Some(k) = wavefront {
            for (source, loaded) in sources.iter().zip(run.loaded_blocks().iter_mut()) {
                while loaded.len() >= 2 && loaded[1].1.as_slice() <= k.as_slice() {
                    let (block, _) = loaded.pop_front().expect("two blocks loaded");
                    source.latches.reclaim_through(block + 1);
                    if persistent {
                        pending.push(Reclaimed { level: source.clone(), block });
                    } else {
                        store.punch_blocks(&*source.file, block, 1)?;
                    }
                }
            }
        }
        host.progressed(super::state::reclaimed_fraction(&sources));
        if persistent && !done && pending.len() as u64 * block_bytes >= commit_bytes {
            commit_progress(host, &store, &mut run, &sources, &mut pending, parts)?;
        }
        host.hold_point();
        if done {
            break;
        }
        if host.stopping() {
            if persistent {
                commit_progress(host, &store, &mut run, &sources, &mut pending, parts)?;
                save_written_indexes(&run);
            }
            debug_assert!(!persistent || pending.is_empty(), "every reclaimed block is freed");
            return Ok(MergeEnd::Paused);
        }
    }
    let shadowed = shadowed_before + run.shadowed();
    let finished = finish(
        host,
        &store,
        run,
        &sources,
        FinishParts {
            trigger,
            m,
            height_before,
            full,
            shadowed,
            skipped_preemptively,
            tightened_preemptively,
        },
    );
    finished.map(|()| MergeEnd::Finished)
}

/// M-delete, part 1: under the `L_0` lock, publish the fences m-insert produced for
/// `L_0^new`, move the wavefront to the last key written to the data level (its pointer to
/// that of the last `L_0^old` fence passed) and drop `L_0^old`'s fences behind it. Returns
/// the wavefront key if it has left `-infinity`.
fn m_delete_top(host: &dyn FcHost, run: &mut MergeRun) -> Result<Option<Vec<u8>>> {
    let written = run.writers().last().and_then(|w| w.written_through()).map(<[u8]>::to_vec);
    let fences = run.take_top_fences();
    with_tree(host, |t| {
        for (key, ptr) in &fences {
            t.top.fences.add(key, *ptr);
        }
        let fc = t.fc.as_mut().expect("an FD+FC merge is in progress");
        if let Some(k) = &written
            && fc.wavefront_key.as_ref().is_none_or(|w| k > w)
        {
            if let Some(ptr) = fc.old_fences.remove_through(k) {
                fc.wavefront_ptr = Some(ptr);
            }
            fc.wavefront_key = Some(k.clone());
        }
        Ok(fc.wavefront_key.clone())
    })
}

/// The merge's identity in its progress records.
#[derive(Debug, Clone, Copy)]
struct ProgressParts {
    trigger: crate::merge::Trigger,
    m: usize,
    height_before: usize,
    skipped_preemptively: u64,
    tightened_preemptively: u64,
    shadowed_before: u64,
}

/// Commits a progress record for the state at this stage boundary (Remark A.6), then
/// frees the old blocks reclaimed before it: their entries are durable in the new levels
/// (synced first) or in the record.
fn commit_progress(
    host: &dyn FcHost,
    store: &BlockStore,
    run: &mut MergeRun,
    sources: &[DiskLevel],
    pending: &mut Vec<Reclaimed>,
    parts: ProgressParts,
) -> Result<()> {
    for w in run.writers_mut() {
        w.sync_written()?;
    }
    let policy = host.retry_policy();
    let mut record_id = 0;
    host.commit_after(&mut || {
        let record = with_tree(host, |t| {
            let fc = t.fc.as_ref().expect("an FD+FC merge is in progress");
            let record = MergeProgress {
                trigger: parts.trigger,
                m: parts.m as u64,
                height_before: parts.height_before as u64,
                skipped_preemptively: parts.skipped_preemptively,
                tightened_preemptively: parts.tightened_preemptively,
                wavefront_key: fc.wavefront_key.clone(),
                wavefront_ptr: fc.wavefront_ptr,
                processed: run.processed().map(<[u8]>::to_vec),
                p_last: run.p_last(),
                shadowed: parts.shadowed_before + run.shadowed(),
                old_heads: sources.iter().map(|l| l.file_id).zip(run.old_heads()).collect(),
                new_levels: run
                    .writers()
                    .iter()
                    .map(|w| NewLevelProgress {
                        label: w.label() as u64,
                        file_id: w.file_id(),
                        written_blocks: w.written_blocks(),
                        tail: w.started().then(|| w.tail_entries()),
                    })
                    .collect(),
                top_fences: t.top.fences.iter().map(|(k, p)| (k.to_vec(), p)).collect(),
            };
            record_id = t.alloc_file_id()?;
            Ok(record)
        })?;
        policy.run(|| store.write_file(record_id, FileKind::Progress, &record.encode()))?;
        with_tree(host, |t| {
            let previous = std::mem::replace(&mut t.merge_file, record_id);
            if previous != 0 {
                t.obsolete_files.push(previous);
            }
            Ok(())
        })
    })?;
    punch_reclaimed(store, &policy, pending)
}

/// At a pause, after its progress commit: saves each new level's index of its written
/// blocks, for the reopened tree to continue the levels without reading them
/// (`level/writer/resume.rs`). A speed-up only: a failure is logged and leaves the reopened
/// tree to rebuild the index from the blocks.
fn save_written_indexes(run: &MergeRun) {
    for w in run.writers() {
        if let Err(e) = w.save_written_index() {
            tracing::warn!(
                level = w.label(),
                file = w.file_id(),
                error = %e,
                "saving the index of a level a paused merge is writing; the next open \
                 rebuilds it"
            );
        }
    }
}

/// Frees the space of the reclaimed blocks `pending` holds, one punch per run of
/// consecutive blocks of one file, and empties it.
///
/// A punch is a synchronous discard on a file system mounted with `discard` (this
/// machine's ext4): punched one 32 KiB block at a time, the merge thread spent 16.4 s of
/// a 10M-insert `scale` run's 28 s in `fallocate` (112,017 calls, `perf trace -s`). Each
/// source's blocks are reclaimed in order, so a commit's worth is a few tens of ranges.
fn punch_reclaimed(
    store: &BlockStore,
    policy: &RetryPolicy,
    pending: &mut Vec<Reclaimed>,
) -> Result<()> {
    pending.sort_unstable_by_key(|r| (r.level.file_id, r.block));
    debug_assert!(
        pending
            .windows(2)
            .all(|w| (w[0].level.file_id, w[0].block) < (w[1].level.file_id, w[1].block)),
        "a block is reclaimed once"
    );
    for range in
        pending.chunk_by(|a, b| a.level.file_id == b.level.file_id && b.block == a.block + 1)
    {
        let count = u32::try_from(range.len()).expect("a level has fewer than 2^32 blocks");
        policy.run(|| store.punch_blocks(&*range[0].level.file, range[0].block, count))?;
    }
    pending.clear();
    Ok(())
}

/// The merge's outcome, for its report.
#[derive(Debug, Clone, Copy)]
struct FinishParts {
    trigger: crate::merge::Trigger,
    m: usize,
    height_before: usize,
    full: bool,
    shadowed: u64,
    skipped_preemptively: u64,
    tightened_preemptively: u64,
}

/// Ends merge-execute and runs merge-finalize, holding the commit lock so that no commit
/// sees the tree between the two: writes the last blocks; switches `L_0^old` out (its runs
/// and the old merged levels are no longer reachable), the finished new levels in, relabeled
/// by eq. 3, with `L_z` joining `L_0` (section 4.4.3: `L_0`'s fences are replaced by `L_z`'s,
/// or `L_z` becomes `L_0`'s oldest run); writes `L_0`'s fences; and commits.
fn finish(
    host: &dyn FcHost,
    store: &BlockStore,
    run: MergeRun,
    sources: &[DiskLevel],
    parts: FinishParts,
) -> Result<()> {
    let mut run = Some(run);
    let persistent = host.persistent();
    host.commit_after(&mut || {
        let executed = run.take().expect("finish runs once").finish()?;
        let (params, new_ids, succ_below, top_fence_bytes) = with_tree(host, |t| {
            let new_ids: Vec<u32> = executed.levels.iter().map(|l| l.file_id).collect();
            let succ_below = t
                .levels
                .iter()
                .find(|l| l.label > parts.m && !new_ids.contains(&l.file_id))
                .map(|l| l.size_blocks(&t.params));
            let mut bytes = t.top.fences.bytes();
            bytes += executed
                .top_fences
                .iter()
                .map(|(k, _)| crate::format::entry::fence_bytes(k.len()) as u64)
                .sum::<u64>();
            Ok((t.params.clone(), new_ids, succ_below, bytes))
        })?;
        let plan = finalize_plan(
            &params,
            store,
            top_fence_bytes,
            executed.levels.clone(),
            succ_below,
            executed.full,
        )?;
        // L_0's fences after the merge, and their file.
        let (fences, fences_id) = with_tree(host, |t| {
            let mut fences = match &plan.into_top {
                Some(IntoTop::Fences(lz)) => {
                    let mut f = Fences::new();
                    for (k, p) in lz {
                        f.add(k, *p);
                    }
                    f
                }
                Some(IntoTop::Run(_)) => Fences::new(),
                None => t.top.fences.clone(),
            };
            if plan.into_top.is_none() {
                for (k, p) in &executed.top_fences {
                    fences.add(k, *p);
                }
            }
            let id = if persistent && !fences.is_empty() { t.alloc_file_id()? } else { 0 };
            Ok((fences, id))
        })?;
        if fences_id != 0 {
            let encoded = fences::encode(&fences);
            host.retry_policy().run(|| store.write_file(fences_id, FileKind::Fences, &encoded))?;
        }
        let old_merged: Vec<DiskLevel> = sources.to_vec();
        let dropped = plan.dropped.clone();
        with_tree(host, |t| {
            let fc = t.fc.take().expect("an FD+FC merge is in progress");
            let below: Vec<DiskLevel> =
                t.levels.iter().filter(|l| !new_ids.contains(&l.file_id)).cloned().collect();
            t.levels = plan.kept.iter().cloned().chain(below).collect();
            t.top.fences = fences;
            if let Some(IntoTop::Run(Some(r))) = &plan.into_top {
                let runs: Vec<DiskLevel> = t.top.runs.iter().cloned().chain([r.clone()]).collect();
                t.top.runs = runs.into();
            }
            let obsolete = old_merged.iter().chain(&dropped).map(|l| l.file_id);
            t.obsolete_files.extend(obsolete);
            if t.fences_file != 0 {
                t.obsolete_files.push(t.fences_file);
            }
            t.fences_file = fences_id;
            if t.merge_file != 0 {
                t.obsolete_files.push(t.merge_file);
                t.merge_file = 0;
            }
            t.merges.levels_skipped += dropped.len() as u64 + parts.skipped_preemptively;
            t.merges.levels_tightened += plan.tightened + parts.tightened_preemptively;
            if parts.full {
                let h = t.height();
                t.merges.count_full(parts.height_before, h);
            }
            t.record_merge(
                parts.trigger,
                parts.m,
                parts.full,
                parts.height_before,
                plan.z,
                parts.shadowed,
            );
            drop(fc);
            Ok(())
        })?;
        // No new lookup can reach the replaced levels; ones in flight finish first.
        for l in old_merged.iter().chain(&dropped) {
            l.latches.reclaim_all();
            store.forget_file(l.file_id);
        }
        Ok(())
    })
}
