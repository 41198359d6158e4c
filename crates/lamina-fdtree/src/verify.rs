//! `verify()`: walks the whole tree and checks every invariant of section 2.1, (I1)-(I6),
//! plus what lookups and merges rely on: order within levels, the four cases of section 2.2
//! per key and level, fence routing (every entry of a level is in the block that the fence
//! with the largest key `<= its key` in the level above points to), the bookkeeping of each
//! level, and the exact counters `N_delta`, `N_nabla` (every delete cancels exactly one
//! insert below it, Remark A.1). Reads every block; meant for tests and debugging.

use std::collections::BTreeMap;

use lamina_core::{Error, Result};

use crate::entry::{BlockPtr, Entry, insert_bytes};
use crate::level::{DiskLevel, LevelStats};
use crate::merge::coalesce;
use crate::tree::Tree;

fn violation(what: impl Into<String>) -> Error {
    Error::corruption("fdtree (verify)", 0, what)
}

/// The entries of one level with the index of the block holding each.
struct LevelContent {
    entries: Vec<(u32, Entry)>,
    first_keys: Vec<Vec<u8>>,
}

impl Tree {
    /// Checks every invariant; returns the first violation found as an error.
    pub fn verify(&self) -> Result<()> {
        if self.merge_in_progress() {
            return Err(Error::Unsupported {
                what: "verify during a background merge (wait for merges first)".into(),
            });
        }
        let h = self.height();
        let mut prev_label = 0;
        for l in &self.levels {
            if l.label <= prev_label {
                return Err(violation(format!("level labels not increasing at {}", l.label)));
            }
            prev_label = l.label;
        }
        // L_0: the four cases hold by construction of DataSlot; (I2) and bottom rules.
        let top_entries = self.top.entries();
        if h > 1 && self.top.fence_at_or_before(b"").is_none() {
            return Err(violation("(I2) L_0 lacks the -infinity fence"));
        }
        if h == 1 && (self.top.fence_count() > 0 || top_entries.iter().any(is_delete)) {
            return Err(violation("L_0 is the bottom level but holds fences or deletes"));
        }
        let contents: Vec<LevelContent> =
            self.levels.iter().map(|l| self.check_level(l)).collect::<Result<_>>()?;
        // Fence routing and (I1) between each pair of adjacent materialized levels.
        let top_fences: Vec<(Vec<u8>, BlockPtr)> =
            self.top.fences().map(|(k, p)| (k.clone(), *p)).collect();
        for (i, level) in self.levels.iter().enumerate() {
            let upper: Vec<(Vec<u8>, BlockPtr)> =
                if i == 0 { top_fences.clone() } else { fences_of(&contents[i - 1]) };
            let bottom = i + 1 == self.levels.len();
            check_routing(level, bottom, &upper, &contents[i])?;
        }
        self.check_sizes()?;
        self.check_counters(&top_entries, &contents)
    }

    /// Reads a level; checks order, (I2), bottom rules and the recorded statistics.
    fn check_level(&self, level: &DiskLevel) -> Result<LevelContent> {
        let bottom = self.levels.last().is_some_and(|b| b.label == level.label);
        let name = format!("L_{}", level.label);
        if level.blocks == 0 {
            return Err(violation(format!("{name} has no blocks")));
        }
        let file_len = level.file.len()?;
        if file_len != u64::from(level.blocks) * u64::from(self.params.block_bytes) {
            return Err(violation(format!("{name} file is {file_len} bytes long")));
        }
        let mut stats = LevelStats::default();
        let mut content = LevelContent { entries: Vec::new(), first_keys: Vec::new() };
        for index in 0..level.blocks {
            let block = self.store.read(&*level.file, level.file_id, index)?;
            match block.entries.first() {
                Some(Entry::Fence { key, .. }) if !bottom && index == 0 && !key.is_empty() => {
                    return Err(violation(format!("(I2) {name} lacks the -inf fence")));
                }
                Some(Entry::Fence { .. }) if !bottom => {}
                _ if !bottom => {
                    return Err(violation(format!("(I2) {name} block {index} starts with data")));
                }
                None if level.blocks > 1 => {
                    return Err(violation(format!("{name} block {index} is empty")));
                }
                _ => {}
            }
            content
                .first_keys
                .push(block.entries.first().map(|e| e.key().to_vec()).unwrap_or_default());
            for (pos, e) in block.entries.into_iter().enumerate() {
                if bottom && !matches!(e, Entry::Insert { .. }) {
                    return Err(violation(format!("bottom {name} holds a fence or delete")));
                }
                if let Some((_, prev)) = content.entries.last()
                    && prev.order(&e).is_ge()
                {
                    return Err(violation(format!("{name} out of order at block {index}")));
                }
                stats.add(&e, pos == 0 && !e.is_data());
                content.entries.push((index, e));
            }
        }
        if stats != level.stats {
            return Err(violation(format!(
                "{name} stats {:?} != recorded {:?}",
                stats, level.stats
            )));
        }
        // Greedy packing keeps two consecutive blocks above cap_eff (see options.rs).
        let b = level.size_blocks(&self.params);
        if u64::from(level.blocks) > 2 * b + 1 {
            return Err(violation(format!("{name}: {} blocks for size {b}", level.blocks)));
        }
        Ok(content)
    }

