//! Section 4.3's storage reclamation: two equal partitions, pages written sequentially in
//! the active one; when it fills, every buffer is emptied ("empty all the buffers"), the
//! valid nodes are copied to the other partition, and the first is erased.
//!
//! **Files.** A partition is a buffer file (`latree.buffers`, `latree.buffers.1`) and, when
//! nodes are out of place (raw NAND), a node file (`latree.nodes`, `latree.nodes.1`). With
//! nodes in place (SSD profiles, `host`) the node file is not partitioned: the paper does
//! not reclaim SSD nodes, and the copy-on-write slots of a crash-consistent tree are reused
//! (`node/store.rs`), but the buffer file still is, or it would only grow.
//!
//! **Rule** (checked after every `put`, `delete` and `get`, never inside one): the active
//! partition's bytes `used` (buffer pages written, plus node slots written out of place)
//! are reclaimed once `used > max(partition_bytes, 2 * live)`, where `live` is the bytes a
//! reclamation keeps (live buffer fragment bytes plus, out of place, live node slots). So
//! garbage exceeds live data at each reclamation (a reclamation copies at most as much as
//! was written since the last), and small trees wait for `partition_bytes`.
//!
//! **Space bound.** A partition holds at most `max(partition_bytes, 2 * live) + W` bytes,
//! `W` the writes of one tree operation (its emptying cascade; the check runs between
//! operations), plus, while reclaiming, the emptying's buffer redistributions; at most two
//! partitions exist. A crash-consistent tree erases the old partition only once a checkpoint
//! taken after the reclamation is committed: if the active partition fills again before
//! that, the reclamation is deferred (counted) and the partition grows until the commit
//! ([`LaTree::wants_checkpoint`] asks the engine for one).
//!
//! **Steps** ([`LaTree::reclaim`]): erase the other partition's files (truncate to 0); out of
//! place, make the node store write there and drain the old one (`node/relocate.rs`); empty
//! every buffer (one forced pass from the root over every inner node: each buffer is taken,
//! merged with its parent's batch and passed down to the leaves; node writes go to the new
//! partition); write back the cache's dirty nodes; copy the nodes still in the old
//! partition; put the buffer pool on an empty store in the new partition. The old
//! partition's files are then erased, at once (`crash_consistent = false`) or after the next
//! committed checkpoint.
//!
//! **Crash safety.** The last committed checkpoint names one partition and nothing of it is
//! written during a reclamation: node writes go to the other partition (out of place) or to
//! copy-on-write slots (in place), buffer units are appended past the checkpoint's pages and
//! then to the other partition. The other partition is erased only when no durable
//! checkpoint names it: after a commit of a checkpoint taken after the reclamation, or when
//! the tree was opened from a checkpoint naming the active one. A checkpoint is never taken
//! in the middle of a reclamation (refused), so it names one partition.

use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::{Error, Result};
use lamina_storage::device::CostModel;
use lamina_storage::{OpenMode, Storage, StorageFile};

use super::core::{LaTree, buffer_file, node_file};
use crate::buffer::BufferStore;
use crate::node::{Node, Placement};

/// NAND erase block of the paper's flash (Table 2: 16 KB), the unit erases are counted in.
pub const ERASE_BLOCK_BYTES: u64 = 16 << 10;
/// Modeled time of one block erase on `nand-toshiba`: 2 ms. Table 2 gives no erase time; this
/// is the typical block erase time of small-block SLC NAND datasheets (an assumption). SSDs
/// erase inside the device: 0 there.
pub const ERASE_BLOCK_NS: u64 = 2_000_000;
/// Most forced passes from the root a reclamation makes to empty every buffer (one suffices:
/// a bound against a defect looping forever).
pub const EMPTY_ALL_PASSES_MAX: u32 = 8;

/// Counters of reclamation (exact, deterministic).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReclaimCounters {
    /// Partitions reclaimed.
    pub reclamations: u64,
    /// Times a reclamation was due but the other partition awaited a committed checkpoint.
    pub deferred: u64,
    /// Buffers emptied by reclamations (included in `TreeCounters::emptyings`).
    pub buffers_emptied: u64,
    /// Valid nodes copied to the other partition (the paper's page copies).
    pub nodes_copied: u64,
    /// Node reads during reclamations (emptying and copies).
    pub node_reads: u64,
    /// Node writes during reclamations (emptying, write-back and copies).
    pub node_writes: u64,
    /// Buffer pages read during reclamations (emptying).
    pub buffer_pages_read: u64,
    /// Bytes erased (file bytes freed by truncating a partition's files).
    pub bytes_erased: u64,
    /// Erase blocks those bytes span ([`ERASE_BLOCK_BYTES`], rounded up per file).
    pub erase_blocks: u64,
    /// Modeled time of the erases (`erase_blocks * ERASE_BLOCK_NS` on raw NAND, else 0). The
    /// reads and writes of a reclamation are real I/O, in the storage's accounting.
    pub erase_ns: u64,
}

