//! Lookup, exactly as section 2.2 / Algorithm 2: top-down through the materialized levels,
//! stopping at the first level holding a data entry for the key; otherwise follow the fence
//! with the largest key `<= key` (found in the same block, footnote 4) to the next
//! materialized level. At most one block read per materialized disk level.

use lamina_core::Result;

use crate::probe::DataHit;
use crate::tree::Tree;

impl Tree {
    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // L_0: cases 2/4 return the insert entry, case 3 reports "not found".
        if let Some(slot) = self.top.slot(key) {
            return Ok(slot.insert.clone());
        }
        // FD+DS during a merge: L_0^new (above) is searched without following fences, then
        // L_0^old and through it the old levels (section 3).
        let fence_top = self.fence_top();
        if let Some(old) = &self.frozen_top
            && let Some(slot) = old.slot(key)
        {
            return Ok(slot.insert.clone());
        }
        let Some((_, mut ptr)) = fence_top.fence_at_or_before(key) else {
            if let Some(first) = self.levels.first() {
                return Err(self.store.corruption(&*first.file, 0, "L_0 has no -infinity fence"));
            }
            return Ok(None); // h = 1: L_0 is the bottom level.
        };
        let last = self.levels.len().saturating_sub(1);
        for (i, level) in self.levels.iter().enumerate() {
            let probe = level.probe(&self.store, ptr, key)?;
            match probe.data {
                DataHit::Insert(value) => return Ok(Some(value)),
                DataHit::Delete => return Ok(None),
                DataHit::None if i == last => return Ok(None), // case 1 in the bottom level
                DataHit::None => {}
            }
            ptr = probe.fence.ok_or_else(|| {
                self.store.corruption(
                    &*level.file,
                    ptr.index,
                    "block of a non-bottom level has no fence <= the key (I2)",
                )
            })?;
        }
        Ok(None)
    }
}