    /// (I3), (I4), (I5).
    fn check_sizes(&self) -> Result<()> {
        let p = &self.params;
        let mut sizes = vec![(0, self.top_size_blocks())];
        sizes.extend(self.levels.iter().map(|l| (l.label, l.size_blocks(p))));
        for (i, &(label, b)) in sizes.iter().enumerate() {
            // With background merges (FD+DS), L_0 over its trigger is the state right before a
            // due merge: modifications may arrive between the switch and the next merge, and
            // L_0^new's entries join the new L_0 at the switch. Writers wait while L_0^old and
            // L_0^new fill kappa_0, so L_0 stays bounded; (I3) is checked for the disk levels.
            let due = self.background_merges && label == 0 && self.background_merge_due().is_some();
            if b > p.kappa(label) && !due {
                return Err(violation(format!(
                    "(I3) B(L_{label}) = {b} > kappa = {}",
                    p.kappa(label)
                )));
            }
            if let Some(&(succ_label, succ_b)) = sizes.get(i + 1)
                && succ_b > p.kappa(label + 1)
            {
                return Err(violation(format!(
                    "(I5) B(L_{succ_label}) = {succ_b} > kappa_{} = {}",
                    label + 1,
                    p.kappa(label + 1)
                )));
            }
        }
        let h = self.height();
        if h > 2 {
            let bottom = sizes.last().expect("h > 2").1;
            if bottom <= p.kappa(h - 2) {
                return Err(violation(format!(
                    "(I4) B(L_{}) = {bottom} <= kappa_{}",
                    h - 1,
                    h - 2
                )));
            }
        }
        Ok(())
    }

    /// Exact counters, every delete cancelling one insert below, and (I6).
    fn check_counters(&self, top: &[Entry], levels: &[LevelContent]) -> Result<()> {
        let mut by_key: BTreeMap<&[u8], Vec<Vec<Entry>>> = BTreeMap::new();
        let depth = levels.len() + 1;
        let all = std::iter::once(top.iter().collect::<Vec<_>>())
            .chain(levels.iter().map(|c| c.entries.iter().map(|(_, e)| e).collect()));
        let (mut inserts, mut deletes, mut bytes) = (0u64, 0u64, 0u64);
        for (d, entries) in all.enumerate() {
            for e in entries {
                match e {
                    Entry::Fence { .. } => continue,
                    Entry::Delete { .. } => deletes += 1,
                    Entry::Insert { key, value } => {
                        inserts += 1;
                        bytes += insert_bytes(key.len(), value.len()) as u64;
                    }
                }
                by_key.entry(e.key()).or_insert_with(|| vec![Vec::new(); depth])[d].push(e.clone());
            }
        }
        let mut cancelled = 0;
        for (key, per_level) in &by_key {
            let net = coalesce(key, per_level.iter().rev().cloned())
                .map_err(|r| violation(format!("key {key:?}: {r}")))?;
            if net.delete {
                return Err(violation(format!("key {key:?}: a delete cancels nothing (A.1)")));
            }
            cancelled += net.cancelled_bytes;
        }
        let c = self.counters;
        if (c.inserts, c.deletes, c.insert_bytes, c.cancelled_bytes)
            != (inserts, deletes, bytes, cancelled)
        {
            return Err(violation(format!(
                "counters {c:?} != counted ({inserts}, {deletes}, {bytes}, {cancelled})"
            )));
        }
        // With background merges (FD+DS) a violation of (I6) makes an underflow merge due
        // (`Tree::background_merge_due`); modifications may arrive before it runs.
        if c.underflows() && !self.background_merges {
            return Err(violation(format!(
                "(I6) N_nabla {} > N_delta {} / 3",
                c.deletes, c.inserts
            )));
        }
        Ok(())
    }
}

fn is_delete(e: &Entry) -> bool {
    matches!(e, Entry::Delete { .. })
}

fn fences_of(c: &LevelContent) -> Vec<(Vec<u8>, BlockPtr)> {
    c.entries
        .iter()
        .filter_map(|(_, e)| match e {
            Entry::Fence { key, ptr } => Some((key.clone(), *ptr)),
            _ => None,
        })
        .collect()
}

/// (I1) and fence routing for `level` (`bottom`: it has no fences) given the fences of the
/// level above.
fn check_routing(
    level: &DiskLevel,
    bottom: bool,
    upper: &[(Vec<u8>, BlockPtr)],
    content: &LevelContent,
) -> Result<()> {
    let name = format!("L_{}", level.label);
    if upper.first().is_none_or(|(k, _)| !k.is_empty()) {
        return Err(violation(format!("no -infinity fence above {name}")));
    }
    let mut pointed = vec![false; level.blocks as usize];
    let mut prev_index = 0;
    for (key, ptr) in upper {
        if ptr.file != level.file_id || ptr.index >= level.blocks || ptr.index < prev_index {
            return Err(violation(format!("fence {key:?} -> {ptr:?} is not a block of {name}")));
        }
        prev_index = ptr.index;
        pointed[ptr.index as usize] = true;
        // A lookup routed here must find a fence <= its key in the block (footnote 4).
        if !bottom && content.first_keys[ptr.index as usize].as_slice() > key.as_slice() {
            return Err(violation(format!("fence {key:?} points past its key in {name}")));
        }
    }
    if let Some(i) = pointed.iter().position(|p| !p) {
        return Err(violation(format!("(I1) block {i} of {name} has no fence")));
    }
    let mut j = 0;
    for (block, e) in &content.entries {
        while j + 1 < upper.len() && upper[j + 1].0.as_slice() <= e.key() {
            j += 1;
        }
        if upper[j].1.index != *block {
            return Err(violation(format!(
                "entry {:?} of {name} is in block {block}, its fence routes to {}",
                e.key(),
                upper[j].1.index
            )));
        }
    }
    Ok(())
}
