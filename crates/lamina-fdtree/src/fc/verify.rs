//! (I7) between two stages of an FD+FC merge (tests hold the merge thread there).

use lamina_core::{Error, Result};

use crate::tree::Tree;

fn violation(what: impl Into<String>) -> Error {
    Error::corruption("fdtree (verify wavefront)", 0, what)
}

impl Tree {
    /// Checks what (I7) and Remark A.5 say of a merge in progress, between two stages:
    /// every reclaimed old block's successor starts at or before the wavefront (so no key
    /// beyond it needs a reclaimed block), `L_0^old` keeps only fences beyond the wavefront,
    /// and the data level's written blocks start at or before it (lookups behind the
    /// wavefront find everything on disk).
    pub fn verify_wavefront(&self) -> Result<()> {
        let Some(fc) = &self.fc else { return Err(violation("no merge in progress")) };
        let w = fc.wavefront_key.as_deref();
        // Keys beyond the wavefront (every key, at `-infinity`).
        let beyond = |k: &[u8]| w.is_none_or(|w| k > w);
        for source in fc.old_sources() {
            let head = source.latches.head();
            if head == 0 {
                continue;
            }
            let ix = source.index.read();
            if head < ix.blocks() {
                let next = ix.block_first_key(head).unwrap_or_default();
                if beyond(next) {
                    return Err(violation(format!(
                        "file {}: block {} reclaimed, but its successor starts at {next:?}, \
                         beyond the wavefront {w:?}",
                        source.file_id,
                        head - 1
                    )));
                }
            }
        }
        if let Some((k, _)) = fc.old_fences.iter().next()
            && !beyond(k)
        {
            return Err(violation(format!("L_0^old keeps fence {k:?} behind the wavefront")));
        }
        let data = self.levels.iter().find(|l| l.holds_data);
        if let Some(level) = data {
            let ix = level.index.read();
            if let Some(last) = ix.blocks().checked_sub(1)
                && ix.block_first_key(last).is_some_and(beyond)
                && w.is_some()
            {
                return Err(violation(
                    "a written block of the data level starts beyond the wavefront",
                ));
            }
        }
        Ok(())
    }

    /// Blocks of the old levels and runs an FD+FC merge in progress has reclaimed so far.
    pub fn reclaimed_old_blocks(&self) -> u64 {
        self.fc.as_ref().map_or(0, |fc| {
            fc.old_sources().map(|l| u64::from(l.latches.head().min(l.blocks))).sum()
        })
    }

    /// Disk levels a lookup may pass: behind the wavefront (or with no merge) and beyond it.
    pub fn lookup_paths_levels(&self) -> (usize, usize) {
        (self.levels.len(), self.fc.as_ref().map_or(0, |fc| fc.old_levels.len()))
    }
}
