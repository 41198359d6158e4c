//! The manifest: the persistent description of an NB-tree (its structural parameters, the
//! s-tree with each s-node's d-tree and lazy-removal pointer, the last log record the
//! d-trees hold), written to its own file at each commit and named by the superblock
//! (`persist.rs`). Byte layout: `docs/format/nbtree-manifest.md`.
//!
//! ```text
//! magic "NBTM" (u32 LE) | version (u32 LE) | fanout (u32 LE) | sigma_bytes (u64 LE)
//! | next_node_id (varint) | next_dtree_id (varint) | flushed_seq (varint) | root (varint)
//! | log_synced_seq (varint, version 2 only) | node count (varint) | nodes...
//! | masked CRC32C of everything before (u32 LE)
//! node: id (varint) | dtree id (varint, 0: none) | live_bytes (varint)
//!     | live_entries (varint) | flushed_through: 0 (u8) or 1 (u8) + key (varint len, bytes)
//!     | key count (varint) | keys (varint len, bytes)... | child count (varint)
//!     | child ids (varint)...
//! ```

use lamina_core::checksum::{seal, sealed_len, unseal};
use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, put_varint};
use lamina_core::limits::KEY_BYTES_MAX;

use crate::options::FANOUT_MAX;
use crate::stree::{NODES_MAX, NodeId};

const MAGIC: u32 = u32::from_le_bytes(*b"NBTM");
/// Version 2 added `log_synced_seq`; version 1 manifests are read with it equal to
/// `flushed_seq` (what version 1 recovery assumed).
const VERSION: u32 = 2;
const VERSION_WITHOUT_LOG_SYNCED: u32 = 1;

/// One s-node as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    /// Its id.
    pub id: NodeId,
    /// Its d-tree's id (0: none).
    pub dtree_id: u64,
    /// Bytes of the live part.
    pub live_bytes: u64,
    /// Entries of the live part.
    pub live_entries: u64,
    /// Lazy removal: the last key flushed to the children.
    pub flushed_through: Option<Vec<u8>>,
    /// S-keys.
    pub keys: Vec<Vec<u8>>,
    /// Children.
    pub children: Vec<NodeId>,
}

/// The decoded manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// `f` the tree was made with.
    pub fanout: u32,
    /// `sigma` the tree was made with.
    pub sigma_bytes: u64,
    /// The id the next s-node gets.
    pub next_node_id: NodeId,
    /// The id the next d-tree gets.
    pub next_dtree_id: u64,
    /// Every log record up to this sequence number is in the d-trees.
    pub flushed_seq: u64,
    /// The log was synced through this sequence number when this manifest was committed (at
    /// least `flushed_seq`; at a clean close, the log's last record), so recovery refuses a
    /// log cut before it instead of taking the cut for a crash's torn tail.
    pub log_synced_seq: u64,
    /// The root s-node.
    pub root: NodeId,
    /// Every s-node.
    pub nodes: Vec<NodeRecord>,
}

fn body(m: &Manifest, out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&m.fanout.to_le_bytes());
    out.extend_from_slice(&m.sigma_bytes.to_le_bytes());
    let fields = [m.next_node_id, m.next_dtree_id, m.flushed_seq, m.root, m.log_synced_seq];
    for v in fields.into_iter().chain([m.nodes.len() as u64]) {
        put_varint(out, v);
    }
    for n in &m.nodes {
        for v in [n.id, n.dtree_id, n.live_bytes, n.live_entries] {
            put_varint(out, v);
        }
        match &n.flushed_through {
            None => out.push(0),
            Some(k) => {
                out.push(1);
                put_bytes(out, k);
            }
        }
        put_varint(out, n.keys.len() as u64);
        for k in &n.keys {
            put_bytes(out, k);
        }
        put_varint(out, n.children.len() as u64);
        for &c in &n.children {
            put_varint(out, c);
        }
    }
}

impl Encode for Manifest {
    fn encoded_len(&self) -> usize {
        sealed_len(|out| body(self, out))
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        seal(out, |out| body(self, out));
    }
}

fn count(r: &mut Reader<'_>, max: usize, what: &str) -> Result<usize, DecodeError> {
    let at = r.position();
    let n = r.varint()?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| DecodeError::new(at, format!("{n} {what} (at most {max})")))
}

