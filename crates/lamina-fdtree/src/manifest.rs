//! The manifest: the persistent description of the tree (level structure, counters and the
//! content of `L_0`), written atomically (temporary file, sync, rename, directory sync) at
//! every checkpoint (`sync` and `close`). Byte layout: `docs/format/fdtree-manifest.md`.
//!
//! Crash durability of individual writes needs the group-commit log (not used yet): after a
//! crash, the tree comes back as of the last checkpoint. Level files replaced by merges after
//! that checkpoint are kept until the next one, so the checkpointed state stays readable, and
//! level files a crash left behind (written after the last checkpoint) are removed on open.

use std::collections::BTreeSet;

use lamina_core::checksum::masked_crc32c;
use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_varint};
use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_core::{Error, Result};
use lamina_storage::OpenMode;

use crate::entry::Entry;
use crate::level::{DiskLevel, LevelStats};
use crate::options::Params;
use crate::store::BlockStore;
use crate::top::TopLevel;
use crate::tree::{Counters, Tree};

/// File name of the manifest.
pub const MANIFEST_FILE_NAME: &str = "fdtree.manifest";
const MANIFEST_TMP_NAME: &str = "fdtree.manifest.tmp";
const MAGIC: u32 = u32::from_le_bytes(*b"FDTM");
const VERSION: u32 = 1;
/// Most levels a manifest may describe.
const LEVELS_MAX: u64 = 256;
/// Most `L_0` entries a manifest may hold (bounds decoding of corrupt counts).
const TOP_ENTRIES_MAX: u64 = 1 << 32;

/// One disk level as recorded in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelRecord {
    /// Level number.
    pub label: u64,
    /// Level file id.
    pub file_id: u32,
    /// Blocks.
    pub blocks: u32,
    /// Sizes.
    pub stats: LevelStats,
}

/// The decoded manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Block size the tree was written with.
    pub block_bytes: u32,
    /// `gamma`.
    pub size_ratio: u32,
    /// `kappa_0` in blocks.
    pub kappa0_blocks: u64,
    /// Key limit.
    pub key_bytes_max: u32,
    /// Value limit.
    pub value_bytes_max: u32,
    /// Next level file id.
    pub next_file_id: u32,
    /// `N_delta`, `N_nabla` and byte counters.
    pub counters: Counters,
    /// Disk levels, top to bottom.
    pub levels: Vec<LevelRecord>,
    /// `L_0` entries in level order.
    pub top: Vec<Entry>,
}

