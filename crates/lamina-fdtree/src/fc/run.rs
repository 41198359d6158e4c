//! FD+FC merge-execute (section 4.4.2): the main loop of m-stage, m-insert and m-delete,
//! run by the merge thread while lookups and modifications go on, and its end.

use lamina_core::{Error, Result};
use parking_lot::RwLock;

use super::state::FcPending;
use crate::latch::ExclusiveLatch;
use crate::level::DiskLevel;
use crate::merge::execute::MergeRun;
use crate::store::BlockStore;
use crate::tree::Tree;

/// What the merge needs from the engine around the tree.
pub(crate) struct FcHooks<'a> {
    /// The tree lock (the paper's `L_0` mutex).
    pub tree: &'a RwLock<Option<Tree>>,
    /// Held exclusively for each stage (scans hold it shared; see `fc/mod.rs`).
    pub gate: &'a RwLock<()>,
    /// Called after each m-delete: `L_0^old` shrank, so waiting modifications may proceed
    /// (dynamic memory sharing, section 4.2).
    pub progress: &'a dyn Fn(),
    /// Test hook, called after each stage with no lock held.
    pub after_stage: &'a dyn Fn(),
}

impl FcHooks<'_> {
    pub(crate) fn with_tree<R>(&self, f: impl FnOnce(&mut Tree) -> Result<R>) -> Result<R> {
        let mut guard = self.tree.write();
        f(guard.as_mut().ok_or(Error::Closed)?)
    }

    pub(crate) fn with_tree_read<R>(&self, f: impl FnOnce(&Tree) -> Result<R>) -> Result<R> {
        let guard = self.tree.read();
        f(guard.as_ref().ok_or(Error::Closed)?)
    }
}

/// Runs merge-execute and merge-finalize of the FD+FC merge `pending` (begun by
/// `Tree::begin_fc_merge`). An error leaves the tree in its state between two stages, which
/// lookups read correctly; the engine then refuses modifications until it is reopened
/// (a persistent tree recovers from its last commit and log).
pub(crate) fn run_fc_merge(hooks: &FcHooks<'_>, pending: FcPending) -> Result<()> {
    let FcPending {
        trigger,
        m,
        height_before,
        old_levels,
        old_top_entries,
        writers,
        skipped_preemptively,
        tightened_preemptively,
        punch_reclaimed,
        resumed,
        mut commits,
    } = pending;
    let store = hooks.with_tree(|t| Ok(t.store.clone()))?;
    let merged: Vec<&DiskLevel> = old_levels.iter().filter(|l| l.label <= m).collect();
    if let Some(c) = commits.as_mut()
        && c.start_pending()
    {
        c.set_start_snapshot(old_top_entries.clone());
    }
    let mut run = MergeRun::resume(&store, old_top_entries, &old_levels, m, writers, &resumed)?;
    let full = run.full();
    let mut wavefront: Vec<u8> = resumed.wavefront_key.clone().unwrap_or_default();
    loop {
        let gate = hooks.gate.write();
        // M-stage and m-insert (no tree lock: there is no other writer of these levels).
        let (last, done) = run.run_stage()?;
        m_delete_top(hooks, &mut run, last.as_ref(), &mut wavefront)?;
        // M-delete, part 2: reclaim old head blocks, top-down, by Remark A.5's rule: a
        // block goes once the first key of the block after it has been processed. The head
        // of every level is then x-latched and released before the level below is touched:
        // a lookup that entered the old levels before the wavefront moved may be on its way
        // from this level's head to the next level's head, and holds the head's latch until
        // it has the next one (Lemmas 6-8: m-delete follows the path of head blocks and so
        // cannot overtake it).
        for (level, loaded) in merged.iter().zip(run.loaded_blocks().iter_mut()) {
            while loaded.len() >= 2 && loaded[1].1.as_slice() <= wavefront.as_slice() {
                let (index, _) = loaded.pop_front().expect("two blocks loaded");
                reclaim_block(&store, level, index, punch_reclaimed)?;
                if let Some(c) = commits.as_mut() {
                    c.reclaimed(level.file.clone(), index); // freed after the next commit
                }
            }
            drop(level.shared.write(level.shared.head()));
        }
        drop(gate);
        if let Some(c) = commits.as_mut()
            && c.due()
            && !done
        {
            c.commit_progress(hooks, &store, &run)?;
        }
        (hooks.progress)();
        (hooks.after_stage)();
        if done {
            break;
        }
    }
    let gate = hooks.gate.write();
    let executed = run.finish()?;
    // Ending merge-execute: L_0^old (now empty) and its wavefront fence go, L_0^new is L_0;
    // the finished new levels (same latches) replace their in-progress views.
    hooks.with_tree(|t| {
        for (key, ptr) in executed.top.fences() {
            t.top.add_fence(key.clone(), *ptr);
        }
        for level in &executed.levels {
            if let Some(slot) = t.levels.iter_mut().find(|l| l.file_id == level.file_id) {
                *slot = level.clone();
            }
        }
        let fc = t.fc.take().expect("an FD+FC merge is in progress");
        assert!(fc.old_top.is_empty(), "merge-execute processed all of L_0^old");
        if !punch_reclaimed {
            t.obsolete_files.extend(merged.iter().map(|l| l.file_id));
        }
        Ok(())
    })?;
    // The chain of last old blocks: no new lookup can reach it; ongoing ones may still be
    // on it, so it is reclaimed top-down with latch coupling.
    reclaim_levels_top_down(&merged);
    if punch_reclaimed {
        for level in &merged {
            store.remove(level.file_id)?;
        }
    }
    drop(gate);
    let cancellations = executed.cancellations;
    let z = super::finalize::finalize_fc(
        hooks,
        &store,
        m,
        height_before,
        executed,
        skipped_preemptively,
        !punch_reclaimed,
    )?;
    hooks.with_tree(|t| {
        t.merges.levels_tightened += tightened_preemptively;
        t.record_merge(trigger, m, full, height_before, z, cancellations);
        Ok(())
    })
}

