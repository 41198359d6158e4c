//! Durability of an NB-tree (the paper leaves it out; lamina adds it the way its other
//! engines do, `lamina-fdtree/src/persist`).
//!
//! - Every modification is appended to the group-commit log before it is applied to the
//!   active memtable (the root's in-memory d-tree, section 4).
//! - Each change the flush job makes to the s-tree (a child's new d-tree, a split) is
//!   committed: the new d-tree files were synced when written; the manifest is written to a
//!   new file `nbtree-<n>.man` and synced, the directory is synced, and the superblock
//!   (`nbtree.super`, two alternating slots) is pointed at it. Only then are the replaced
//!   d-trees marked for removal (each file goes once its last reader leaves) and the
//!   previous manifest file removed.
//! - When the frozen memtable is wholly in the root's children, the commit also advances
//!   `flushed_seq` (after syncing the log, so that a crash never renumbers records at or
//!   below it) and the log is truncated to it.
//! - A crash between commits leaves new d-tree files no manifest names: recovery removes
//!   every `nb-*.dt` and `nbtree-*.man` file the committed manifest does not name, so
//!   nothing leaks, and replays the log after `flushed_seq` (entries of a frozen memtable
//!   partly flushed before the crash are flushed again: a newer entry always shadows the
//!   same entry in a child, so this is idempotent).
//! - A missing or damaged superblock or manifest, or a d-tree the manifest names that is
//!   missing or damaged, is `Corruption` naming the file; a database known to exist
//!   (`OpenIntent::MustExist`) never opens as a new empty one.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::codec::{Decode, Encode, Reader};
use lamina_core::{Error, Result};
use lamina_storage::log::SegmentLog;
use lamina_storage::{OpenMode, SlotState, Storage, Superblock};

use crate::dtree::{self, DTree};
use crate::manifest::{Manifest, NodeRecord};
use crate::stree::{SNode, STree};

/// Superblock file.
pub const SUPERBLOCK_FILE_NAME: &str = "nbtree.super";
/// Block size of the superblock (its payload names the manifest file).
const SUPERBLOCK_BYTES: usize = 4096;
/// Owner id written into the superblock's blocks.
const SUPERBLOCK_OWNER: u64 = u64::from_le_bytes(*b"NBTREE01");
/// File name prefix of the log's segments.
pub const LOG_FILE_PREFIX: &str = "nbtree_wal";

/// File name of manifest number `n`.
pub fn manifest_file_name(n: u64) -> String {
    format!("nbtree-{n:016x}.man")
}

fn parse_manifest_file_name(name: &str) -> Option<u64> {
    let hex = name.strip_prefix("nbtree-")?.strip_suffix(".man")?;
    (hex.len() == 16).then(|| u64::from_str_radix(hex, 16).ok()).flatten()
}

/// The superblock's payload: which manifest file is current, its length and checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pointer {
    number: u64,
    len: u64,
    crc: u32,
}

impl Pointer {
    fn encode(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20);
        out.extend_from_slice(&self.number.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
        out
    }

    fn decode(input: &[u8]) -> std::result::Result<Pointer, lamina_core::codec::DecodeError> {
        let mut r = Reader::new(input);
        let p = Pointer { number: r.u64()?, len: r.u64()?, crc: r.u32()? };
        r.finish()?;
        Ok(p)
    }
}

/// The durable side of a persistent tree.
#[derive(Debug)]
pub struct Persist {
    storage: Arc<dyn Storage>,
    superblock: Superblock,
    manifest_number: u64,
    /// The log is known synced through here (see [`Manifest::log_synced_seq`]).
    log_synced_seq: u64,
}

impl Persist {
    /// Records that the log is synced through `seq` (a closed log's last record): the next
    /// commit says so.
    pub fn log_synced_through(&mut self, seq: u64) {
        self.log_synced_seq = self.log_synced_seq.max(seq);
    }