impl Decode for Manifest {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(unseal(input, "manifest")?);
        if r.u32()? != MAGIC {
            return Err(DecodeError::new(0, "not an NB-tree manifest (bad magic)"));
        }
        let version = r.u32()?;
        if version != VERSION && version != VERSION_WITHOUT_LOG_SYNCED {
            return Err(DecodeError::new(4, format!("manifest version {version} unknown")));
        }
        let fanout = r.u32()?;
        let sigma_bytes = r.u64()?;
        let (next_node_id, next_dtree_id, flushed_seq, root) =
            (r.varint()?, r.varint()?, r.varint()?, r.varint()?);
        let log_synced_seq = if version == VERSION { r.varint()? } else { flushed_seq };
        if log_synced_seq < flushed_seq {
            return Err(r.error(format!(
                "log_synced_seq {log_synced_seq} is below flushed_seq {flushed_seq}"
            )));
        }
        let n = count(&mut r, NODES_MAX, "s-nodes")?;
        let mut nodes = Vec::with_capacity(n.min(4096));
        for _ in 0..n {
            let (id, dtree_id, live_bytes, live_entries) =
                (r.varint()?, r.varint()?, r.varint()?, r.varint()?);
            let flushed_through = match r.u8()? {
                0 => None,
                1 => Some(r.bytes_with_len(KEY_BYTES_MAX)?.to_vec()),
                other => return Err(r.error(format!("bad lazy-removal flag {other}"))),
            };
            let keys = (0..count(&mut r, FANOUT_MAX as usize, "s-keys")?)
                .map(|_| r.bytes_with_len(KEY_BYTES_MAX).map(<[u8]>::to_vec))
                .collect::<Result<Vec<_>, _>>()?;
            let children = (0..count(&mut r, FANOUT_MAX as usize + 1, "children")?)
                .map(|_| r.varint())
                .collect::<Result<Vec<_>, _>>()?;
            nodes.push(NodeRecord {
                id,
                dtree_id,
                live_bytes,
                live_entries,
                flushed_through,
                keys,
                children,
            });
        }
        r.finish()?;
        Ok(Manifest {
            fanout,
            sigma_bytes,
            next_node_id,
            next_dtree_id,
            flushed_seq,
            log_synced_seq,
            root,
            nodes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        Manifest {
            fanout: 3,
            sigma_bytes: 1 << 20,
            next_node_id: 9,
            next_dtree_id: 77,
            flushed_seq: 12345,
            log_synced_seq: 12400,
            root: 4,
            nodes: vec![
                NodeRecord {
                    id: 4,
                    dtree_id: 0,
                    live_bytes: 0,
                    live_entries: 0,
                    flushed_through: None,
                    keys: vec![b"m".to_vec()],
                    children: vec![2, 3],
                },
                NodeRecord {
                    id: 2,
                    dtree_id: 70,
                    live_bytes: 500,
                    live_entries: 5,
                    flushed_through: Some(b"c".to_vec()),
                    keys: vec![],
                    children: vec![],
                },
            ],
        }
    }

    #[test]
    fn roundtrip() {
        let m = sample();
        let bytes = m.encode();
        assert_eq!(bytes.len(), m.encoded_len());
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
    }

    #[test]
    fn a_version_1_manifest_reads_with_the_log_synced_through_flushed_seq() {
        let m = sample();
        let mut body_v1 = Vec::new();
        body(&m, &mut body_v1);
        body_v1[4..8].copy_from_slice(&VERSION_WITHOUT_LOG_SYNCED.to_le_bytes());
        // Drop the log_synced_seq varint (12400 takes two bytes), after the four fields.
        let at = 4 + 4 + 4 + 8 + 1 + 1 + 2 + 1;
        body_v1.drain(at..at + 2);
        let mut sealed = Vec::new();
        seal(&mut sealed, |out| out.extend_from_slice(&body_v1));
        let read = Manifest::decode(&sealed).unwrap();
        assert_eq!(read, Manifest { log_synced_seq: m.flushed_seq, ..m });
    }

    #[test]
    fn a_log_synced_below_flushed_is_refused() {
        let m = Manifest { log_synced_seq: 5, ..sample() };
        assert!(Manifest::decode(&m.encode()).is_err());
    }

    #[test]
    fn every_flipped_byte_and_every_cut_is_an_error() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(Manifest::decode(&bad).is_err(), "byte {i}");
            assert!(Manifest::decode(&bytes[..i]).is_err(), "cut at {i}");
        }
    }
}
