//! The node store: a file of `node_bytes` slots holding node pages, and the free node ids.
//!
//! Two placements (LA-tree section 4.3), chosen from the device profile by
//! [`Placement::for_device`]:
//! - **In place** (SSD profiles, `host`: the device's controller handles in-place updates):
//!   node id = slot; a node is rewritten where it is. No node table.
//! - **Out of place** (raw NAND, `nand-toshiba`, where rewriting a page in place is not
//!   possible): every write appends the node at the head of the partition and the
//!   [`NodeTable`] maps the id to its latest slot; older copies are dead. The tree reclaims
//!   the partition before it fills (section 4.3: empty the buffers, copy the live nodes to
//!   the other partition, [`super::relocate`]); a full partition fails writes with `NoSpace`.
//!
//! - **Copy-on-write in place** (SSD profiles when the tree is `crash_consistent`, the
//!   default): slots are rewritten in place, but never one the last committed checkpoint may
//!   reach. The node table (in copy-on-write mode, [`NodeTable::new_copy_on_write`]) maps
//!   ids to slots. The first write of a node after a checkpoint ([`NodeStore::checkpoint`])
//!   goes to the lowest free slot (else the end of the file) and its old slot is vacated;
//!   later writes before the next checkpoint rewrite that new slot in place (nothing durable
//!   reaches it). Vacated slots become free when the checkpoint after the one that stopped
//!   reaching them is durable ([`NodeStore::commit_durable`]), so a crash at any point
//!   between checkpoints finds every node of the committed checkpoint intact, and a steady
//!   workload of overwrites reuses a bounded set of slots. The paper has no crash
//!   consistency (section 4.3 rewrites in place); plain [`Placement::InPlace`] keeps that.
//!
//! Ids come from a [`FreeList`] in all placements: a freed id is handed out again only after
//! [`NodeStore::commit_durable`] (the state that freed it is durable), so an in-place slot is
//! never overwritten while a durable root may still reach it.
//!
//! Invariants: a node is read only under an allocated id, and its page must carry that id
//! (else `Corruption` naming the file and the page's offset); every write gets the next write
//! sequence number, so the latest copy of a node is the one with the highest.
//!
//! **A slot written after the committed state** (copy-on-write): a store opened from a
//! checkpoint reads, in a slot this process has not written, only pages written before that
//! checkpoint (write sequence number at most the checkpoint's). Anything newer means the
//! slot was freed by a later commit and written again, and that commit is gone: the
//! superblock lost its newest slot to damage (not to a crash, which leaves the older
//! commit's slots intact) and fell back to the older one. Such a read is `Corruption`, so
//! the older state is never served over pages of a newer one (`tests/lost_newest_commit.rs`;
//! the other page of a different node was already caught by the id check, a newer copy of
//! the same node was not). This process's own writes are known by a bitmap of slots.
//!
//! Concurrency: the state (ids, table, sequence numbers) is under one mutex, held across the
//! I/O of a write (so the table never names a slot whose write has not completed) but not of
//! a read.

use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::{Error, Result};
use lamina_storage::backend::{FILE_BYTES_MAX, io_error_kind};
use lamina_storage::device::CostModel;
use lamina_storage::{DeviceProfile, FreeList, OpenMode, Storage, StorageFile};
use parking_lot::Mutex;

use super::layout::{NodeId, NodeLayout};
use super::page::{DecodedNode, Node, decode_node, encode_node};
use super::snapshot::StoreSnapshot;
use super::table::{NodeTable, Rebuilt, rebuild};

/// Where a node's new version goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Rewritten at its own slot (node id = slot).
    InPlace,
    /// Appended at the partition's head, found through the node table.
    OutOfPlace,
    /// In place, but a node the last checkpoint reaches is first written to a free slot,
    /// found through the node table (crash consistent; module docs).
    CopyOnWrite,
}

impl Placement {
    /// Out of place on raw NAND (in-place writes are expensive or impossible), in place on
    /// block devices.
    pub fn for_device(device: &DeviceProfile) -> Self {
        match device.model {
            CostModel::Nand(_) => Placement::OutOfPlace,
            CostModel::Paged(_) | CostModel::Free => Placement::InPlace,
        }
    }

