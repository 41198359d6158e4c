//! Recovery of an FD+FC merge in progress (Remark A.6): the committed state names the levels
//! as the merge started, `L_0^old`'s snapshot and the last progress record. The tree is
//! rebuilt as it was at that record's stage boundary (old levels from their first needed
//! block, `L_0^old` beyond the wavefront, the new levels' written blocks and in-memory
//! tails, the fences in `L_0^new`), the log after the merge start replays into `L_0^new`,
//! and the merge resumes from the wavefront.

use std::collections::BTreeSet;

use lamina_core::codec::Decode;
use lamina_core::{Error, Result};

use super::commit::MergeCommits;
use super::progress::MergeProgress;
use super::state::{FcPending, FcState};
use crate::level::DiskLevel;
use crate::manifest::Manifest;
use crate::merge::execute::Resumed;
use crate::merge::writer::LevelWriter;
use crate::store::progress_file_name;
use crate::top::TopLevel;
use crate::tree::Tree;

impl Tree {
    /// Rebuilds the merge in progress that `manifest` names (its levels and `L_0` snapshot
    /// are loaded already, as the merge's old levels and `L_0^old`). Adds the files it uses
    /// to `known`.
    pub(crate) fn recover_merge(
        &mut self,
        manifest: &Manifest,
        known: &mut BTreeSet<u32>,
    ) -> Result<()> {
        let storage = self.store.storage().clone();
        let name = progress_file_name(manifest.merge_file);
        let path = storage.path_of(&name);
        let bytes = storage.read_all(&name)?;
        let p = MergeProgress::decode(&bytes).map_err(|e| e.at(&path, 0))?;
        known.insert(manifest.merge_file);
        let bad = |reason: String| Error::corruption(&path, 0, reason);
        let m = usize::try_from(p.m).map_err(|_| bad("m".into()))?;
        // Old merged levels: blocks before their head are reclaimed (maybe punched).
        let merged: Vec<&DiskLevel> = self.levels.iter().filter(|l| l.label <= m).collect();
        if merged.len() != p.old_heads.len() {
            return Err(bad(format!(
                "{} old heads for {} merged levels",
                p.old_heads.len(),
                merged.len()
            )));
        }
        let mut old_heads = Vec::with_capacity(merged.len());
        for (level, &(file_id, head)) in merged.iter().zip(&p.old_heads) {
            if level.file_id != file_id || head >= level.blocks.max(1) {
                return Err(bad(format!(
                    "old head {file_id}:{head} for level file {}",
                    level.file_id
                )));
            }
            level.shared.set_recovered_head(head);
            old_heads.push(head);
        }
        // L_0^old: the snapshot minus what the merge processed (and its wavefront fence).
        // Before the first key group, the merge still reads all of it, -infinity fence too.
        let mut old_top = std::mem::take(&mut self.top);
        let old_top_entries = if p.started {
            old_top.remove_through(&p.wavefront_key);
            old_top.entries()
        } else {
            let all = old_top.entries();
            old_top.take_neg_infinity_fence();
            all
        };
        // The new levels, cut back to their written blocks, with their tails.
        let mut writers = Vec::with_capacity(p.new_levels.len());
        let mut prev_label = 0;
        for nl in &p.new_levels {
            let label = usize::try_from(nl.label).unwrap_or(usize::MAX);
            if label <= prev_label || nl.file_id >= manifest.next_file_id {
                return Err(bad(format!("new level {} in file {}", nl.label, nl.file_id)));
            }
            prev_label = label;
            let file = self.store.open_existing(nl.file_id)?;
            let needed = u64::from(nl.flushed_blocks) * u64::from(self.params.block_bytes);
            if file.len()? < needed {
                return Err(bad(format!(
                    "new level file {} shorter than its {} written blocks",
                    nl.file_id, nl.flushed_blocks
                )));
            }
            writers.push(LevelWriter::restore(&self.store, file, nl, self.params.payload_bytes)?);
            known.insert(nl.file_id);
        }
        if writers.is_empty() {
            return Err(bad("a merge without new levels".into()));
        }
        let mut top = TopLevel::new();
        for (key, ptr) in &p.top_fences {
            top.add_fence(key.clone(), *ptr);
        }
        let old_levels = self.levels.clone();
        let below = old_levels.iter().filter(|l| l.label > m).cloned();
        self.levels = writers.iter().map(LevelWriter::in_progress_level).chain(below).collect();
        self.top = top;
        self.fc = Some(FcState {
            old_top,
            wavefront_key: p.wavefront_key.clone(),
            wavefront_ptr: p.wavefront_ptr,
            old_levels: old_levels.clone(),
        });
        if let Some(persist) = self.persist.as_mut() {
            persist.merge_file = Some(manifest.merge_file);
        }
        let mut pending = FcPending {
            trigger: p.trigger,
            m,
            height_before: usize::try_from(p.height_before).unwrap_or(usize::MAX),
            old_levels,
            old_top_entries,
            writers,
            skipped_preemptively: p.skipped_preemptively,
            tightened_preemptively: p.tightened_preemptively,
            punch_reclaimed: false,
            resumed: Resumed {
                old_heads,
                wavefront_key: p.started.then(|| p.wavefront_key.clone()),
                p_last: p.p_last,
                cancellations: p.cancellations,
                cancelled_bytes: p.cancelled_bytes,
            },
            commits: None,
        };
        let base = Manifest { merge_file: 0, ..manifest.clone() };
        pending.commits =
            Some(MergeCommits::resumed(base, self.params.merge_commit_blocks, &pending));
        self.fc_resume = Some(pending);
        Ok(())
    }
}
