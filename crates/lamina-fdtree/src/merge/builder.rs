//! The new levels of merge-execute (section 2.3) and the bottom-up fence propagation with
//! `p_last` (Algorithm 1, lines 35-40).
//!
//! The new levels are the writers, in label order (the last one is `L_m_new`, which receives
//! the data). FD+XM and FD+DS write every label `1..=m`; FD+FC writes only the labels
//! merge-prepare's preemptive level skipping keeps (section 4.4.1), so the fences of a new
//! block go to the next *written* level above, and from the first one to `L_0_new`.

use lamina_core::{Error, Result};

use crate::format::entry::{BlockPtr, EntryRef};
use crate::level::LevelWriter;

/// The new levels being written, with `p_last`.
#[derive(Debug)]
pub(crate) struct Builder {
    pub(crate) writers: Vec<LevelWriter>,
    /// Fences for `L_0_new` produced since they were last taken (FD+FC hands them to the
    /// tree at each m-delete).
    pub(crate) top_fences: Vec<(Vec<u8>, BlockPtr)>,
    pub(crate) p_last: Option<BlockPtr>,
    /// `L_m_new` is the new bottom level (a full merge): it has no fences.
    pub(crate) bottom: bool,
}

impl Builder {
    /// Adds the records of one key (at most a fence and a data entry) to `L_m_new` and
    /// propagates fences up, bottom-up: a block that a key group does not fit is ended, and
    /// the new one starts with a fence (the group's own, or `(key, p_last)`, (I2)) and gets
    /// a fence in the level above, which may start a new block in turn.
    pub(crate) fn append(
        &mut self,
        key: &[u8],
        records: &[EntryRef<'_>],
        corrupt: &dyn Fn(String) -> Error,
    ) -> Result<()> {
        let last = self.writers.len();
        let mut level = last;
        let mut fence_above;
        let mut records = records;
        loop {
            if level == 0 {
                for r in records {
                    match *r {
                        EntryRef::Fence { key, ptr } => self.top_fences.push((key.to_vec(), ptr)),
                        _ => unreachable!("merge-execute puts only fences into L_0_new"),
                    }
                }
                return Ok(());
            }
            let w = &mut self.writers[level - 1];
            if w.fits(records.iter().map(EntryRef::encoded_len)) {
                for r in records {
                    w.push(*r);
                }
                return Ok(());
            }
            if !w.started() && !key.is_empty() {
                return Err(corrupt("merged levels lack the -infinity fence (I2)".into()));
            }
            let (leading, rest) = match records.split_first() {
                Some((f @ EntryRef::Fence { .. }, rest)) => (Some(*f), rest),
                _ if level == last && self.bottom => (None, records), // the bottom has no fences
                _ => {
                    let ptr = self.p_last.ok_or_else(|| corrupt("no p_last fence".into()))?;
                    (Some(EntryRef::Fence { key, ptr }), records)
                }
            };
            // A new block: unreachable until the fence to it is added above, so it is
            // filled without a latch (section 4.4.2). The options make a group fit an
            // empty block.
            let ptr = w.start_block(leading)?;
            for r in rest {
                debug_assert!(w.fits([r.encoded_len()]), "a key group fits an empty block");
                w.push(*r);
            }
            fence_above = [EntryRef::Fence { key, ptr }];
            records = &fence_above;
            level -= 1;
        }
    }
}