    /// Commits `manifest` (module documentation); `log` is synced first when given, and the
    /// manifest then records the log synced through its last record (else the last such
    /// record known, `log_synced_seq`, which a clean close sets to the log's end).
    pub fn commit(&mut self, log: Option<&SegmentLog>, manifest: &Manifest) -> Result<()> {
        if let Some(log) = log {
            // Read before the sync: everything appended up to here is synced by it.
            let appended_seq = log.next_seq() - 1;
            log.sync()?;
            self.log_synced_seq = self.log_synced_seq.max(appended_seq);
        }
        self.log_synced_seq = self.log_synced_seq.max(manifest.flushed_seq);
        let manifest = &Manifest { log_synced_seq: self.log_synced_seq, ..manifest.clone() };
        let number = self.manifest_number + 1;
        let name = manifest_file_name(number);
        let bytes = manifest.encode();
        let file = self.storage.open(&name, OpenMode::Create)?;
        file.set_len(0)?;
        file.write_all_at(0, &bytes)?;
        file.sync_data()?;
        self.storage.sync_dir()?;
        let crc = lamina_core::checksum::masked_crc32c(&bytes);
        let pointer = Pointer { number, len: bytes.len() as u64, crc };
        self.superblock.commit(&pointer.encode())?;
        let previous = manifest_file_name(self.manifest_number);
        self.manifest_number = number;
        if self.storage.exists(&previous)? {
            self.storage.remove(&previous)?;
        }
        Ok(())
    }
}

/// The manifest of `tree`.
pub fn manifest_of(
    tree: &STree,
    fanout: u32,
    sigma_bytes: u64,
    next_dtree_id: u64,
    flushed_seq: u64,
) -> Manifest {
    let nodes = tree
        .nodes
        .values()
        .map(|n| NodeRecord {
            id: n.id,
            dtree_id: n.dtree.as_ref().map_or(0, |d| d.id()),
            live_bytes: n.live_bytes,
            live_entries: n.live_entries,
            flushed_through: n.flushed_through.clone(),
            keys: n.keys.clone(),
            children: n.children.clone(),
        })
        .collect();
    Manifest {
        fanout,
        sigma_bytes,
        next_node_id: tree.next_node_id,
        next_dtree_id,
        flushed_seq,
        log_synced_seq: flushed_seq, // `Persist::commit` sets what it knows
        root: tree.root,
        nodes,
    }
}

/// What recovery found.
#[derive(Debug)]
pub struct Recovered {
    /// The s-tree, its d-trees open.
    pub tree: STree,
    /// The durable side.
    pub persist: Persist,
    /// The committed manifest (the tree's parameters, `flushed_seq`, `next_dtree_id`).
    pub manifest: Manifest,
    /// D-tree and manifest files the committed state does not name (written before a
    /// crash, before their commit). Recovery itself writes nothing; the caller removes them
    /// with [`remove_files`] once the whole open is validated (the log included), so that a
    /// refused open changes nothing.
    pub unnamed_files: Vec<String>,
}

/// Opens the committed state of the tree in `storage`, or creates an empty one (unless
/// `must_exist`), with `fanout` and `sigma_bytes` for a new tree.
pub fn recover(
    storage: &Arc<dyn Storage>,
    must_exist: bool,
    fanout: u32,
    sigma_bytes: u64,
) -> Result<Recovered> {
    let super_path = storage.path_of(SUPERBLOCK_FILE_NAME);
    if must_exist && !storage.exists(SUPERBLOCK_FILE_NAME)? {
        return Err(Error::corruption(&super_path, 0, "the superblock is missing"));
    }
    let superblock = Superblock::open(
        storage.clone(),
        SUPERBLOCK_FILE_NAME,
        SUPERBLOCK_OWNER,
        SUPERBLOCK_BYTES,
    )?;
    let Some(committed) = superblock.current().cloned() else {
        if must_exist || superblock.slots().iter().any(|s| matches!(s, SlotState::Damaged { .. })) {
            return Err(Error::corruption(&super_path, 0, "no valid commit in the superblock"));
        }
        return create(storage, superblock, fanout, sigma_bytes);
    };
    let pointer = Pointer::decode(&committed.payload).map_err(|e| e.at(&super_path, 0))?;
    let name = manifest_file_name(pointer.number);
    let path = storage.path_of(&name);
    if !storage.exists(&name)? {
        // A commit removes the manifest it replaces: with the other slot damaged, the
        // superblock fell back to an older commit whose files were replaced since (the
        // newest commit was lost to damage, not to a crash, which leaves that manifest).
        let older = superblock.slots().iter().any(|s| matches!(s, SlotState::Damaged { .. }));
        let reason = if older {
            "the manifest the superblock names is missing: the superblock's newest commit is \
             damaged, and the older commit it fell back to names files replaced since"
        } else {
            "the manifest the superblock names is missing"
        };
        return Err(Error::corruption(&path, 0, reason));
    }
    let bytes = storage.read_all(&name)?;
    if bytes.len() as u64 != pointer.len
        || lamina_core::checksum::masked_crc32c(&bytes) != pointer.crc
    {
        return Err(Error::corruption(
            &path,
            0,
            "the manifest does not match its superblock record",
        ));
    }
    let manifest = Manifest::decode(&bytes).map_err(|e| e.at(&path, 0))?;
    let tree = open_tree(storage, &manifest, &path)?;
    let persist = Persist {
        storage: storage.clone(),
        superblock,
        manifest_number: pointer.number,
        log_synced_seq: manifest.log_synced_seq,
    };
    let unnamed_files = unnamed_files(storage, &tree, pointer.number)?;
    Ok(Recovered { tree, persist, manifest, unnamed_files })
}