    /// The placement of a crash-consistent store: in place becomes copy-on-write (out of
    /// place never overwrites anything the node table of a checkpoint names).
    pub fn crash_consistent(self) -> Self {
        match self {
            Placement::InPlace | Placement::CopyOnWrite => Placement::CopyOnWrite,
            Placement::OutOfPlace => Placement::OutOfPlace,
        }
    }

    /// Whether the store keeps a node table.
    pub fn has_table(self) -> bool {
        self != Placement::InPlace
    }

    fn new_table(self, slots_max: u64) -> Option<NodeTable> {
        match self {
            Placement::InPlace => None,
            Placement::OutOfPlace => Some(NodeTable::new(slots_max)),
            Placement::CopyOnWrite => Some(NodeTable::new_copy_on_write(slots_max)),
        }
    }

    pub(super) fn to_byte(self) -> u8 {
        match self {
            Placement::InPlace => 1,
            Placement::OutOfPlace => 2,
            Placement::CopyOnWrite => 3,
        }
    }
}

/// How a node store is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeStoreOptions {
    /// The node size and entry limits.
    pub layout: NodeLayout,
    /// In place or out of place.
    pub placement: Placement,
    /// Slots of the file: in place, the most node ids; out of place, the partition's size
    /// (live nodes plus dead copies). At most the file size limit over the node size.
    pub slots_max: u64,
}

impl NodeStoreOptions {
    /// The layout and placement section 4 suggests for `device`, with the largest file.
    pub fn for_device(
        device: &DeviceProfile,
        key_bytes_max: usize,
        value_bytes_max: usize,
    ) -> Result<Self> {
        let layout = NodeLayout::for_device(device, key_bytes_max, value_bytes_max)?;
        let slots_max = FILE_BYTES_MAX / u64::from(layout.node_bytes());
        Ok(NodeStoreOptions { layout, placement: Placement::for_device(device), slots_max })
    }

    fn validate(&self) -> Result<()> {
        let limit = FILE_BYTES_MAX / u64::from(self.layout.node_bytes());
        if self.slots_max == 0 || self.slots_max > limit {
            return Err(Error::option(
                "slots_max",
                format!(
                    "{} is not in 1..={limit} for {}-byte nodes",
                    self.slots_max,
                    self.layout.node_bytes()
                ),
            ));
        }
        Ok(())
    }
}

/// Counters of a node store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeStoreStats {
    /// Nodes read.
    pub node_reads: u64,
    /// Nodes written.
    pub node_writes: u64,
    /// Node ids in use.
    pub live_ids: u64,
    /// Out of place: written slots holding no live copy (0 in place).
    pub dead_slots: u64,
    /// Slots the file spans: the table's head, or in place the end of the ids.
    pub slots: u64,
    /// Copy-on-write: dead slots free for reuse now (the others wait for a checkpoint).
    pub free_slots: u64,
    /// Nodes copied to another partition by relocations (`relocate.rs`; counted in
    /// `node_reads` and `node_writes` too).
    pub nodes_relocated: u64,
}

/// A file of node slots and its path (for error messages).
#[derive(Debug)]
pub(super) struct NodeFile {
    pub file: Arc<dyn StorageFile>,
    pub path: PathBuf,
}

#[derive(Debug)]
pub(super) struct StoreState {
    pub ids: FreeList,
    pub table: Option<NodeTable>,
    pub write_seq: u64,
    pub stats: NodeStoreStats,
    /// The file written (out of place: the active partition).
    pub file: Arc<NodeFile>,
    /// During a relocation (`relocate.rs`): the partition being drained.
    pub draining: Option<super::relocate::Draining>,
    /// The write sequence number of the checkpoint the store was opened from (0: created).
    pub opened_write_seq: u64,
    /// Slots of `file` this process wrote (kept in copy-on-write placement only, whose reads
    /// of the other slots are checked against `opened_write_seq`, module docs).
    pub written_here: SlotBitmap,
}

/// A set of slots, one bit each, grown as slots are added.
#[derive(Debug, Default)]
pub(super) struct SlotBitmap {
    words: Vec<u64>,
}

impl SlotBitmap {
    fn insert(&mut self, slot: u64) {
        let word = usize::try_from(slot / 64).expect("slots_max fits in memory");
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1 << (slot % 64);
    }

