//! The node table of LA-tree section 4.3 (an index-specific FTL): with out-of-place
//! placement every write of a node appends it at the head of the node partition and the
//! table maps the node's id to the slot of its latest copy; the older copies are dead.
//!
//! Invariants: `head <= slots_max`; every mapped slot is below `head`; no two ids map to one
//! slot; `dead_slots() == head - live_nodes()`.
//!
//! **Copy-on-write mode** ([`NodeTable::new_copy_on_write`], in-place placement of a crash
//! consistent tree): slots are reused, but never one the last checkpoint may reach. A node
//! written since the last [`NodeTable::checkpoint_taken`] ("fresh") is rewritten in its slot;
//! any other node goes to the lowest free slot (else the head), and its old slot is
//! *vacated*. Vacated slots wait two steps: at the next checkpoint they move to *awaiting*
//! (the checkpoint being committed no longer reaches them, but the committed one may), and
//! when that checkpoint is durable ([`NodeTable::commit_durable`]) they become free. Extra
//! invariants: free, vacated, awaiting and mapped slots are disjoint and below `head`; every
//! fresh id is mapped.
//!
//! The table lives in memory. It is persisted with the store's snapshot (for a checkpoint
//! through the superblock; encoding below and in `docs/format/latree-node.md`) and can be
//! rebuilt by scanning the partition ([`rebuild`]): the copy with the highest write sequence
//! number of each id wins.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_varint, varint_len};
use lamina_core::{Error, Result};
use lamina_storage::StorageFile;

use super::layout::{NodeId, NodeLayout};
use super::page::decode_node;

/// Version of the table's encoding.
pub const NODE_TABLE_FORMAT_VERSION: u8 = 1;
/// Slots [`rebuild`] reads per call.
pub const REBUILD_READ_SLOTS: u64 = 64;

/// The id -> slot map of out-of-place placement (and of copy-on-write in place).
///
/// Equality compares what the encoding holds (the mapping, the head and the partition
/// size), not the copy-on-write bookkeeping, which a checkpoint does not record.
#[derive(Debug, Clone)]
pub struct NodeTable {
    slots: HashMap<NodeId, u64>,
    head: u64,
    slots_max: u64,
    reuse: Option<SlotReuse>,
}

impl PartialEq for NodeTable {
    fn eq(&self, other: &Self) -> bool {
        (self.slots == other.slots && self.head == other.head) && self.slots_max == other.slots_max
    }
}

impl Eq for NodeTable {}

/// Copy-on-write bookkeeping (module docs).
#[derive(Debug, Clone, Default)]
struct SlotReuse {
    /// Slots below the head that nothing reaches: handed out lowest first.
    free: BTreeSet<u64>,
    /// Ids whose slot was written since the last checkpoint: rewritten in place.
    fresh: HashSet<NodeId>,
    /// Slots left since the last checkpoint (the committed checkpoint may reach them).
    vacated: Vec<u64>,
    /// Slots left before the last checkpoint, free once it is durable.
    awaiting: Vec<u64>,
}

impl NodeTable {
    /// An empty append-only table over a partition of `slots_max` node slots.
    pub fn new(slots_max: u64) -> Self {
        NodeTable { slots: HashMap::new(), head: 0, slots_max, reuse: None }
    }

    /// An empty copy-on-write table over `slots_max` slots (module docs).
    pub fn new_copy_on_write(slots_max: u64) -> Self {
        NodeTable::new(slots_max).into_copy_on_write()
    }

    /// This table in copy-on-write mode, as a checkpoint records it: every slot below the
    /// head that no id maps is free (in the state the checkpoint describes nothing reaches
    /// it), and no id is fresh. Takes time and memory in the head.
    pub fn into_copy_on_write(mut self) -> Self {
        let used: HashSet<u64> = self.slots.values().copied().collect();
        let free = (0..self.head).filter(|slot| !used.contains(slot)).collect();
        self.reuse = Some(SlotReuse { free, ..SlotReuse::default() });
        self
    }

    /// Whether slots are reused (copy-on-write mode).
    pub fn is_copy_on_write(&self) -> bool {
        self.reuse.is_some()
    }