fn create(
    storage: &Arc<dyn Storage>,
    superblock: Superblock,
    fanout: u32,
    sigma_bytes: u64,
) -> Result<Recovered> {
    let tree = STree::new();
    // Leftovers of a creation that crashed (nothing was committed: creating writes anyway).
    remove_files(storage, &unnamed_files(storage, &tree, 0)?)?;
    let manifest = manifest_of(&tree, fanout, sigma_bytes, 1, 0);
    let mut persist =
        Persist { storage: storage.clone(), superblock, manifest_number: 0, log_synced_seq: 0 };
    persist.commit(None, &manifest)?;
    Ok(Recovered { tree, persist, manifest, unnamed_files: Vec::new() })
}

fn open_tree(storage: &Arc<dyn Storage>, m: &Manifest, path: &std::path::Path) -> Result<STree> {
    let bad = |reason: String| Error::corruption(path, 0, reason);
    let mut nodes = BTreeMap::new();
    for r in &m.nodes {
        let dtree = match r.dtree_id {
            0 => None,
            id => Some(DTree::open(storage.clone(), id)?),
        };
        if let Some(d) = &dtree
            && (d.entries() < r.live_entries || d.id() >= m.next_dtree_id)
        {
            return Err(bad(format!("s-node {} disagrees with its d-tree {}", r.id, d.id())));
        }
        if dtree.is_none() && (r.live_entries != 0 || r.live_bytes != 0) {
            return Err(bad(format!("s-node {} has live entries but no d-tree", r.id)));
        }
        let node = SNode {
            id: r.id,
            keys: r.keys.clone(),
            children: r.children.clone(),
            dtree,
            flushed_through: r.flushed_through.clone(),
            live_bytes: r.live_bytes,
            live_entries: r.live_entries,
        };
        if r.id >= m.next_node_id || nodes.insert(r.id, node).is_some() {
            return Err(bad(format!("s-node id {} repeated or out of range", r.id)));
        }
    }
    let tree = STree { nodes, root: m.root, next_node_id: m.next_node_id };
    crate::verify::check_structure(&tree, m.fanout as usize, 1).map_err(bad)?;
    Ok(tree)
}

/// The d-tree and manifest files the committed state does not name.
fn unnamed_files(
    storage: &Arc<dyn Storage>,
    tree: &STree,
    manifest_number: u64,
) -> Result<Vec<String>> {
    let named: std::collections::BTreeSet<u64> = tree.dtrees().map(|d| d.id()).collect();
    let mut unnamed = Vec::new();
    for name in storage.list()? {
        let stale = match (dtree::parse_file_name(&name), parse_manifest_file_name(&name)) {
            (Some(id), _) => !named.contains(&id),
            (_, Some(n)) => n != manifest_number,
            _ => false,
        };
        if stale {
            unnamed.push(name);
        }
    }
    Ok(unnamed)
}

/// Removes `names` (files [`recover`] found the committed state does not name).
pub fn remove_files(storage: &Arc<dyn Storage>, names: &[String]) -> Result<()> {
    for name in names {
        storage.remove(name)?;
    }
    if !names.is_empty() {
        storage.sync_dir()?;
    }
    Ok(())
}