    fn contains(&self, slot: u64) -> bool {
        usize::try_from(slot / 64)
            .ok()
            .and_then(|word| self.words.get(word))
            .is_some_and(|w| w & (1 << (slot % 64)) != 0)
    }
}

/// The file of node pages.
#[derive(Debug)]
pub struct NodeStore {
    pub(super) options: NodeStoreOptions,
    pub(super) state: Mutex<StoreState>,
}

impl NodeStore {
    /// Creates the store in a new file `name`.
    pub fn create(storage: &dyn Storage, name: &str, options: NodeStoreOptions) -> Result<Self> {
        options.validate()?;
        let file = storage.open(name, OpenMode::CreateNew)?;
        let table = options.placement.new_table(options.slots_max);
        let ids = FreeList::new(0, options.slots_max)?;
        Ok(Self::assemble(storage, file, options, ids, table, 0))
    }

    /// Opens the existing file `name` in the state `snapshot` recorded (a checkpoint).
    pub fn open(
        storage: &dyn Storage,
        name: &str,
        options: NodeStoreOptions,
        snapshot: StoreSnapshot,
    ) -> Result<Self> {
        options.validate()?;
        if snapshot.placement != options.placement
            || snapshot.node_bytes != options.layout.node_bytes()
        {
            return Err(Error::Incompatible {
                reason: format!(
                    "{name} was written {:?} with {}-byte nodes, opened {:?} with {}",
                    snapshot.placement,
                    snapshot.node_bytes,
                    options.placement,
                    options.layout.node_bytes()
                ),
            });
        }
        let table_slots = snapshot.table.as_ref().map(NodeTable::slots_max);
        let expected_slots = options.placement.has_table().then_some(options.slots_max);
        if table_slots != expected_slots || snapshot.free_ids.end_block() > options.slots_max {
            return Err(Error::Incompatible {
                reason: format!(
                    "{name}: the snapshot's node table ({table_slots:?} slots) or ids do not \
                     match {expected_slots:?} slots for {} ids",
                    options.slots_max
                ),
            });
        }
        let file = storage.open(name, OpenMode::Existing)?;
        let StoreSnapshot { write_seq, free_ids, mut table, .. } = snapshot;
        if let Some(table) = &table {
            // Every slot below the head was written and synced before the checkpoint.
            let node_bytes = u64::from(options.layout.node_bytes());
            let (len, head) = (file.len()?, table.head());
            if len < head * node_bytes {
                let reason = format!("the file ends before the {head} slots its checkpoint names");
                return Err(Error::corruption(storage.path_of(name), len, reason));
            }
        }
        if options.placement == Placement::CopyOnWrite {
            table = table.map(NodeTable::into_copy_on_write);
        }
        Ok(Self::assemble(storage, file, options, free_ids, table, write_seq))
    }

    /// Opens the existing out-of-place file `name` by scanning it ([`rebuild`]); every id
    /// found is in use (the tree frees those it cannot reach). Returns the damaged slots too.
    pub fn open_rebuilding(
        storage: &dyn Storage,
        name: &str,
        options: NodeStoreOptions,
    ) -> Result<(Self, Vec<u64>)> {
        options.validate()?;
        if options.placement != Placement::OutOfPlace {
            return Err(Error::option("placement", "only an out-of-place store is rebuilt"));
        }
        let file = storage.open(name, OpenMode::Existing)?;
        let path = storage.path_of(name);
        let Rebuilt { table, write_seq_max, damaged_slots } =
            rebuild(file.as_ref(), &path, &options.layout, options.slots_max)?;
        let mut ids = FreeList::new(0, options.slots_max)?;
        let end = table.ids().last().map_or(0, |id| id.0 + 1);
        for id in 0..end {
            let allocated = ids.allocate()?;
            assert_eq!(allocated, id, "a fresh free list allocates in order");
        }
        for id in 0..end {
            if table.slot(NodeId(id)).is_none() {
                ids.free(id)?;
            }
        }
        ids.commit_durable();
        let store = Self::assemble(storage, file, options, ids, Some(table), write_seq_max);
        Ok((store, damaged_slots))
    }

