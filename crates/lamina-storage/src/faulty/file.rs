//! `FaultyFile`: file operations, each recording how to undo itself until the next sync.

use std::sync::Arc;

use lamina_core::{Error, Result};

use super::state::{DataUndo, Fault, InodeId, Shared, UNDO_BYTES_MAX, crash_error};
use crate::backend::StorageFile;

/// An open file of a [`FaultyStorage`](crate::FaultyStorage).
#[derive(Debug)]
pub struct FaultyFile {
    pub(super) shared: Arc<Shared>,
    pub(super) inode: InodeId,
    pub(super) name: String,
}

impl StorageFile for FaultyFile {
    fn name(&self) -> &str {
        &self.name
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        let what = format!("reading {} bytes at {offset} of {}", buf.len(), self.name);
        shared.begin(&mut state, &what, None, false)?;
        let inode = &state.inodes[&self.inode];
        inode.file.read_exact_at(offset, buf)?;
        shared.accounting.on_read(inode.accounting_id, offset, buf.len());
        Ok(())
    }

    fn write_all_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        let what = format!("writing {} bytes at {offset} of {}", data.len(), self.name);
        let fault = shared.begin(&mut state, &what, Some((self.inode, offset, data)), true)?;
        crate::backend::check_range(&self.name, offset, data.len())?;
        if state.undo_bytes + data.len() as u64 > UNDO_BYTES_MAX {
            return Err(Error::NoSpace { context: format!("{what}: undo log full, sync first") });
        }
        let flipped;
        let mut stored = data;
        if matches!(fault, Fault::FlipBit) && !data.is_empty() {
            let bit = state.rng.below(data.len() as u64 * 8);
            let mut copy = data.to_vec();
            copy[(bit / 8) as usize] ^= 1 << (bit % 8);
            flipped = copy;
            stored = &flipped;
        }
        let inode = state.inodes.get_mut(&self.inode).expect("live inode");
        let old_len = inode.file.len()?;
        let end = offset + data.len() as u64;
        let mut old_bytes = vec![0u8; end.min(old_len).saturating_sub(offset) as usize];
        if !old_bytes.is_empty() {
            inode.file.read_exact_at(offset, &mut old_bytes)?;
        }
        let undo_len = old_bytes.len() as u64;
        let new_len = old_len.max(end);
        let range_len = data.len() as u64;
        inode.undo.push(DataUndo { old_len, new_len, offset, range_len, old_bytes });
        state.undo_bytes += undo_len;
        let inode = &state.inodes[&self.inode];
        inode.file.write_all_at(offset, stored)?;
        shared.accounting.on_write(inode.accounting_id, offset, data.len());
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        let state = self.shared.state.lock();
        if state.crashed {
            return Err(crash_error("reading a length"));
        }
        state.inodes[&self.inode].file.len()
    }

    fn set_len(&self, len: u64) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, &format!("resizing {} to {len}", self.name), None, true)?;
        crate::backend::check_range(&self.name, len, 0)?;
        let inode = state.inodes.get_mut(&self.inode).expect("live inode");
        let old_len = inode.file.len()?;
        let mut old_bytes = vec![0u8; old_len.saturating_sub(len) as usize];
        if !old_bytes.is_empty() {
            inode.file.read_exact_at(len, &mut old_bytes)?;
        }
        let undo_len = old_bytes.len() as u64;
        inode.undo.push(DataUndo {
            old_len,
            new_len: len,
            offset: len.min(old_len),
            range_len: len.abs_diff(old_len),
            old_bytes,
        });
        state.undo_bytes += undo_len;
        let inode = &state.inodes[&self.inode];
        inode.file.set_len(len)?;
        shared.accounting.on_set_len(inode.accounting_id, len);
        Ok(())
    }

    fn punch_hole(&self, offset: u64, len: u64) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        let what = format!("punching {len} bytes at {offset} of {}", self.name);
        shared.begin(&mut state, &what, None, true)?;
        crate::backend::check_punch_range(&self.name, offset, len)?;
        let inode = state.inodes.get_mut(&self.inode).expect("live inode");
        let Some((start, end)) = crate::backend::punch_span(offset, len, inode.file.len()?) else {
            return Ok(());
        };
        inode.file.punch_hole(start, end - start)?;
        // Durable at once (module docs): no undo record, and the older undo records must not
        // bring the punched bytes back, so their saved bytes in the range become zeros.
        for undo in &mut inode.undo {
            let saved_end = undo.offset + undo.old_bytes.len() as u64;
            let (from, to) = (start.max(undo.offset), end.min(saved_end));
            if from < to {
                let at = (from - undo.offset) as usize;
                undo.old_bytes[at..at + (to - from) as usize].fill(0);
            }
        }
        shared.accounting.on_punch(end - start);
        Ok(())
    }

    fn allocated_bytes(&self) -> Result<u64> {
        let state = self.shared.state.lock();
        if state.crashed {
            return Err(crash_error("reading an allocated size"));
        }
        state.inodes[&self.inode].file.allocated_bytes()
    }

    fn sync_data(&self) -> Result<()> {
        let shared = &self.shared;
        let mut state = shared.state.lock();
        shared.begin(&mut state, &format!("syncing {}", self.name), None, true)?;
        let inode = state.inodes.get_mut(&self.inode).expect("live inode");
        inode.file.sync_data()?;
        let freed: u64 = inode.undo.drain(..).map(|u| u.old_bytes.len() as u64).sum();
        state.undo_bytes -= freed;
        shared.accounting.on_sync();
        Ok(())
    }
}