impl Encode for Manifest {
    fn encoded_len(&self) -> usize {
        let mut v = Vec::new();
        self.encode_body(&mut v);
        v.len() + 4
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let start = out.len();
        self.encode_body(out);
        let crc = masked_crc32c(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
}

impl Manifest {
    fn encode_body(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC.to_le_bytes());
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.block_bytes.to_le_bytes());
        out.extend_from_slice(&self.size_ratio.to_le_bytes());
        out.extend_from_slice(&self.kappa0_blocks.to_le_bytes());
        out.extend_from_slice(&self.key_bytes_max.to_le_bytes());
        out.extend_from_slice(&self.value_bytes_max.to_le_bytes());
        out.extend_from_slice(&self.next_file_id.to_le_bytes());
        let c = &self.counters;
        for v in [c.inserts, c.deletes, c.insert_bytes, c.cancelled_bytes] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        put_varint(out, self.levels.len() as u64);
        for l in &self.levels {
            put_varint(out, l.label);
            out.extend_from_slice(&l.file_id.to_le_bytes());
            out.extend_from_slice(&l.blocks.to_le_bytes());
            let s = &l.stats;
            for v in [s.data_bytes, s.fence_bytes, s.leading_fence_bytes, s.inserts, s.deletes] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        put_varint(out, self.top.len() as u64);
        for e in &self.top {
            e.encode_to(out);
        }
    }
}

impl Decode for Manifest {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        if input.len() < 4 {
            return Err(DecodeError::new(0, "manifest shorter than its checksum"));
        }
        let (body, crc) = input.split_at(input.len() - 4);
        if masked_crc32c(body) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err(DecodeError::new(body.len(), "manifest checksum mismatch"));
        }
        let mut r = Reader::new(body);
        if r.u32()? != MAGIC {
            return Err(DecodeError::new(0, "not an fdtree manifest"));
        }
        let version = r.u32()?;
        if version != VERSION {
            return Err(DecodeError::new(4, format!("manifest version {version} unsupported")));
        }
        let block_bytes = r.u32()?;
        let size_ratio = r.u32()?;
        let kappa0_blocks = r.u64()?;
        let key_bytes_max = r.u32()?;
        let value_bytes_max = r.u32()?;
        let next_file_id = r.u32()?;
        let counters = Counters {
            inserts: r.u64()?,
            deletes: r.u64()?,
            insert_bytes: r.u64()?,
            cancelled_bytes: r.u64()?,
        };
        let n = r.varint()?;
        if n > LEVELS_MAX {
            return Err(r.error(format!("{n} levels")));
        }
        let mut levels = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let label = r.varint()?;
            let file_id = r.u32()?;
            let blocks = r.u32()?;
            let stats = LevelStats {
                data_bytes: r.u64()?,
                fence_bytes: r.u64()?,
                leading_fence_bytes: r.u64()?,
                inserts: r.u64()?,
                deletes: r.u64()?,
            };
            levels.push(LevelRecord { label, file_id, blocks, stats });
        }
        let n = r.varint()?;
        if n > TOP_ENTRIES_MAX || n > r.remaining() as u64 {
            return Err(r.error(format!("{n} L_0 entries")));
        }
        let mut top = Vec::with_capacity(n as usize);
        for _ in 0..n {
            top.push(Entry::decode_from(&mut r, KEY_BYTES_MAX, VALUE_BYTES_MAX)?);
        }
        r.finish()?;
        Ok(Manifest {
            block_bytes,
            size_ratio,
            kappa0_blocks,
            key_bytes_max,
            value_bytes_max,
            next_file_id,
            counters,
            levels,
            top,
        })
    }
}

impl Tree {
    /// The manifest describing the tree now.
    pub fn manifest(&self) -> Manifest {
        Manifest {
            block_bytes: self.params.block_bytes,
            size_ratio: self.params.size_ratio as u32,
            kappa0_blocks: self.params.kappa0_blocks,
            key_bytes_max: self.params.key_bytes_max as u32,
            value_bytes_max: self.params.value_bytes_max as u32,
            next_file_id: self.next_file_id,
            counters: self.counters,
            levels: self
                .levels
                .iter()
                .map(|l| LevelRecord {
                    label: l.label as u64,
                    file_id: l.file_id,
                    blocks: l.blocks,
                    stats: l.stats,
                })
                .collect(),
            top: self.top.entries(),
        }
    }

    /// Writes the manifest atomically, then reclaims the level files that only the previous
    /// manifest referred to.
    pub fn checkpoint(&mut self) -> Result<()> {
        let storage = self.store.storage().clone();
        let bytes = self.manifest().encode();
        let tmp = storage.open(MANIFEST_TMP_NAME, OpenMode::Create)?;
        tmp.set_len(0)?;
        tmp.write_all_at(0, &bytes)?;
        tmp.sync_data()?;
        storage.rename(MANIFEST_TMP_NAME, MANIFEST_FILE_NAME)?;
        storage.sync_dir()?;
        for id in std::mem::take(&mut self.obsolete_files) {
            self.store.remove(id)?;
        }
        Ok(())
    }