    fn assemble(
        storage: &dyn Storage,
        file: Arc<dyn StorageFile>,
        options: NodeStoreOptions,
        ids: FreeList,
        table: Option<NodeTable>,
        write_seq: u64,
    ) -> Self {
        let path = storage.path_of(file.name());
        let stats = NodeStoreStats::default();
        let file = Arc::new(NodeFile { file, path });
        let state = StoreState {
            ids,
            table,
            write_seq,
            stats,
            file,
            draining: None,
            opened_write_seq: write_seq,
            written_here: SlotBitmap::default(),
        };
        NodeStore { options, state: Mutex::new(state) }
    }

    /// The options in force.
    pub fn options(&self) -> &NodeStoreOptions {
        &self.options
    }

    /// The node layout.
    pub fn layout(&self) -> &NodeLayout {
        &self.options.layout
    }

    /// A fresh node id (the lowest free one). `NoSpace` when all `slots_max` are in use.
    pub fn allocate(&self) -> Result<NodeId> {
        self.state.lock().ids.allocate().map(NodeId)
    }

    /// Frees `id`; it is handed out again after [`NodeStore::commit_durable`]. Freeing an id
    /// not in use is refused and changes nothing.
    pub fn free(&self, id: NodeId) -> Result<()> {
        let mut state = self.state.lock();
        state.ids.free(id.0)?;
        if let Some(table) = &mut state.table {
            table.remove(id);
        }
        if let Some(draining) = &mut state.draining {
            draining.slots.remove(&id);
        }
        Ok(())
    }

    /// The state that freed ids is durable: they may be reused (copy-on-write: with the
    /// slots awaiting the last [`NodeStore::checkpoint`]).
    pub fn commit_durable(&self) {
        let mut state = self.state.lock();
        state.ids.commit_durable();
        if let Some(table) = &mut state.table {
            table.commit_durable();
        }
    }

    /// Whether `id` is allocated (and not freed).
    pub fn is_allocated(&self, id: NodeId) -> bool {
        let state = self.state.lock();
        id.0 < state.ids.end_block() && !state.ids.is_free(id.0)
    }

    /// Byte offset of `id`'s current page, `None` if it has none (never written, or freed).
    /// During a relocation the page may be in the partition being drained.
    pub fn offset_of(&self, id: NodeId) -> Option<u64> {
        let state = self.state.lock();
        self.locate(&state, id).map(|(_, offset)| offset)
    }

    /// The file and byte offset of `id`'s current page.
    fn locate(&self, state: &StoreState, id: NodeId) -> Option<(Arc<NodeFile>, u64)> {
        if id.0 >= state.ids.end_block() || state.ids.is_free(id.0) {
            return None;
        }
        let node_bytes = u64::from(self.options.layout.node_bytes());
        let (file, slot) = match (&state.table, &state.draining) {
            (None, _) => (&state.file, id.0),
            (Some(table), draining) => match (table.slot(id), draining) {
                (Some(slot), _) => (&state.file, slot),
                (None, Some(draining)) => (&draining.file, *draining.slots.get(&id)?),
                (None, None) => return None,
            },
        };
        Some((file.clone(), slot * node_bytes))
    }

    /// Reads node `id`. A missing or damaged page is `Corruption` naming the file and offset.
    pub fn read(&self, id: NodeId) -> Result<Node> {
        let node_bytes = u64::from(self.options.layout.node_bytes());
        let (file, offset, write_seq_max) = {
            let mut state = self.state.lock();
            let Some((file, offset)) = self.locate(&state, id) else {
                let reason = format!("{id} is not allocated or never written");
                return Err(Error::corruption(&state.file.path, 0, reason));
            };
            state.stats.node_reads += 1;
            // Module docs: a slot not written here holds a page from before the checkpoint.
            // (Copy-on-write has no draining partition: `file` is `state.file`.)
            let unwritten_here = self.options.placement == Placement::CopyOnWrite
                && !state.written_here.contains(offset / node_bytes);
            (file, offset, unwritten_here.then_some(state.opened_write_seq))
        };
        let decoded = read_decoded_at(&file, offset, id, &self.options.layout)?;
        if let Some(max) = write_seq_max
            && decoded.write_seq > max
        {
            let reason = format!(
                "{id}'s page was written after the committed state this store was opened from \
                 (write {} > {max}): a later commit freed and reused the slot, and the \
                 superblock lost that commit (its newest slot damaged)",
                decoded.write_seq
            );
            return Err(Error::corruption(&file.path, offset, reason));
        }
        Ok(decoded.node)
    }

