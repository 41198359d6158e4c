//! (I7) checked in the middle of an FD+FC merge (tests call it between stages): what is
//! behind the wavefront is found from `L_0^new`, what is beyond it from `L_0^old`, and the old
//! blocks still in place are the ones lookups beyond the wavefront may need (Remark A.5).

use lamina_core::{Error, Result};

use crate::tree::Tree;

fn violation(reason: String) -> Error {
    Error::corruption("fdtree (verify, I7)", 0, reason)
}

impl Tree {
    /// Checks the wavefront invariant of the FD+FC merge in progress (an error if there is
    /// none): every entry left in `L_0^old` is beyond the wavefront key; every fence in
    /// `L_0^new` and every entry the new levels hold (written blocks and tails) is behind or
    /// at it; in each old merged level, the first block not reclaimed is still needed (the
    /// block after it starts beyond the wavefront); the wavefront fence points to a block
    /// not reclaimed.
    pub fn verify_wavefront(&self) -> Result<()> {
        let fc = self.fc.as_ref().ok_or_else(|| violation("no merge in progress".into()))?;
        let w = fc.wavefront_key.as_slice();
        if let Some((k, _)) = fc.old_top.fences().next()
            && k.as_slice() <= w
        {
            return Err(violation(format!("L_0^old fence {k:?} behind the wavefront {w:?}")));
        }
        if let Some((k, _)) = fc.old_top.data_from(std::ops::Bound::Unbounded).next()
            && k.as_slice() <= w
        {
            return Err(violation(format!("L_0^old entry {k:?} behind the wavefront {w:?}")));
        }
        if let Some((k, _)) = self.top.fences().last()
            && k.as_slice() > w
        {
            return Err(violation(format!("L_0^new fence {k:?} beyond the wavefront {w:?}")));
        }
        let old_ids: Vec<u32> = fc.old_levels.iter().map(|l| l.file_id).collect();
        for level in self.levels.iter().filter(|l| !old_ids.contains(&l.file_id)) {
            for index in 0..level.block_count() {
                let block = level.read_index(&self.store, index)?;
                if let Some(e) = block.entries.last()
                    && e.key() > w
                {
                    return Err(violation(format!(
                        "new level {} block {index} holds {:?} beyond the wavefront {w:?}",
                        level.label,
                        e.key()
                    )));
                }
            }
        }
        for level in &fc.old_levels {
            let head = level.shared.head();
            if head >= level.blocks {
                continue; // below-merge levels and exhausted levels
            }
            if head + 1 < level.blocks {
                let next = level.read_index(&self.store, head + 1)?;
                if next.entries.first().is_some_and(|e| e.key() <= w) {
                    return Err(violation(format!(
                        "old level {} keeps block {head} though block {} starts behind the \
                         wavefront",
                        level.label,
                        head + 1
                    )));
                }
            }
        }
        if let (Some(ptr), Some(first)) = (fc.wavefront_ptr, fc.old_levels.first())
            && (ptr.file != first.file_id || ptr.index < first.shared.head())
        {
            return Err(violation(format!("wavefront fence points to {ptr:?}, reclaimed")));
        }
        Ok(())
    }
}
