//! Lookup, exactly as section 2.2 / Algorithm 2: top-down through the materialized levels,
//! stopping at the first level holding a data entry for the key; otherwise follow the fence
//! with the largest key `<= key` (found in the same block, footnote 4) to the next
//! materialized level. At most one block read per materialized disk level.

use lamina_core::Result;

use crate::entry::Entry;
use crate::tree::Tree;

impl Tree {
    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // L_0: cases 2/4 return the insert entry, case 3 reports "not found".
        if let Some(slot) = self.top.slot(key) {
            return Ok(slot.insert.clone());
        }
        let Some((_, mut ptr)) = self.top.fence_at_or_before(key) else {
            if let Some(first) = self.levels.first() {
                return Err(self.store.corruption(&*first.file, 0, "L_0 has no -infinity fence"));
            }
            return Ok(None); // h = 1: L_0 is the bottom level.
        };
        let last = self.levels.len().saturating_sub(1);
        for (i, level) in self.levels.iter().enumerate() {
            let block = level.read(&self.store, ptr)?;
            let data = block.data_for(key);
            if let Some(first) = data.first() {
                return Ok(match data.last() {
                    Some(Entry::Insert { value, .. }) => Some(value.clone()),
                    _ => {
                        debug_assert!(matches!(first, Entry::Delete { .. }));
                        None
                    }
                });
            }
            if i == last {
                return Ok(None); // case 1 in the bottom level
            }
            match block.fence_at_or_before(key) {
                Some(Entry::Fence { ptr: next, .. }) => ptr = *next,
                _ => {
                    return Err(self.store.corruption(
                        &*level.file,
                        ptr.index,
                        "block of a non-bottom level has no fence (I2)",
                    ));
                }
            }
        }
        Ok(None)
    }
}
