//! The new levels of merge-execute (section 2.3) and the bottom-up fence propagation with
//! `p_last` (Algorithm 1, lines 35-40).
//!
//! The new levels are the writers, in label order (the last one is `L_m_new`, which receives
//! the data). FD+XM and FD+DS write every label `1..=m`; FD+FC writes only the labels
//! merge-prepare's preemptive level skipping keeps (section 4.4.1), so the fences of a new
//! block go to the next *written* level above, and from the first one to `L_0_new`.

use lamina_core::{Error, Result};

use super::writer::LevelWriter;
use crate::entry::{BlockPtr, Entry};
use crate::store::BlockStore;
use crate::top::TopLevel;

/// The new levels being written, with `p_last`.
pub(crate) struct Builder {
    pub(crate) writers: Vec<LevelWriter>,
    /// Fences for `L_0_new` produced so far (FD+FC hands them to the tree at each m-delete).
    pub(crate) top: TopLevel,
    pub(crate) p_last: Option<BlockPtr>,
    /// `L_m_new` is the new bottom level (a full merge): it has no fences.
    pub(crate) bottom: bool,
}

impl Builder {
    /// Adds the records of one key to `L_m_new` and propagates fences up (bottom-up). Each
    /// level's block is written under its latch, released before the level above (4.4.2).
    pub(crate) fn append(
        &mut self,
        store: &BlockStore,
        key: &[u8],
        mut records: Vec<Entry>,
        corrupt: &dyn Fn(String) -> Error,
    ) -> Result<()> {
        let last = self.writers.len();
        let mut level = last;
        loop {
            if level == 0 {
                for r in records {
                    match r {
                        Entry::Fence { key, ptr } => self.top.add_fence(key, ptr),
                        _ => unreachable!("merge-execute puts only fences into L_0_new"),
                    }
                }
                return Ok(());
            }
            let w = &mut self.writers[level - 1];
            let bytes = records.iter().map(Entry::encoded_len).sum();
            if w.fits(bytes) {
                w.push_group(records);
                return Ok(());
            }
            if !w.started() && !key.is_empty() {
                return Err(corrupt("merged levels lack the -infinity fence (I2)".into()));
            }
            let mut it = records.into_iter().peekable();
            let leading = if matches!(it.peek(), Some(Entry::Fence { .. })) {
                it.next()
            } else if level == last && self.bottom {
                None // the bottom level has no fences
            } else {
                let ptr = self.p_last.ok_or_else(|| corrupt("no p_last fence".into()))?;
                Some(Entry::Fence { key: key.to_vec(), ptr })
            };
            // A new block: unreachable until the fence below is added above, so it is
            // filled without a latch.
            let ptr = w.start_block(store, leading)?;
            for r in it {
                w.push(r);
            }
            records = vec![Entry::Fence { key: key.to_vec(), ptr }];
            level -= 1;
        }
    }
}
