//! Leaf splits (Algorithm 3, `SplitLeaf`) and their recovery (Algorithm 4, `RecoverSplit`),
//! with the split micro-log (`PCurrentLeaf`, `PNewLeaf`).

use lamina_core::Result;
use lamina_storage::pmem::PmemRegion;

use crate::leaf::{FULL_BITMAP, LEAF_SLOTS, Leaf, bits};
use crate::microlog::{LOG_A, LOG_B, log_pointer, reset_log, set_log_pointer};
use crate::store::{Store, bump};

impl<R: PmemRegion + ?Sized> Store<R> {
    /// Algorithm 3: splits the full, locked `leaf`. Returns the split key (the smallest key
    /// that moved) and the new leaf, which is linked after `leaf`, holds the upper half of the
    /// records, and is locked (version 1) until the caller has updated the inner nodes.
    pub(crate) fn split_leaf(&self, leaf: Leaf<'_, R>) -> Result<(Vec<u8>, u64)> {
        assert_eq!(leaf.bitmap(), FULL_BITMAP, "only a full leaf is split");
        let log = self.split_logs.take(); // line 1
        let region = self.region();
        set_log_pointer(region, log.line + LOG_A, self.file_id(), leaf.at)?; // lines 2-3
        let new_at = match self.new_leaf(log.line + LOG_B) {
            Ok(at) => at, // line 4 (allocation, or Algorithm 10's GetLeaf)
            Err(e) => {
                // Out of space: nothing changed but the log (Algorithm 4 line 5's reset).
                reset_log(region, log.line)?;
                return Err(e);
            }
        };
        let new = self.leaf(new_at); // line 5
        leaf.copy_to(&new, 1)?; // lines 6-7
        let (split_key, upper) = self.find_split_key(leaf)?; // line 8
        new.set_bitmap(upper)?; // lines 9-10
        self.finish_split(log.line, leaf, new)?; // lines 11-15
        bump(&self.counters.splits, 1);
        Ok((split_key, new_at))
    }

    /// Algorithm 3 lines 11-15: the old leaf keeps the complement of the new leaf's bitmap,
    /// points to the new leaf, and the log is reset. Adaptation (Appendix C's "a reference to
    /// a key exists only once"): the copied slot pointers that each leaf no longer uses are
    /// reset before the log, so every record blob is named by exactly one slot (inline
    /// records own nothing: their copies stay, invalid, as in the paper).
    fn finish_split(&self, line: u64, leaf: Leaf<'_, R>, new: Leaf<'_, R>) -> Result<()> {
        let upper = new.bitmap();
        leaf.set_bitmap(FULL_BITMAP & !upper)?; // lines 11-12
        leaf.set_next(self.pptr(new.at))?; // lines 13-14
        if !self.config.inline_records {
            new.clear_slot_pointers(FULL_BITMAP & !upper)?;
            leaf.clear_slot_pointers(upper)?;
        }
        reset_log(self.region(), line) // line 15
    }

    /// `FindSplitKey`: the upper half of the records by key (as a bitmap) and its smallest
    /// key.
    fn find_split_key(&self, leaf: Leaf<'_, R>) -> Result<(Vec<u8>, u64)> {
        let mut keyed = bits(leaf.bitmap())
            .map(|slot| Ok((self.key_in(leaf, slot)?, slot)))
            .collect::<Result<Vec<_>>>()?;
        keyed.sort_unstable();
        let half = LEAF_SLOTS / 2;
        let upper = keyed[half..].iter().fold(0u64, |bmp, (_, slot)| bmp | 1 << slot);
        Ok((keyed.swap_remove(half).0, upper))
    }

    /// Algorithm 4: finishes or undoes the split logged at `line`. Returns whether the log
    /// was in use.
    pub(crate) fn recover_split(&self, line: u64) -> Result<bool> {
        let region = self.region();
        let current = log_pointer(region, line + LOG_A)?;
        let new = log_pointer(region, line + LOG_B)?;
        let (Some(current), Some(new)) = (current, new) else {
            if current.is_some() || new.is_some() {
                // Crashed before the allocation (line 4), or while resetting the log.
                reset_log(region, line)?;
                return Ok(true);
            }
            return Ok(false);
        };
        let leaf = self.leaf_at(self.pptr(current))?;
        let new = self.leaf_at(self.pptr(new))?;
        if leaf.bitmap() == FULL_BITMAP {
            // Crashed before line 11: continue from line 6.
            leaf.copy_to(&new, 0)?;
            let (_, upper) = self.find_split_key(leaf)?;
            new.set_bitmap(upper)?;
        }
        // Crashed after line 11 (or just redone): continue from line 11.
        self.finish_split(line, leaf, new)?;
        Ok(true)
    }
}
