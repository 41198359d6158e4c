//! The superblock (issue 3, item 6): a crash-atomic way to commit an engine's root state.
//!
//! Two alternating slots, each one [`crate::block`] block (so each carries a CRC32C, owner and
//! slot number). Commit number `seq` goes to slot `seq % 2`, always the slot NOT holding the
//! current state, followed by `sync_data` (and, on the first commit into a new file,
//! `sync_dir`). A crash or torn write during a commit damages only the slot being written;
//! the other slot still holds the previous state, so recovery picks the valid slot with the
//! highest sequence number. Byte layout: `docs/format/superblock.md`.
//!
//! A torn *first* commit leaves one damaged slot and one empty slot, which recovery reports
//! as "nothing committed" ([`Superblock::current`] is `None`) together with the damaged slot
//! ([`Superblock::slots`]); the same picture arises if the only committed slot of a store
//! rots. An engine therefore makes its first commit when it creates a store, before anything
//! depends on it, and treats `None` with a damaged slot as corruption once it knows the store
//! existed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lamina_core::codec::Decode;
use lamina_core::{Error, Result};

use crate::backend::{OpenMode, Storage, StorageFile};
use crate::block::{Block, BlockType, payload_capacity, write_block};

/// Number of slots.
pub const SUPERBLOCK_SLOTS: u64 = 2;
/// Bytes of each slot's payload taken by the sequence number.
const SEQ_BYTES: usize = 8;

/// A committed state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// Commit number, from 1, +1 per commit.
    pub seq: u64,
    /// The engine's root state.
    pub payload: Vec<u8>,
}

/// What recovery found in one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlotState {
    /// Never written (zeros or past the end of the file).
    Empty,
    /// A valid commit.
    Valid {
        /// Its commit number.
        seq: u64,
    },
    /// Written but unreadable: torn or corrupt.
    Damaged {
        /// Why it was refused.
        reason: String,
    },
}

/// An open superblock file.
#[derive(Debug)]
pub struct Superblock {
    storage: Arc<dyn Storage>,
    file: Arc<dyn StorageFile>,
    path: PathBuf,
    owner: u64,
    block_bytes: usize,
    name_durable: bool,
    current: Option<Committed>,
    slots: [SlotState; 2],
}

impl Superblock {
    /// Opens (creating if missing) the superblock file `name`, recovering the latest valid
    /// commit. Fails with [`Error::Corruption`] if both slots are damaged.
    pub fn open(
        storage: Arc<dyn Storage>,
        name: &str,
        owner: u64,
        block_bytes: usize,
    ) -> Result<Self> {
        Block::new(block_bytes, BlockType::SUPERBLOCK, owner, 0, Vec::new())?; // checks the size
        let name_durable = storage.exists(name)?;
        let file = storage.open(name, OpenMode::Create)?;
        let path = storage.path_of(name);
        let len = file.len()?;
        let mut slots = [SlotState::Empty, SlotState::Empty];
        let mut current: Option<Committed> = None;
        for slot in 0..SUPERBLOCK_SLOTS {
            let (state, committed) = read_slot(&*file, len, owner, block_bytes, slot)?;
            if let Some(c) = committed
                && current.as_ref().is_none_or(|cur| c.seq > cur.seq)
            {
                current = Some(c);
            }
            slots[slot as usize] = state;
        }
        if let [SlotState::Damaged { reason: a }, SlotState::Damaged { reason: b }] = &slots {
            return Err(Error::corruption(
                &path,
                0,
                format!("both superblock slots are damaged: slot 0: {a}; slot 1: {b}"),
            ));
        }
        Ok(Superblock { storage, file, path, owner, block_bytes, name_durable, current, slots })
    }

    /// The latest committed state, if any.
    pub fn current(&self) -> Option<&Committed> {
        self.current.as_ref()
    }

    /// What recovery found in each slot (updated by commits).
    pub fn slots(&self) -> &[SlotState; 2] {
        &self.slots
    }

    /// Largest payload a commit accepts.
    pub fn payload_capacity(&self) -> usize {
        payload_capacity(self.block_bytes) - SEQ_BYTES
    }

    /// The file's path, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Durably commits `payload` as the new state; returns its sequence number. When this
    /// returns `Ok`, recovery yields this state (or a later one). On error the current state
    /// is unchanged (the slot being written may be damaged; the next commit rewrites it).
    pub fn commit(&mut self, payload: &[u8]) -> Result<u64> {
        if payload.len() > self.payload_capacity() {
            return Err(Error::option(
                "superblock payload",
                format!("{} bytes over the capacity of {}", payload.len(), self.payload_capacity()),
            ));
        }
        let seq = self.current.as_ref().map_or(1, |c| c.seq + 1);
        let slot = seq % SUPERBLOCK_SLOTS;
        let mut body = Vec::with_capacity(SEQ_BYTES + payload.len());
        body.extend_from_slice(&seq.to_le_bytes());
        body.extend_from_slice(payload);
        let block = Block::new(self.block_bytes, BlockType::SUPERBLOCK, self.owner, slot, body)?;
        self.slots[slot as usize] = SlotState::Damaged { reason: "commit in progress".into() };
        write_block(&*self.file, &block)?;
        self.file.sync_data()?;
        if !self.name_durable {
            self.storage.sync_dir()?;
            self.name_durable = true;
        }
        self.slots[slot as usize] = SlotState::Valid { seq };
        self.current = Some(Committed { seq, payload: payload.to_vec() });
        Ok(seq)
    }
}

/// Reads and classifies one slot.
fn read_slot(
    file: &dyn StorageFile,
    file_len: u64,
    owner: u64,
    block_bytes: usize,
    slot: u64,
) -> Result<(SlotState, Option<Committed>)> {
    let start = slot * block_bytes as u64;
    let available = file_len.saturating_sub(start).min(block_bytes as u64) as usize;
    if available == 0 {
        return Ok((SlotState::Empty, None));
    }
    let mut buf = vec![0u8; block_bytes];
    file.read_exact_at(start, &mut buf[..available])?;
    if buf.iter().all(|&b| b == 0) {
        return Ok((SlotState::Empty, None));
    }
    let damaged = |reason: String| Ok((SlotState::Damaged { reason }, None));
    let block = match Block::decode(&buf) {
        Ok(block) => block,
        Err(e) => return damaged(e.to_string()),
    };
    if let Err(reason) = block.expect(BlockType::SUPERBLOCK, owner, slot) {
        return damaged(reason);
    }
    if block.payload.len() < SEQ_BYTES {
        return damaged("slot payload shorter than its sequence number".into());
    }
    let seq = u64::from_le_bytes(block.payload[..SEQ_BYTES].try_into().expect("8 bytes"));
    if seq == 0 || seq % SUPERBLOCK_SLOTS != slot {
        return damaged(format!("sequence number {seq} does not belong in slot {slot}"));
    }
    let payload = block.payload[SEQ_BYTES..].to_vec();
    Ok((SlotState::Valid { seq }, Some(Committed { seq, payload })))
}
