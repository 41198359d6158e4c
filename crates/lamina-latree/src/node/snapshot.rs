//! A node store's state for a checkpoint ([`StoreSnapshot`], `docs/format/latree-node.md`,
//! "Store snapshot"): the placement and node size it was written with, the last write
//! sequence number, the free node ids and (out of place) the node table. The tree embeds its
//! encoding in the superblock payload of a checkpoint.

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, put_varint};
use lamina_storage::FreeList;

use super::store::Placement;
use super::table::NodeTable;

/// Version of [`StoreSnapshot`]'s encoding.
pub const STORE_SNAPSHOT_FORMAT_VERSION: u8 = 1;
/// Largest encoded free list or node table inside a snapshot.
pub const SNAPSHOT_PART_BYTES_MAX: usize = 1 << 30;

/// A node store's state, for a checkpoint (`docs/format/latree-node.md`, "Store snapshot").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSnapshot {
    /// The placement the file was written with.
    pub placement: Placement,
    /// The node size the file was written with.
    pub node_bytes: u32,
    /// The last write sequence number used.
    pub write_seq: u64,
    /// The node ids in use and free.
    pub free_ids: FreeList,
    /// Out of place: the node table.
    pub table: Option<NodeTable>,
}

impl Encode for StoreSnapshot {
    fn encoded_len(&self) -> usize {
        self.encode().len()
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        lamina_core::checksum::seal(out, |out| {
            out.push(STORE_SNAPSHOT_FORMAT_VERSION);
            out.push(self.placement.to_byte());
            out.extend_from_slice(&self.node_bytes.to_le_bytes());
            put_varint(out, self.write_seq);
            put_bytes(out, &self.free_ids.encode());
            match &self.table {
                Some(table) => put_bytes(out, &table.encode()),
                None => put_varint(out, 0),
            }
        });
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_to(&mut out);
        out
    }
}

impl Decode for StoreSnapshot {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let body = lamina_core::checksum::unseal(input, "node store snapshot")?;
        let mut r = Reader::new(body);
        let version = r.u8()?;
        if version != STORE_SNAPSHOT_FORMAT_VERSION {
            return Err(DecodeError::new(0, format!("node store snapshot version {version}")));
        }
        let placement = match r.u8()? {
            1 => Placement::InPlace,
            2 => Placement::OutOfPlace,
            3 => Placement::CopyOnWrite,
            other => return Err(DecodeError::new(1, format!("placement {other}"))),
        };
        let node_bytes = r.u32()?;
        let write_seq = r.varint()?;
        let (at, bytes) = nested(&mut r)?;
        let shift = |at: usize| move |e: DecodeError| DecodeError::new(at + e.offset, e.reason);
        let free_ids = FreeList::decode(bytes).map_err(shift(at))?;
        let (at, bytes) = nested(&mut r)?;
        let table = match placement {
            Placement::InPlace if bytes.is_empty() => None,
            Placement::OutOfPlace | Placement::CopyOnWrite => {
                Some(NodeTable::decode(bytes).map_err(shift(at))?)
            }
            Placement::InPlace => return Err(DecodeError::new(at, "node table in place")),
        };
        r.finish()?;
        Ok(StoreSnapshot { placement, node_bytes, write_seq, free_ids, table })
    }
}

/// A length-prefixed part of a snapshot and its offset.
fn nested<'a>(r: &mut Reader<'a>) -> Result<(usize, &'a [u8]), DecodeError> {
    let bytes = r.bytes_with_len(SNAPSHOT_PART_BYTES_MAX)?;
    Ok((r.position() - bytes.len(), bytes))
}
