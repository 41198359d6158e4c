//! FD+FC merge-finalize (section 4.4.3).
//!
//! For each written level, `o_i` is eq. 3's, except that a level may become `L_0` only if
//! it fits the `kappa_1` slots reserved in `L_0` (`Params::fence_reserve_bytes`): concurrent
//! modifications may have claimed the rest. `L_z` (`z = argmax_i (o_i = 0)`) does not replace
//! `L_0`, which holds the modifications made during the merge: under the `L_0` lock, every
//! fence is removed from `L_0` and `L_z`'s content is added (older than `L_0`'s entries, so
//! they are coalesced under them). Then `L_1..L_z` are deleted top-down, each block
//! exclusively latched before it goes, so no ongoing lookup meets a deleted block.

use lamina_core::{Error, Result};

use super::run::{FcHooks, reclaim_levels_top_down};
use crate::level::DiskLevel;
use crate::merge::execute::Executed;
use crate::merge::finalize::load_level_as_top;
use crate::merge::plan_relabel_labels;
use crate::store::BlockStore;

/// Applies merge-finalize; returns `z`.
pub(crate) fn finalize_fc(
    hooks: &FcHooks<'_>,
    store: &BlockStore,
    m: usize,
    height_before: usize,
    executed: Executed,
    skipped_preemptively: u64,
    persistent: bool,
) -> Result<usize> {
    let Executed { levels: mut new_levels, cancellations, cancelled_bytes, full, .. } = executed;
    let plan = hooks.with_tree_read(|t| {
        let p = &t.params;
        let mut labels = vec![0];
        labels.extend(new_levels.iter().map(|l| l.label));
        let mut sizes = vec![p.blocks_of(t.top.fence_bytes())];
        sizes.extend(new_levels.iter().map(|l| l.size_blocks(p)));
        let new_ids: Vec<u32> = new_levels.iter().map(|l| l.file_id).collect();
        let succ_below = t
            .levels
            .iter()
            .find(|l| l.label > m && !new_ids.contains(&l.file_id))
            .map(|l| l.size_blocks(p));
        let reserve = p.fence_reserve_bytes();
        let mut may_be_top = vec![true];
        may_be_top.extend(new_levels.iter().map(|l| l.stats.sized_bytes() <= reserve));
        Ok(plan_relabel_labels(&labels, &sizes, succ_below, full, p, &may_be_top))
    })?;
    // L_z is read before the L_0 lock is taken (no I/O under it).
    let lz =
        if plan.z > 0 { Some(load_level_as_top(store, &new_levels[plan.z - 1])?) } else { None };
    let mut kept: Vec<DiskLevel> = new_levels.split_off(plan.z);
    let dropped = new_levels;
    let tightened = plan.apply(&mut kept);
    hooks.with_tree(|t| {
        if let Some(mut top) = lz {
            t.top.remove_all_fences();
            let (n, bytes) = top.absorb_newer(std::mem::take(&mut t.top)).map_err(|r| {
                Error::corruption("fdtree L_0", 0, format!("adding L_z to L_0: {r}"))
            })?;
            t.counters.remove_cancelled(n, bytes);
            t.top = top;
        }
        let written: Vec<u32> = dropped.iter().chain(&kept).map(|l| l.file_id).collect();
        let below: Vec<DiskLevel> =
            t.levels.iter().filter(|l| !written.contains(&l.file_id)).cloned().collect();
        t.levels = kept.iter().cloned().chain(below).collect();
        t.counters.remove_cancelled(cancellations, cancelled_bytes);
        t.merges.levels_skipped += dropped.len() as u64 + skipped_preemptively;
        t.merges.levels_tightened += tightened;
        if full {
            let height_after = t.height();
            t.merges.count_full(height_before, height_after);
        }
        Ok(())
    })?;
    let refs: Vec<&DiskLevel> = dropped.iter().collect();
    reclaim_levels_top_down(&refs);
    if persistent {
        // The last progress record still names them: removed after the next commit.
        hooks.with_tree(|t| {
            t.obsolete_files.extend(dropped.iter().map(|l| l.file_id));
            Ok(())
        })?;
    } else {
        for level in &dropped {
            store.remove(level.file_id)?;
        }
    }
    Ok(plan.z)
}
