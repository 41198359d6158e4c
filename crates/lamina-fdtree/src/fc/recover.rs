//! Recovery of an FD+FC merge in progress (Remark A.6): the committed state names the levels,
//! `L_0`'s runs and fences as the merge began, the runs written since, and the last progress
//! record. The tree is rebuilt as it was at that record's stage boundary (old sources from
//! their first needed block, `L_0^old`'s fences beyond the wavefront, the new levels' written
//! blocks with their index rebuilt and their block being filled restored, the fences in
//! `L_0^new`), the log after `applied_seq` replays into the memtable, and the merge resumes.

use std::collections::BTreeSet;
use std::sync::Arc;

use lamina_core::codec::Decode;
use lamina_core::{Error, Result};

use super::progress::MergeProgress;
use super::state::{FcMerge, FcState};
use crate::level::{DiskLevel, LevelWriter, Visibility};
use crate::merge::run::Resumed;
use crate::persist::RecoveryCleanup;
use crate::persist::manifest::Manifest;
use crate::store::FileKind;
use crate::top::Fences;
use crate::tree::Tree;

impl Tree {
    /// Rebuilds the merge in progress that `manifest` names. The tree's levels and fences
    /// are loaded already (as the merge began); `old_runs` are `L_0^old`'s runs, `new_runs`
    /// the ones written since. Adds the files the merge uses to `known`.
    pub(crate) fn recover_fc_merge(
        &mut self,
        manifest: &Manifest,
        old_runs: Vec<DiskLevel>,
        new_runs: Vec<DiskLevel>,
        known: &mut BTreeSet<u32>,
        cleanup: &mut RecoveryCleanup,
    ) -> Result<()> {
        let path = self.store.path(manifest.merge_file, FileKind::Progress);
        let bytes = self.store.read_file(manifest.merge_file, FileKind::Progress)?;
        let p = MergeProgress::decode(&bytes).map_err(|e| e.at(&path, 0))?;
        let bad = |reason: String| Error::corruption(&path, 0, reason);
        let m = usize::try_from(p.m).map_err(|_| bad("m".into()))?;
        let old_levels: Arc<[DiskLevel]> = self.levels.clone();
        let merged: Vec<&DiskLevel> =
            old_runs.iter().chain(old_levels.iter().filter(|l| l.label <= m)).collect();
        if merged.len() != p.old_heads.len() {
            return Err(bad(format!(
                "{} old heads for {} merged runs and levels",
                p.old_heads.len(),
                merged.len()
            )));
        }
        let mut old_heads = Vec::with_capacity(merged.len());
        for (level, &(file_id, head)) in merged.iter().zip(&p.old_heads) {
            if level.file_id != file_id || head > level.blocks {
                return Err(bad(format!("old head {file_id}:{head} for file {}", level.file_id)));
            }
            level.latches.set_recovered_head(head);
            old_heads.push(head);
        }
        // L_0^old's fences: those beyond the wavefront (the -infinity one is the wavefront
        // fence).
        let mut old_fences = std::mem::take(&mut self.top.fences);
        let old_top_fences = old_fences.iter().map(|(k, p)| (k.to_vec(), p)).collect();
        match &p.wavefront_key {
            None => {
                old_fences.take_neg_infinity();
            }
            Some(w) => {
                old_fences.remove_through(w);
            }
        }
        let keys_max = merged.iter().map(|l| l.stats.data_entries()).sum();
        let mut writers = self.restore_new_levels(manifest, &p, &path, keys_max, known, cleanup)?;
        let map_bound = crate::merge::map_bytes_bound(merged.iter().copied(), &self.params);
        for w in &mut writers {
            w.map_ahead(map_bound);
        }
        if writers.is_empty() {
            return Err(bad("a merge without new levels".into()));
        }
        let mut top_fences = Fences::new();
        for (key, ptr) in &p.top_fences {
            top_fences.add(key, *ptr);
        }
        let below = old_levels.iter().filter(|l| l.label > m).cloned();
        self.levels = writers.iter().map(LevelWriter::view).chain(below).collect();
        self.top.fences = top_fences;
        self.top.runs = new_runs.into();
        let old_runs: Arc<[DiskLevel]> = old_runs.into();
        self.fc = Some(FcState {
            old_runs: old_runs.clone(),
            old_runs_filter: None,
            old_fences,
            wavefront_key: p.wavefront_key.clone(),
            wavefront_ptr: p.wavefront_ptr,
            old_levels: old_levels.clone(),
            m,
        });
        self.merge_file = manifest.merge_file;
        self.fc_resume = Some(FcMerge {
            trigger: p.trigger,
            m,
            height_before: usize::try_from(p.height_before).unwrap_or(usize::MAX),
            old_runs,
            old_top_fences,
            old_levels,
            writers,
            skipped_preemptively: p.skipped_preemptively,
            tightened_preemptively: p.tightened_preemptively,
            resumed: Resumed { old_heads, processed: p.processed, p_last: p.p_last },
            shadowed_before: p.shadowed,
        });
        Ok(())
    }

    /// The writers of the merge's new levels, continued from the progress record `p` (read
    /// from `path`).
    fn restore_new_levels(
        &self,
        manifest: &Manifest,
        p: &MergeProgress,
        path: &std::path::Path,
        keys_max: u64,
        known: &mut BTreeSet<u32>,
        cleanup: &mut RecoveryCleanup,
    ) -> Result<Vec<LevelWriter>> {
        let bad = |reason: String| Error::corruption(path, 0, reason);
        let mut writers = Vec::with_capacity(p.new_levels.len());
        let mut prev_label = 0;
        for (i, nl) in p.new_levels.iter().enumerate() {
            let label = usize::try_from(nl.label).unwrap_or(usize::MAX);
            if label <= prev_label
                || nl.file_id >= manifest.next_file_id
                || !known.insert(nl.file_id)
            {
                return Err(bad(format!("new level {} in file {}", nl.label, nl.file_id)));
            }
            prev_label = label;
            let data = i + 1 == p.new_levels.len();
            let file = self.store.open_existing(nl.file_id, FileKind::Level)?;
            let needed = u64::from(nl.written_blocks) * u64::from(self.params.block_bytes);
            if file.len()? < needed {
                return Err(Error::corruption(
                    self.store.path(nl.file_id, FileKind::Level),
                    file.len()?,
                    format!(
                        "shorter than the {} blocks the merge progress record {} says were \
                         written",
                        nl.written_blocks,
                        path.display()
                    ),
                ));
            }
            // Blocks after the written ones are cut off, and an index written before the
            // failure that ended the merge (the level was finished but the merge was not) is
            // removed: the resumed merge writes both again.
            cleanup.cut(file.clone(), needed);
            cleanup.remove(crate::store::file_name(nl.file_id, FileKind::Index));
            writers.push(LevelWriter::restore(
                &self.store,
                &self.params,
                label,
                nl.file_id,
                file,
                nl.written_blocks,
                nl.tail.as_deref(),
                if data { keys_max } else { 0 },
                if data { Visibility::Data } else { Visibility::Fences },
            )?);
        }
        Ok(writers)
    }
}
