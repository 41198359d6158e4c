//! `verify()`: reads the whole tree and checks every invariant of section 2.1, (I1)-(I6),
//! plus what lookups and merges rely on: order within levels and runs, at most one data
//! entry per key and level, fence routing (every entry of a level is in the block that the
//! fence with the largest key `<= its key` in the level above points to), the bookkeeping
//! of each level (counts, index, Bloom filter), and the packing bound of `options.rs`. Reads
//! every block; meant for tests and debugging (`FdTreeOptions::verify_each_merge`).

use lamina_core::{Error, Result};

use crate::format::bloom::key_hash;
use crate::format::entry::{BlockPtr, Entry, EntryRef};
use crate::format::stats::LevelStats;
use crate::level::DiskLevel;
use crate::level::cursor::LevelCursor;
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
    /// Checks every invariant; returns the first violation found as an error. Not during
    /// a merge (the engine waits for merges first).
    pub fn verify(&self) -> Result<()> {
        if self.merge_in_progress() {
            return Err(Error::Unsupported {
                what: "verify during a merge (wait for merges first)".into(),
            });
        }
        let mut prev_label = 0;
        for l in self.levels.iter() {
            if l.label <= prev_label {
                return Err(violation(format!("level labels not increasing at {}", l.label)));
            }
            prev_label = l.label;
        }
        if self.levels.is_empty() != self.top.fences.is_empty() {
            return Err(violation("L_0 has fences without disk levels, or the reverse"));
        }
        for run in self.top.runs.iter() {
            let c = self.check_level(run, false, true)?;
            if c.entries.iter().any(|(_, e)| matches!(e, Entry::Fence { .. })) {
                return Err(violation(format!("run {} holds a fence", run.file_id)));
            }
        }
        let contents: Vec<LevelContent> = self
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| self.check_level(l, i + 1 == self.levels.len(), false))
            .collect::<Result<_>>()?;
        let top_fences: Vec<(Vec<u8>, BlockPtr)> =
            self.top.fences.iter().map(|(k, p)| (k.to_vec(), p)).collect();
        for (i, level) in self.levels.iter().enumerate() {
            let upper = if i == 0 { top_fences.clone() } else { fences_of(&contents[i - 1]) };
            check_routing(level, i + 1 == self.levels.len(), &upper, &contents[i])?;
        }
        self.check_sizes()?;
        let mut merged = LevelStats::default();
        for l in self.top.runs.iter().chain(self.levels.iter()) {
            merged.merge(&l.stats);
        }
        let c = crate::tree::Counters::of(&merged);
        // (I6) may fail between a merge and the underflow merge it makes due (a merge makes
        // the counts it writes exact), never without that merge being due.
        if c.underflows()
            && !self.merge_in_progress()
            && self.merge_due() != Some(crate::merge::Trigger::Underflow)
        {
            return Err(violation(format!(
                "(I6) N_nabla {} > N_delta {} / 3 and no underflow merge is due",
                c.deletes, c.inserts
            )));
        }
        Ok(())
    }

    /// Reads a level or run; checks order, (I2), bottom rules, and its counts, index and
    /// filter against what it holds.
    fn check_level(&self, level: &DiskLevel, bottom: bool, run: bool) -> Result<LevelContent> {
        let name =
            if run { format!("run {}", level.file_id) } else { format!("L_{}", level.label) };
        let file_len = level.file.len()?;
        if file_len != u64::from(level.blocks) * u64::from(self.params.block_bytes) {
            return Err(violation(format!("{name} file is {file_len} bytes long")));
        }
        let index = level.index.read();
        if index.blocks() != level.blocks {
            return Err(violation(format!("{name}: index of {} blocks", index.blocks())));
        }
        let mut stats = LevelStats::default();
        let mut content = LevelContent { entries: Vec::new(), first_keys: Vec::new() };
        let mut cursor = LevelCursor::new(level, &self.store, 0, 4);
        loop {
            let loaded = cursor.load_block()?;
            if loaded.is_empty() {
                break;
            }
            for &index_no in &loaded[..loaded.len() - 1] {
                // Passed over: blocks without entries.
                if level.blocks > 1 || !bottom {
                    return Err(violation(format!("{name} block {index_no} is empty")));
                }
                content.first_keys.push(Vec::new());
            }
            let block = *loaded.last().expect("one block loaded");
            if cursor.peek().is_none() {
                // The only block of a bottom level whose entries all cancelled.
                if level.blocks > 1 || !bottom {
                    return Err(violation(format!("{name} block {block} is empty")));
                }
                content.first_keys.push(Vec::new());
                continue;
            }
            let mut first = true;
            let mut fences = Vec::new();
            while let Some(e) = cursor.peek() {
                if first {
                    content.first_keys.push(e.key().to_vec());
                    match e {
                        EntryRef::Fence { key, .. }
                            if !run && !bottom && block == 0 && !key.is_empty() =>
                        {
                            return Err(violation(format!(
                                "(I2) {name} lacks the -infinity fence"
                            )));
                        }
                        EntryRef::Fence { .. } => {}
                        _ if !run && !bottom => {
                            return Err(violation(format!(
                                "(I2) {name} block {block} starts with data"
                            )));
                        }
                        _ => {}
                    }
                }
                if bottom && !matches!(e, EntryRef::Insert { .. }) {
                    return Err(violation(format!("bottom {name} holds a fence or delete")));
                }
                if e.is_data() && !index.bloom().may_contain_hash(key_hash(e.key())) {
                    return Err(violation(format!("{name}: the filter misses {:?}", e.key())));
                }
                if let EntryRef::Fence { key, ptr } = e {
                    fences.push((key.to_vec(), ptr));
                }
                stats.add(&e, first);
                first = false;
                content.entries.push((block, e.to_owned_entry()));
                cursor.advance()?;
            }
            let indexed: Vec<(Vec<u8>, BlockPtr)> =
                index.block_fences(block).map(|(k, p)| (k.to_vec(), p)).collect();
            if indexed != fences {
                return Err(violation(format!("{name} block {block}: index fences differ")));
            }
        }
        if content.first_keys.len() != level.blocks as usize {
            return Err(violation(format!(
                "{name}: {} of {} blocks read",
                content.first_keys.len(),
                level.blocks
            )));
        }
        if stats != level.stats {
            return Err(violation(format!(
                "{name} counts {stats:?} != recorded {:?}",
                level.stats
            )));
        }
        // Greedy packing keeps two consecutive blocks above cap_eff (see options.rs).
        let b = level.size_blocks(&self.params);
        if u64::from(level.blocks) > 2 * b + 1 {
            return Err(violation(format!("{name}: {} blocks for size {b}", level.blocks)));
        }
        Ok(content)
    }

    /// (I3), (I4), (I5). `L_0`'s size is its runs' and fences' (its memtables are bounded
    /// by memory); it may exceed `kappa_0` only while a merge is due.
    fn check_sizes(&self) -> Result<()> {
        let p = &self.params;
        let mut sizes = vec![(0, self.top_size_blocks())];
        sizes.extend(self.levels.iter().map(|l| (l.label, l.size_blocks(p))));
        for (i, &(label, b)) in sizes.iter().enumerate() {
            let due = label == 0 && self.merge_due().is_some();
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