/// What became of the partition that is not active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retired {
    /// Its files are empty.
    Erased,
    /// No durable checkpoint names it, but its files may hold leftovers (after an open).
    Erasable,
    /// Just reclaimed: the committed checkpoint names it; the next checkpoint will not.
    AwaitingCheckpoint,
    /// A checkpoint naming the active partition was taken; erasable once it is committed.
    AwaitingCommit,
}

/// One open file of the other partition.
#[derive(Debug)]
pub(super) struct SpareFile {
    file: Arc<dyn StorageFile>,
    path: PathBuf,
}

/// The other partition's files.
#[derive(Debug)]
pub(super) struct Spare {
    nodes: Option<SpareFile>,
    buffers: SpareFile,
}

impl Spare {
    /// Opens (creating if missing) the files of `partition` for a node store `placement`d.
    pub fn open(storage: &dyn Storage, placement: Placement, partition: u8) -> Result<Self> {
        let open = |name: &str| -> Result<SpareFile> {
            Ok(SpareFile {
                file: storage.open(name, OpenMode::Create)?,
                path: storage.path_of(name),
            })
        };
        let nodes = match placement {
            Placement::OutOfPlace => Some(open(node_file(placement, partition))?),
            Placement::InPlace | Placement::CopyOnWrite => None,
        };
        Ok(Spare { nodes, buffers: open(buffer_file(partition))? })
    }

    fn files(&self) -> impl Iterator<Item = &SpareFile> {
        self.nodes.iter().chain(std::iter::once(&self.buffers))
    }
}

/// The active partition and the other one.
#[derive(Debug)]
pub(super) struct Partitions {
    /// 0 or 1.
    pub active: u8,
    /// The other partition's files (`None` only while `LaTree::open` validates).
    pub spare: Option<Spare>,
    pub retired: Retired,
}

impl Partitions {
    pub fn new(active: u8, spare: Option<Spare>, retired: Retired) -> Self {
        assert!(active <= 1);
        Partitions { active, spare, retired }
    }

    fn spare(&self) -> &Spare {
        self.spare.as_ref().expect("the other partition's files are open")
    }
}

/// How full the active partition is ([`LaTree::partition_usage`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionUsage {
    /// The active partition (0 or 1).
    pub active: u8,
    /// Bytes written in it: buffer pages, plus node slots when nodes are out of place.
    pub used_bytes: u64,
    /// Bytes a reclamation would keep: live buffer fragments, plus live node slots out of
    /// place.
    pub live_bytes: u64,
    /// `used_bytes` past this triggers a reclamation: `max(partition_bytes, 2 live_bytes)`.
    pub limit_bytes: u64,
    /// The other partition's state.
    pub retired: Retired,
}

impl LaTree {
    /// How full the active partition is.
    pub fn partition_usage(&self) -> PartitionUsage {
        let buffers = self.pool.stats().store;
        let page_bytes = u64::from(self.options.buffer_page_bytes);
        let mut used_bytes = buffers.pages * page_bytes;
        let mut live_bytes = buffers.live_bytes;
        let store = self.nodes.store();
        if store.options().placement == Placement::OutOfPlace {
            let nodes = store.stats();
            let node_bytes = u64::from(self.options.node_bytes);
            used_bytes += nodes.slots * node_bytes;
            live_bytes += (nodes.slots - nodes.dead_slots) * node_bytes;
        }
        let limit_bytes = self.options.partition_bytes.max(live_bytes.saturating_mul(2));
        PartitionUsage {
            active: self.partitions.active,
            used_bytes,
            live_bytes,
            limit_bytes,
            retired: self.partitions.retired,
        }
    }

    /// Whether the engine should take a checkpoint soon: a reclamation's old partition is
    /// erased only after a checkpoint taken since is committed.
    pub fn wants_checkpoint(&self) -> bool {
        self.partitions.retired == Retired::AwaitingCheckpoint
    }

    /// Reclaims the active partition if the rule of the module docs says so.
    pub(super) fn reclaim_if_due(&mut self) -> Result<()> {
        let usage = self.partition_usage();
        if usage.used_bytes > usage.limit_bytes {
            self.reclaim()?;
        }
        Ok(())
    }