/// M-delete, part 1: under the `L_0` lock, publish the fences m-insert produced for
/// `L_0^new`, move the wavefront to the last key of the stage (its pointer to that of the
/// last `L_0^old` fence processed) and delete the processed entries of `L_0^old`.
fn m_delete_top(
    hooks: &FcHooks<'_>,
    run: &mut MergeRun<'_>,
    last: Option<&Vec<u8>>,
    wavefront: &mut Vec<u8>,
) -> Result<()> {
    hooks.with_tree(|t| {
        for (key, ptr) in run.take_top_fences().fences() {
            t.top.add_fence(key.clone(), *ptr);
        }
        let fc = t.fc.as_mut().expect("an FD+FC merge is in progress");
        if let Some(key) = last {
            // Only the first stage may end at -infinity (a block holding just that fence).
            assert!(key.as_slice() >= fc.wavefront_key.as_slice(), "the wavefront moves on");
            if let Some(ptr) = fc.old_top.remove_through(key) {
                fc.wavefront_ptr = Some(ptr);
            }
            fc.wavefront_key.clone_from(key);
            wavefront.clone_from(key);
        }
        Ok(())
    })
}

/// Reclaims head block `index` of an old level: exclusive latch (waits for lookups on it),
/// mark it reclaimed, release; then free its space (volatile trees).
fn reclaim_block(store: &BlockStore, level: &DiskLevel, index: u32, punch: bool) -> Result<()> {
    let latch = level.shared.write(index).ok_or_else(|| {
        store.corruption(&*level.file, index, "reclaiming a block that was never read")
    })?;
    level.shared.reclaim_head(index);
    drop(latch);
    if punch {
        store.punch_block(&*level.file, index)?;
    }
    Ok(())
}

/// Marks every remaining block of `levels` reclaimed, top-down: all exclusive latches of a
/// level are taken before those of the level above are released (tree-based locking in
/// the lookups' direction), so a lookup still inside is never overtaken.
pub(crate) fn reclaim_levels_top_down(levels: &[&DiskLevel]) {
    let mut held: Vec<ExclusiveLatch> = Vec::new();
    for level in levels {
        let shared = &level.shared;
        let mine: Vec<ExclusiveLatch> = (shared.head()..shared.published())
            .map(|index| shared.write(index).expect("a started block has a latch"))
            .collect();
        shared.reclaim_all();
        held = mine; // the level above is released only now
    }
    drop(held);
}