    /// Writes `node` as the latest version of `id` (allocated; the node must fit).
    pub fn write(&self, id: NodeId, node: &Node) -> Result<()> {
        let mut state = self.state.lock();
        assert!(
            id.0 < state.ids.end_block() && !state.ids.is_free(id.0),
            "writing {id}, which is not allocated"
        );
        let node_bytes = u64::from(self.options.layout.node_bytes());
        let slot = match &state.table {
            Some(table) => table.next_slot_for(id)?,
            None => id.0,
        };
        let write_seq = state.write_seq + 1;
        let page = encode_node(node, id, write_seq, &self.options.layout);
        // Marked before the write: a failed write leaves the slot unknown, not older.
        if self.options.placement == Placement::CopyOnWrite {
            state.written_here.insert(slot);
        }
        state.file.file.write_all_at(slot * node_bytes, &page)?;
        state.write_seq = write_seq;
        state.stats.node_writes += 1;
        if let Some(table) = &mut state.table {
            table.place(id, slot);
        }
        if let Some(draining) = &mut state.draining {
            draining.slots.remove(&id); // its latest copy is in the new partition now
        }
        Ok(())
    }

    /// Makes the writes so far durable.
    pub fn sync(&self) -> Result<()> {
        let file = self.state.lock().file.clone();
        file.file.sync_data()
    }

    /// The file, to sync without holding the store (a checkpoint syncs after releasing the
    /// tree lock; writes completed before the sync starts are made durable).
    pub fn sync_handle(&self) -> Arc<dyn StorageFile> {
        // The active partition's file (a checkpoint is refused while nodes relocate).
        Arc::clone(&self.state.lock().file.file)
    }

    /// Counters.
    pub fn stats(&self) -> NodeStoreStats {
        let state = self.state.lock();
        let mut stats = state.stats;
        stats.live_ids = state.ids.used_blocks();
        stats.dead_slots = state.table.as_ref().map_or(0, NodeTable::dead_slots);
        stats.slots = state.table.as_ref().map_or(state.ids.end_block(), NodeTable::head);
        stats.free_slots = state.table.as_ref().map_or(0, NodeTable::free_slots);
        stats
    }

    /// A checkpoint is taken (every write so far must be synced before it is committed):
    /// returns the state to record; copy-on-write, every node written so far is from now on
    /// written elsewhere first ([`NodeTable::checkpoint_taken`]).
    pub fn checkpoint(&self) -> StoreSnapshot {
        let mut state = self.state.lock();
        assert!(state.draining.is_none(), "no checkpoint in the middle of a relocation");
        if let Some(table) = &mut state.table {
            table.checkpoint_taken();
        }
        drop(state);
        self.snapshot()
    }

    /// The state to checkpoint (free ids, the node table, the write sequence number).
    pub fn snapshot(&self) -> StoreSnapshot {
        let state = self.state.lock();
        assert!(state.draining.is_none(), "no snapshot in the middle of a relocation");
        StoreSnapshot {
            placement: self.options.placement,
            node_bytes: self.options.layout.node_bytes(),
            write_seq: state.write_seq,
            free_ids: state.ids.clone(),
            table: state.table.clone(),
        }
    }
}

/// Reads and checks the node page of `id` at `offset` of `file`: a missing or damaged page is
/// `Corruption` naming the file and the offset.
pub(super) fn read_node_at(
    file: &NodeFile,
    offset: u64,
    id: NodeId,
    layout: &NodeLayout,
) -> Result<Node> {
    Ok(read_decoded_at(file, offset, id, layout)?.node)
}

/// [`read_node_at`], with the page's header fields.
fn read_decoded_at(
    file: &NodeFile,
    offset: u64,
    id: NodeId,
    layout: &NodeLayout,
) -> Result<DecodedNode> {
    let mut page = vec![0u8; layout.node_bytes() as usize];
    match file.file.read_exact_at(offset, &mut page) {
        Err(e) if io_error_kind(&e) == Some(std::io::ErrorKind::UnexpectedEof) => {
            let reason = format!("{id}: page past the end");
            return Err(Error::corruption(&file.path, offset, reason));
        }
        other => other?,
    }
    decode_node(&page, layout, Some(id)).map_err(|e| e.at(&file.path, offset))
}
