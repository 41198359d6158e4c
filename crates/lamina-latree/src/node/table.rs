//! The node table of LA-tree section 4.3 (an index-specific FTL): with out-of-place
//! placement every write of a node appends it at the head of the node partition and the
//! table maps the node's id to the slot of its latest copy; the older copies are dead.
//!
//! Invariants: `head <= slots_max`; every mapped slot is below `head`; no two ids map to one
//! slot; `dead_slots() == head - live_nodes()`.
//!
//! The table lives in memory. It is persisted with the store's snapshot (for a checkpoint
//! through the superblock; encoding below and in `docs/format/latree-node.md`) and can be
//! rebuilt by scanning the partition ([`rebuild`]): the copy with the highest write sequence
//! number of each id wins.

use std::collections::{HashMap, HashSet};
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

/// The id -> slot map of out-of-place placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTable {
    slots: HashMap<NodeId, u64>,
    head: u64,
    slots_max: u64,
}

impl NodeTable {
    /// An empty table over a partition of `slots_max` node slots.
    pub fn new(slots_max: u64) -> Self {
        NodeTable { slots: HashMap::new(), head: 0, slots_max }
    }

    /// The slot of `id`'s latest copy.
    pub fn slot(&self, id: NodeId) -> Option<u64> {
        self.slots.get(&id).copied()
    }

    /// The slot the next copy goes to; `NoSpace` when the partition is full (reclaiming it by
    /// copying live nodes to a second partition, section 4.3, is not built yet).
    pub fn next_slot(&self) -> Result<u64> {
        if self.head >= self.slots_max {
            return Err(Error::NoSpace {
                context: format!(
                    "the node partition's {} slots are written ({} live); reclaiming dead \
                     copies is not built yet",
                    self.slots_max,
                    self.live_nodes()
                ),
            });
        }
        Ok(self.head)
    }

    /// `id`'s latest copy was written at `slot` (the one [`NodeTable::next_slot`] gave);
    /// returns the slot of the copy it replaces, now dead.
    pub fn place(&mut self, id: NodeId, slot: u64) -> Option<u64> {
        assert_eq!(slot, self.head, "copies are appended at the head");
        assert!(slot < self.slots_max, "next_slot checked the space");
        self.head += 1;
        self.slots.insert(id, slot)
    }

    /// Forgets `id` (freed); returns its last slot, now dead.
    pub fn remove(&mut self, id: NodeId) -> Option<u64> {
        self.slots.remove(&id)
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
        Ok(NodeTable { slots, head, slots_max })
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
    Ok(Rebuilt { table: NodeTable { slots, head, slots_max }, write_seq_max, damaged_slots })
}