    /// Opens the tree a manifest describes, or an empty tree if there is none. Level files
    /// the manifest does not mention (left by a crash) are removed.
    pub fn open(params: Params, store: BlockStore, persistent: bool) -> Result<Tree> {
        let storage = store.storage().clone();
        let mut tree = Tree::new(params, store);
        tree.obsolete_files = Vec::new();
        tree.defer_reclaim = persistent;
        if !persistent || !storage.exists(MANIFEST_FILE_NAME)? {
            return Ok(tree);
        }
        let path = storage.path_of(MANIFEST_FILE_NAME);
        let bytes = storage.read_all(MANIFEST_FILE_NAME)?;
        let m = Manifest::decode(&bytes).map_err(|e| e.at(&path, 0))?;
        let p = &tree.params;
        if (m.block_bytes, u64::from(m.size_ratio), m.kappa0_blocks)
            != (p.block_bytes, p.size_ratio, p.kappa0_blocks)
            || (m.key_bytes_max as usize, m.value_bytes_max as usize)
                != (p.key_bytes_max, p.value_bytes_max)
        {
            return Err(Error::Incompatible {
                reason: format!(
                    "the fdtree was created with block_bytes {}, gamma {}, kappa_0 {}, key/value \
                     limits {}/{}; the options given differ",
                    m.block_bytes,
                    m.size_ratio,
                    m.kappa0_blocks,
                    m.key_bytes_max,
                    m.value_bytes_max
                ),
            });
        }
        let mut known = BTreeSet::new();
        let mut prev_label = 0;
        for r in &m.levels {
            let label = usize::try_from(r.label).unwrap_or(usize::MAX);
            if label <= prev_label || label > 4096 || r.file_id >= m.next_file_id || r.blocks == 0 {
                return Err(Error::corruption(&path, 0, format!("bad level record {r:?}")));
            }
            prev_label = label;
            let file = tree.store.open_existing(r.file_id)?;
            let expected = u64::from(r.blocks) * u64::from(tree.params.block_bytes);
            if file.len()? != expected {
                return Err(Error::corruption(
                    storage.path_of(file.name()),
                    0,
                    format!("level file is {} bytes, the manifest says {expected}", file.len()?),
                ));
            }
            known.insert(r.file_id);
            tree.levels.push(DiskLevel {
                label,
                file_id: r.file_id,
                file,
                blocks: r.blocks,
                stats: r.stats,
            });
        }
        let mut top = TopLevel::new();
        for e in m.top {
            top.add_entry(e);
        }
        tree.top = top;
        tree.counters = m.counters;
        tree.next_file_id = m.next_file_id;
        for name in storage.list()? {
            if let Some(id) = parse_level_file_name(&name)
                && !known.contains(&id)
            {
                storage.remove(&name)?;
            }
        }
        Ok(tree)
    }
}

fn parse_level_file_name(name: &str) -> Option<u32> {
    name.strip_prefix("fd-")?.strip_suffix(".lvl")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::BlockPtr;

    fn sample() -> Manifest {
        Manifest {
            block_bytes: 4096,
            size_ratio: 8,
            kappa0_blocks: 16,
            key_bytes_max: 1024,
            value_bytes_max: 4096,
            next_file_id: 7,
            counters: Counters { inserts: 10, deletes: 2, insert_bytes: 300, cancelled_bytes: 60 },
            levels: vec![LevelRecord {
                label: 2,
                file_id: 5,
                blocks: 3,
                stats: LevelStats { data_bytes: 9, fence_bytes: 8, ..LevelStats::default() },
            }],
            top: vec![
                Entry::Fence { key: vec![], ptr: BlockPtr { file: 5, index: 0 } },
                Entry::Insert { key: b"a".to_vec(), value: b"1".to_vec() },
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
    fn corruption_is_detected() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(Manifest::decode(&bad).is_err(), "flip at {i} undetected");
        }
        for len in 0..bytes.len() {
            assert!(Manifest::decode(&bytes[..len]).is_err());
        }
    }

    #[test]
    fn level_file_names_parse() {
        assert_eq!(parse_level_file_name(&crate::store::level_file_name(42)), Some(42));
        assert_eq!(parse_level_file_name("fdtree.manifest"), None);
    }
}