    /// The slot the next copy of `id` goes to: append-only, the head; copy-on-write, `id`'s
    /// own slot if it is fresh, else the lowest free slot, else the head. `NoSpace` when the
    /// partition is full.
    pub fn next_slot_for(&self, id: NodeId) -> Result<u64> {
        if let Some(reuse) = &self.reuse {
            if reuse.fresh.contains(&id) {
                return Ok(self.slots[&id]);
            }
            if let Some(&slot) = reuse.free.first() {
                return Ok(slot);
            }
        }
        self.next_slot()
    }

    /// A checkpoint is being taken: from now on every mapped slot may be reached by it, so
    /// no id is fresh, and the slots vacated so far wait for its commit.
    pub fn checkpoint_taken(&mut self) {
        if let Some(reuse) = &mut self.reuse {
            reuse.fresh.clear();
            let vacated = std::mem::take(&mut reuse.vacated);
            reuse.awaiting.extend(vacated);
        }
    }

    /// The last checkpoint taken is durable: the slots awaiting it are free.
    pub fn commit_durable(&mut self) {
        if let Some(reuse) = &mut self.reuse {
            let awaiting = std::mem::take(&mut reuse.awaiting);
            reuse.free.extend(awaiting);
        }
    }

    /// Slots free for reuse now (0 append-only).
    pub fn free_slots(&self) -> u64 {
        self.reuse.as_ref().map_or(0, |r| r.free.len() as u64)
    }

    /// The slot of `id`'s latest copy.
    pub fn slot(&self, id: NodeId) -> Option<u64> {
        self.slots.get(&id).copied()
    }

    /// The slot the next copy goes to; `NoSpace` when the partition is full (the tree's
    /// reclamation, section 4.3, moves the live nodes to the other partition long before).
    pub fn next_slot(&self) -> Result<u64> {
        if self.head >= self.slots_max {
            return Err(Error::NoSpace {
                context: format!(
                    "the node partition's {} slots are written ({} live) (NODE_SLOTS_MAX)",
                    self.slots_max,
                    self.live_nodes()
                ),
            });
        }
        Ok(self.head)
    }

    /// `id`'s latest copy was written at `slot` (the one [`NodeTable::next_slot_for`]
    /// gave); returns the slot of the copy it replaces, now dead (`None` for a rewrite in
    /// place of a fresh node).
    pub fn place(&mut self, id: NodeId, slot: u64) -> Option<u64> {
        if let Some(reuse) = &mut self.reuse {
            if reuse.fresh.contains(&id) {
                assert_eq!(self.slots[&id], slot, "a fresh node is rewritten in place");
                return None;
            }
            if slot != self.head {
                assert!(reuse.free.remove(&slot), "slot {slot} is free");
                reuse.fresh.insert(id);
                let old = self.slots.insert(id, slot);
                reuse.vacated.extend(old);
                return old;
            }
        }
        assert_eq!(slot, self.head, "copies are appended at the head");
        assert!(slot < self.slots_max, "next_slot checked the space");
        self.head += 1;
        let old = self.slots.insert(id, slot);
        if let Some(reuse) = &mut self.reuse {
            reuse.fresh.insert(id);
            reuse.vacated.extend(old);
        }
        old
    }

    /// Forgets `id` (freed); returns its last slot, now dead (copy-on-write: vacated).
    pub fn remove(&mut self, id: NodeId) -> Option<u64> {
        let old = self.slots.remove(&id);
        if let Some(reuse) = &mut self.reuse {
            reuse.fresh.remove(&id);
            reuse.vacated.extend(old);
        }
        old
    }

    /// The next slot to write: slots `0..head` have been written.
    pub fn head(&self) -> u64 {
        self.head
    }

    /// Slots in the partition.
    pub fn slots_max(&self) -> u64 {
        self.slots_max
    }

    /// Ids with a copy.
    pub fn live_nodes(&self) -> u64 {
        self.slots.len() as u64
    }

    /// Written slots holding no live copy.
    pub fn dead_slots(&self) -> u64 {
        self.head - self.live_nodes()
    }

    /// The mapped ids in ascending order.
    pub fn ids(&self) -> Vec<NodeId> {
        let mut ids: Vec<NodeId> = self.slots.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        out.push(NODE_TABLE_FORMAT_VERSION);
        put_varint(out, self.slots_max);
        put_varint(out, self.head);
        put_varint(out, self.live_nodes());
        let mut next = 0;
        for id in self.ids() {
            put_varint(out, id.0 - next);
            put_varint(out, self.slots[&id]);
            next = id.0 + 1;
        }
    }
}