    /// Reclaims the active partition now (module docs): returns `false`, changing nothing
    /// but a counter, if the other partition still awaits a committed checkpoint. An error
    /// leaves the tree unusable, as an error inside an emptying does (nothing is rolled
    /// back; the last committed checkpoint is intact).
    pub fn reclaim(&mut self) -> Result<bool> {
        if self.nodes.store().is_relocating() {
            return Err(refused("a reclamation failed earlier"));
        }
        // Also while a checkpoint awaits its commit (the engine syncs it outside the tree
        // lock): the partition it names must stay as it is until then.
        if self.checkpoint_in_flight
            || matches!(
                self.partitions.retired,
                Retired::AwaitingCheckpoint | Retired::AwaitingCommit
            )
        {
            self.counters.reclaim.deferred += 1;
            return Ok(false);
        }
        // Even if known erased: a crash may have lost an erase's truncation.
        self.erase_spare()?;
        let nodes_before = self.nodes.store().stats();
        let pages_read_before = self.pool.stats().store.pages_read;
        let emptyings_before = self.counters.emptyings;
        if let Some(spare) = &self.partitions.spare().nodes {
            self.nodes.store().relocate_begin(spare.file.clone(), spare.path.clone())?;
        }
        self.empty_all_buffers()?;
        self.nodes.flush()?;
        let old_nodes = if self.nodes.store().is_relocating() {
            self.nodes.store().relocate_remaining()?;
            let (file, path) = self.nodes.store().relocate_end();
            Some(SpareFile { file, path })
        } else {
            None
        };
        let spare = &self.partitions.spare().buffers;
        let page_bytes = self.options.buffer_page_bytes;
        let store = BufferStore::on_erased(spare.file.clone(), spare.path.clone(), page_bytes)?;
        let pages_read = self.pool.stats().store.pages_read - pages_read_before;
        let old = self.pool.replace_store(store);
        let old_buffers = SpareFile { file: old.file().clone(), path: old.path().to_path_buf() };
        self.partitions.spare = Some(Spare { nodes: old_nodes, buffers: old_buffers });
        self.partitions.active = 1 - self.partitions.active;
        self.partitions.retired = Retired::AwaitingCheckpoint;
        let nodes_after = self.nodes.store().stats();
        let counters = &mut self.counters.reclaim;
        counters.reclamations += 1;
        counters.buffers_emptied += self.counters.emptyings - emptyings_before;
        counters.nodes_copied += nodes_after.nodes_relocated - nodes_before.nodes_relocated;
        counters.node_reads += nodes_after.node_reads - nodes_before.node_reads;
        counters.node_writes += nodes_after.node_writes - nodes_before.node_writes;
        counters.buffer_pages_read += pages_read;
        if !self.options.crash_consistent {
            // Nothing waits for a commit: erase now (a crash before the next checkpoint may
            // then lose the committed one, as in-place writes may; see the README).
            self.erase_spare()?;
        }
        Ok(true)
    }

    /// A checkpoint naming the active partition was taken.
    pub(super) fn partitions_checkpoint_taken(&mut self) {
        if self.partitions.retired == Retired::AwaitingCheckpoint {
            self.partitions.retired = Retired::AwaitingCommit;
        }
    }

    /// The last checkpoint taken is committed: the other partition is erased if nothing
    /// durable names it any more. A failed erase is retried before the partition is reused
    /// (the leftovers are garbage nothing reaches).
    pub(super) fn partitions_committed(&mut self) {
        if matches!(self.partitions.retired, Retired::AwaitingCommit | Retired::Erasable)
            && self.erase_spare().is_err()
        {
            self.partitions.retired = Retired::Erasable;
        }
    }

    /// Truncates the other partition's files to 0 (the erase), counting what was freed.
    fn erase_spare(&mut self) -> Result<()> {
        assert!(
            matches!(self.partitions.retired, Retired::Erased | Retired::Erasable)
                || self.partitions.retired == Retired::AwaitingCommit
                || !self.options.crash_consistent,
            "the other partition is erased only when no durable checkpoint names it"
        );
        let nand = matches!(self.options.device.model, CostModel::Nand(_));
        for spare in self.partitions.spare().files() {
            let len = spare.file.len()?;
            if len == 0 {
                continue;
            }
            spare.file.set_len(0)?;
            let counters = &mut self.counters.reclaim;
            counters.bytes_erased += len;
            let blocks = len.div_ceil(ERASE_BLOCK_BYTES);
            counters.erase_blocks += blocks;
            if nand {
                counters.erase_ns += blocks * ERASE_BLOCK_NS;
            }
        }
        self.partitions.retired = Retired::Erased;
        Ok(())
    }

    /// Empties every buffer (`force_empty`: each buffered node empties, and emptying walks
    /// every inner node, `empty.rs`).
    fn empty_all_buffers(&mut self) -> Result<()> {
        let _span = tracing::debug_span!("latree_empty_all_buffers").entered();
        self.force_empty = true;
        let result = self.empty_all_passes();
        self.force_empty = false;
        result
    }

    fn empty_all_passes(&mut self) -> Result<()> {
        for _ in 0..EMPTY_ALL_PASSES_MAX {
            if self.pool.stats().buffers == 0 {
                return Ok(());
            }
            let root = self.root;
            assert!(
                matches!(*self.nodes.get(root)?, Node::Inner(_)),
                "buffers exist only below an inner root"
            );
            let pieces = self.empty_node(root)?;
            self.finish_root(pieces)?;
        }
        if self.pool.stats().buffers == 0 {
            return Ok(());
        }
        Err(refused(&format!(
            "{} buffers still hold entries after {EMPTY_ALL_PASSES_MAX} passes",
            self.pool.stats().buffers
        )))
    }
}

/// The error of a reclamation that cannot go on (the tree is then unusable).
fn refused(reason: &str) -> Error {
    Error::Io {
        context: format!("reclaiming the LA-tree's partition: {reason}"),
        source: std::io::Error::other("reclamation failed"),
    }
}
