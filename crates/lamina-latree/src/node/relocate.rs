//! Relocation of an out-of-place node store to the other partition (LA-tree section 4.3:
//! "recursively copy the valid nodes to the other partition"; the tree's `reclaim.rs` drives
//! it).
//!
//! 1. [`NodeStore::relocate_begin`] makes an empty file the written partition: the node
//!    table starts empty there (head 0), and the old table becomes the *draining* map of ids
//!    whose latest copy is still in the old file. Reads find a node in the new partition
//!    first, else in the draining one; every write goes to the new partition and takes the
//!    id out of the draining map (so does freeing it).
//! 2. [`NodeStore::relocate_remaining`] copies each node still in the draining map (read,
//!    checked, written at the new head with a new write sequence number).
//! 3. [`NodeStore::relocate_end`] drops the old partition and returns its file for the
//!    caller to erase once nothing durable reaches it.
//!
//! Invariants: the draining map and the new table map disjoint ids (an id is in at most one
//! of them); nothing is ever written to the draining file; no checkpoint or snapshot is taken
//! while draining (asserted), so a checkpoint's table always names one partition.

use std::collections::HashMap;
use std::sync::Arc;

use lamina_core::{Error, Result};
use lamina_storage::StorageFile;

use super::layout::NodeId;
use super::page::encode_node;
use super::store::{NodeFile, NodeStore, Placement, read_node_at};
use super::table::NodeTable;

/// The partition being drained: its file and the ids whose latest copy is still there.
#[derive(Debug)]
pub(super) struct Draining {
    pub file: Arc<NodeFile>,
    pub slots: HashMap<NodeId, u64>,
}

impl NodeStore {
    /// Starts writing to `file` (empty, named `path`) and drains the current partition
    /// (module docs). Only an out-of-place store relocates.
    pub fn relocate_begin(
        &self,
        file: Arc<dyn StorageFile>,
        path: std::path::PathBuf,
    ) -> Result<()> {
        assert_eq!(self.options.placement, Placement::OutOfPlace, "only out of place relocates");
        let len = file.len()?;
        if len != 0 {
            let reason = format!("the partition to relocate to holds {len} bytes, not erased");
            return Err(Error::corruption(path, 0, reason));
        }
        let mut state = self.state.lock();
        assert!(state.draining.is_none(), "one relocation at a time");
        let old_table = state.table.replace(NodeTable::new(self.options.slots_max));
        let old_table = old_table.expect("an out-of-place store has a table");
        let slots =
            old_table.ids().into_iter().map(|id| (id, old_table.slot(id).unwrap())).collect();
        let old_file = std::mem::replace(&mut state.file, Arc::new(NodeFile { file, path }));
        state.draining = Some(Draining { file: old_file, slots });
        Ok(())
    }

    /// Copies every node still in the draining partition to the new one, in id order;
    /// returns how many. On error the nodes copied so far stay copied (the rest may be
    /// copied by a retry).
    pub fn relocate_remaining(&self) -> Result<u64> {
        let node_bytes = u64::from(self.options.layout.node_bytes());
        let mut copied = 0;
        loop {
            let mut state = self.state.lock();
            let draining = state.draining.as_ref().expect("relocating");
            let Some((&id, &slot)) = draining.slots.iter().min_by_key(|(id, _)| **id) else {
                return Ok(copied);
            };
            let old = draining.file.clone();
            let node = read_node_at(&old, slot * node_bytes, id, &self.options.layout)?;
            let table = state.table.as_ref().expect("an out-of-place store has a table");
            let new_slot = table.next_slot_for(id)?;
            let write_seq = state.write_seq + 1;
            let page = encode_node(&node, id, write_seq, &self.options.layout);
            state.file.file.write_all_at(new_slot * node_bytes, &page)?;
            state.write_seq = write_seq;
            state.stats.node_reads += 1;
            state.stats.node_writes += 1;
            state.stats.nodes_relocated += 1;
            state.table.as_mut().expect("a table").place(id, new_slot);
            state.draining.as_mut().expect("relocating").slots.remove(&id);
            copied += 1;
        }
    }

    /// Ends a relocation (every node copied): returns the drained partition's file and path.
    pub fn relocate_end(&self) -> (Arc<dyn StorageFile>, std::path::PathBuf) {
        let mut state = self.state.lock();
        let draining = state.draining.take().expect("relocating");
        assert!(draining.slots.is_empty(), "every node was copied before the end");
        (draining.file.file.clone(), draining.file.path.clone())
    }

    /// Whether a relocation is under way.
    pub fn is_relocating(&self) -> bool {
        self.state.lock().draining.is_some()
    }
}