impl Encode for NodeTable {
    fn encoded_len(&self) -> usize {
        let mut len = 1 + varint_len(self.slots_max) + varint_len(self.head);
        len += varint_len(self.live_nodes()) + 4;
        let mut next = 0;
        for id in self.ids() {
            len += varint_len(id.0 - next) + varint_len(self.slots[&id]);
            next = id.0 + 1;
        }
        len
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        lamina_core::checksum::seal(out, |out| self.encode_body(out));
    }
}

impl Decode for NodeTable {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let body = lamina_core::checksum::unseal(input, "node table")?;
        let mut r = Reader::new(body);
        let version = r.u8()?;
        if version != NODE_TABLE_FORMAT_VERSION {
            return Err(DecodeError::new(0, format!("node table version {version}")));
        }
        let slots_max = r.varint()?;
        let head = r.varint()?;
        if head > slots_max {
            return Err(r.error(format!("head {head} past the {slots_max} slots")));
        }
        let count = r.varint()?;
        if count > head || count > r.remaining() as u64 / 2 {
            return Err(r.error(format!("{count} ids cannot fit")));
        }
        let mut slots = HashMap::with_capacity(count as usize);
        let mut used = HashSet::with_capacity(count as usize);
        let mut next: u64 = 0;
        for _ in 0..count {
            let at = r.position();
            let id = next
                .checked_add(r.varint()?)
                .ok_or_else(|| DecodeError::new(at, "node id overflows"))?;
            let slot = r.varint()?;
            if slot >= head || !used.insert(slot) {
                return Err(DecodeError::new(at, format!("slot {slot} past the head or reused")));
            }
            slots.insert(NodeId(id), slot);
            next = id.checked_add(1).ok_or_else(|| DecodeError::new(at, "node id overflows"))?;
        }
        r.finish()?;
        Ok(NodeTable { slots, head, slots_max, reuse: None })
    }
}

/// What [`rebuild`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebuilt {
    /// The latest copy of every id found, with `head` after the last slot of the file.
    pub table: NodeTable,
    /// The highest write sequence number found (the store continues after it).
    pub write_seq_max: u64,
    /// Slots that are neither a valid node nor zeros (torn or damaged). If one held the
    /// latest copy of a node, the table now maps an older copy: the caller must check the
    /// tree against its checkpoint or log before trusting it.
    pub damaged_slots: Vec<u64>,
}

/// Rebuilds the table by reading every slot of `file` (out-of-place placement): each id maps
/// to its copy with the highest write sequence number. Freed ids whose last copy is still in
/// the file come back; the tree drops the ids it cannot reach ([`NodeTable::remove`]).
pub fn rebuild(
    file: &dyn StorageFile,
    path: &Path,
    layout: &NodeLayout,
    slots_max: u64,
) -> Result<Rebuilt> {
    let node_bytes = u64::from(layout.node_bytes());
    let len = file.len()?;
    let head = len.div_ceil(node_bytes);
    if head > slots_max {
        return Err(Error::corruption(path, slots_max * node_bytes, "file past the partition"));
    }
    let mut latest: HashMap<NodeId, (u64, u64)> = HashMap::new();
    let mut damaged_slots = Vec::new();
    let mut buf = Vec::new();
    let mut first = 0;
    while first < head {
        let count = REBUILD_READ_SLOTS.min(head - first);
        let offset = first * node_bytes;
        let readable = (count * node_bytes).min(len - offset);
        buf.clear();
        buf.resize((count * node_bytes) as usize, 0);
        file.read_exact_at(offset, &mut buf[..readable as usize])?;
        for (i, page) in buf.chunks_exact(node_bytes as usize).enumerate() {
            let slot = first + i as u64;
            match decode_node(page, layout, None) {
                Ok(decoded) => {
                    let newer = latest
                        .get(&decoded.node_id)
                        .is_none_or(|&(seq, _)| decoded.write_seq > seq);
                    if newer {
                        latest.insert(decoded.node_id, (decoded.write_seq, slot));
                    }
                }
                Err(_) if page.iter().all(|&b| b == 0) => {}
                Err(_) => damaged_slots.push(slot),
            }
        }
        first += count;
    }
    let write_seq_max = latest.values().map(|&(seq, _)| seq).max().unwrap_or(0);
    let slots = latest.into_iter().map(|(id, (_, slot))| (id, slot)).collect();
    let table = NodeTable { slots, head, slots_max, reuse: None };
    Ok(Rebuilt { table, write_seq_max, damaged_slots })
}
