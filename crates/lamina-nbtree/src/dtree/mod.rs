//! D-trees (paper sections 3.1 and 4.1): immutable B+-trees of fanout `B`, one per s-node,
//! each in its own file written once, sequentially, leaves in key order.
//!
//! PLACEHOLDER: the contract the engine is written against; the implementation lands with
//! the d-tree format.

use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::Storage;

use crate::entry::Slot;

/// File name of d-tree `id`.
pub fn file_name(id: u64) -> String {
    format!("nb-{id:016x}.dt")
}

/// The d-tree id of a file name made by [`file_name`].
pub fn parse_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("nb-")?.strip_suffix(".dt")?;
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// How d-trees are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DTreeParams {
    /// Page size: every node is a whole number of pages.
    pub page_bytes: u32,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits_per_key: u32,
}

/// Writes one d-tree sequentially.
#[derive(Debug)]
pub struct DTreeWriter {}

impl DTreeWriter {
    /// Creates the file of d-tree `id` for at most `keys_max` entries.
    pub fn create(
        storage: Arc<dyn Storage>,
        id: u64,
        params: DTreeParams,
        keys_max: u64,
    ) -> Result<DTreeWriter> {
        let _ = (storage, id, params, keys_max);
        todo!()
    }
    /// Appends an entry (keys strictly ascending); full nodes are written at once.
    pub fn push(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let _ = (key, value);
        todo!()
    }
    /// Pages written so far.
    pub fn pages_written(&self) -> u64 {
        todo!()
    }
    /// Entries pushed.
    pub fn entries(&self) -> u64 {
        todo!()
    }
    /// Sum of the pushed entries' `entry_bytes`.
    pub fn bytes(&self) -> u64 {
        todo!()
    }
    /// After the last push: writes at most `pages_max` pages of what remains; true once all
    /// is written and synced.
    pub fn finish_step(&mut self, pages_max: u64) -> Result<bool> {
        let _ = pages_max;
        todo!()
    }
    /// The finished d-tree, open for reading.
    pub fn into_dtree(self) -> Result<Arc<DTree>> {
        todo!()
    }
    /// Removes the unfinished file.
    pub fn abandon(self) -> Result<()> {
        todo!()
    }
}

/// An open, finished d-tree.
#[derive(Debug)]
pub struct DTree {}

impl DTree {
    /// Opens d-tree `id`; a missing, short or damaged file is `Corruption` naming it.
    pub fn open(storage: Arc<dyn Storage>, id: u64) -> Result<Arc<DTree>> {
        let _ = (storage, id);
        todo!()
    }
    /// Its id.
    pub fn id(&self) -> u64 {
        todo!()
    }
    /// Entries.
    pub fn entries(&self) -> u64 {
        todo!()
    }
    /// Sum of the entries' `entry_bytes`.
    pub fn bytes(&self) -> u64 {
        todo!()
    }
    /// The file's length.
    pub fn file_bytes(&self) -> u64 {
        todo!()
    }
    /// Whether the Bloom filter lets `key` be present.
    pub fn may_contain(&self, key: &[u8]) -> bool {
        let _ = key;
        todo!()
    }
    /// The entry of `key`: `Some(Some(v))` a put, `Some(None)` a delete, `None` absent.
    pub fn get(&self, key: &[u8]) -> Result<Option<Slot>> {
        let _ = key;
        todo!()
    }
    /// Entries with keys at or after `from` (all: `None`), in key order.
    pub fn cursor(self: &Arc<Self>, from: Option<&[u8]>) -> Result<DTreeCursor> {
        let _ = from;
        todo!()
    }
    /// Remove the file once the last reference to this d-tree is dropped.
    pub fn remove_when_unused(&self) {
        todo!()
    }
    /// Reads and checks every node (order, counts, checksums, Bloom filter agrees).
    pub fn verify(&self) -> Result<()> {
        todo!()
    }
}

/// A forward cursor over a d-tree.
#[derive(Debug)]
pub struct DTreeCursor {}

impl DTreeCursor {
    /// The next entry.
    pub fn next_entry(&mut self) -> Result<Option<(Vec<u8>, Slot)>> {
        todo!()
    }
}
