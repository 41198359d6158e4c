//! Checkpoints of the tree (issue 18, "Durability: structure checkpointed via the
//! superblock"; byte layout in `docs/format/latree-checkpoint.md`).
//!
//! - [`LaTree::checkpoint`] writes everything the tree holds only in memory (the buffer
//!   pool's tails, dirty nodes), syncs its files, and returns a [`TreeCheckpoint`]: what
//!   [`LaTree::open`] needs to rebuild exactly this state. Between two checkpoints nothing
//!   the last committed checkpoint reaches is overwritten (with `crash_consistent`, nodes it
//!   names are written to another slot first, `node/store.rs`; buffer pages are never
//!   rewritten, and the pages a reopened tree appends to lie past the checkpoint's), so a
//!   crash at any point reopens the last committed checkpoint intact.
//! - The caller (the engine) commits the encoded checkpoint durably (superblock), then calls
//!   [`LaTree::checkpoint_committed`]: space only the previous checkpoints reached may be
//!   reused from then on. "Committed" always means the last checkpoint returned: a
//!   checkpoint taken and never committed (the superblock write failed) is simply replaced
//!   by the next one, and the space it would have freed waits for that one's commit.
//! - [`LaTree::open`] rebuilds the tree from a decoded checkpoint, validating it against the
//!   options and the files: the shape options must match (else `Incompatible`), a node file
//!   or buffer file shorter than the checkpoint says, a damaged root or a damaged buffer
//!   chain is `Corruption` naming the file at open (every buffer's chain is read and checked
//!   then); a damaged node below the root is `Corruption` at its first read (nodes are
//!   checksummed and carry their id). ADAPT's registers start empty after a reopen: they
//!   describe lookups since the last emptying, which a checkpoint does not keep (the first
//!   lookups after a reopen are counted afresh; the buffers' entries and statistics are
//!   exact). The tree's counters restart at 0.

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, put_varint};
use lamina_core::{Error, Result};
use lamina_storage::Storage;

use super::LaTree;
use super::checkpoint_files::CheckpointFiles;
use super::core::{buffer_file, node_file, node_store_options};
use super::options::LaTreeOptions;
use super::reclaim::{Partitions, Retired, Spare};
use crate::buffer::{
    BufferId as PoolBufferId, BufferPool, BufferRoot, BufferStore, FragmentAddr, POOL_BUFFERS_MAX,
    STORE_PAGES_MAX,
};
use crate::node::snapshot::SNAPSHOT_PART_BYTES_MAX;
use crate::node::{Node, NodeId, NodeLayout, NodeStore, StoreSnapshot};

/// Version of [`TreeCheckpoint`]'s encoding (2 added the active partition; version 1,
/// partition 0, is still read).
pub const CHECKPOINT_FORMAT_VERSION: u8 = 2;
/// Highest root level a checkpoint may name (a tree of fanout 2 this tall holds more than
/// any file).
pub const ROOT_LEVEL_MAX: u8 = 64;
/// Flag bit: the tree buffers its updates (`LaTreeOptions::buffered`).
const FLAG_BUFFERED: u8 = 1;

/// The options a checkpoint was written with that decide how its files are read: opening
/// with others is `Incompatible`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointShape {
    /// Bytes of a node.
    pub node_bytes: u32,
    /// Longest key.
    pub key_bytes_max: u32,
    /// Longest value.
    pub value_bytes_max: u32,
    /// `K`.
    pub levels_per_buffer: u8,
    /// Whether updates are buffered.
    pub buffered: bool,
    /// Page size of the buffer store.
    pub buffer_page_bytes: u32,
}

impl CheckpointShape {
    fn of(options: &LaTreeOptions) -> Self {
        CheckpointShape {
            node_bytes: options.node_bytes,
            key_bytes_max: u32::try_from(options.key_bytes_max).unwrap_or(u32::MAX),
            value_bytes_max: u32::try_from(options.value_bytes_max).unwrap_or(u32::MAX),
            levels_per_buffer: options.levels_per_buffer,
            buffered: options.buffered,
            buffer_page_bytes: options.buffer_page_bytes,
        }
    }
}

/// The state a checkpoint names (layout in `docs/format/latree-checkpoint.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeCheckpoint {
    /// The options that decide the files' layout.
    pub shape: CheckpointShape,
    /// The root node.
    pub root: NodeId,
    /// The root's level (0: the root is a leaf).
    pub root_level: u8,
    /// The next update's sequence number.
    pub next_seq: u64,
    /// The next buffer id.
    pub next_buffer: u64,
    /// The node store: free ids, node table, write sequence number.
    pub nodes: StoreSnapshot,
    /// Pages of the buffer store written before the checkpoint (new units go after).
    pub buffer_pages: u64,
    /// The active partition, 0 or 1 (section 4.3, `reclaim.rs`): its buffer file, and its
    /// node file when nodes are out of place, hold the tree.
    pub partition: u8,
    /// Every buffer holding entries, by ascending id, with its chain on flash.
    pub buffers: Vec<(PoolBufferId, BufferRoot)>,
}

impl TreeCheckpoint {
    fn encode_body(&self, out: &mut Vec<u8>) {
        let shape = &self.shape;
        out.push(CHECKPOINT_FORMAT_VERSION);
        out.extend_from_slice(&shape.node_bytes.to_le_bytes());
        out.extend_from_slice(&shape.key_bytes_max.to_le_bytes());
        out.extend_from_slice(&shape.value_bytes_max.to_le_bytes());
        out.push(shape.levels_per_buffer);
        out.push(if shape.buffered { FLAG_BUFFERED } else { 0 });
        out.extend_from_slice(&shape.buffer_page_bytes.to_le_bytes());
        put_varint(out, self.root.0);
        out.push(self.root_level);
        put_varint(out, self.next_seq);
        put_varint(out, self.next_buffer);
        put_bytes(out, &self.nodes.encode());
        put_varint(out, self.buffer_pages);
        out.push(self.partition);
        put_varint(out, self.buffers.len() as u64);
        let mut next = 0;
        for (id, root) in &self.buffers {
            put_varint(out, id.0 - next);
            put_varint(out, root.head.page);
            put_varint(out, u64::from(root.head.slot));
            put_varint(out, root.entries);
            put_varint(out, root.y.start);
            put_varint(out, root.y.end - root.y.start);
            next = id.0 + 1;
        }
    }
}

impl Encode for TreeCheckpoint {
    fn encoded_len(&self) -> usize {
        lamina_core::checksum::sealed_len(|out| self.encode_body(out))
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        lamina_core::checksum::seal(out, |out| self.encode_body(out));
    }
}

impl Decode for TreeCheckpoint {
    fn decode(input: &[u8]) -> std::result::Result<Self, DecodeError> {
        let body = lamina_core::checksum::unseal(input, "latree checkpoint")?;
        let mut r = Reader::new(body);
        let version = r.u8()?;
        if !(1..=CHECKPOINT_FORMAT_VERSION).contains(&version) {
            return Err(DecodeError::new(0, format!("latree checkpoint version {version}")));
        }
        let node_bytes = r.u32()?;
        let key_bytes_max = r.u32()?;
        let value_bytes_max = r.u32()?;
        let levels_per_buffer = r.u8()?;
        let flags = r.u8()?;
        if flags & !FLAG_BUFFERED != 0 {
            return Err(DecodeError::new(r.position() - 1, format!("unknown flags {flags:#x}")));
        }
        let buffer_page_bytes = r.u32()?;
        let shape = CheckpointShape {
            node_bytes,
            key_bytes_max,
            value_bytes_max,
            levels_per_buffer,
            buffered: flags & FLAG_BUFFERED != 0,
            buffer_page_bytes,
        };
        let root = NodeId(r.varint()?);
        let root_level = r.u8()?;
        if root_level > ROOT_LEVEL_MAX {
            return Err(r.error(format!("root level {root_level} over {ROOT_LEVEL_MAX}")));
        }
        let next_seq = r.varint()?;
        let next_buffer = r.varint()?;
        if next_seq == 0 || next_buffer == 0 {
            return Err(r.error("sequence numbers and buffer ids start at 1"));
        }
        let nodes_bytes = r.bytes_with_len(SNAPSHOT_PART_BYTES_MAX)?;
        let at = r.position() - nodes_bytes.len();
        let nodes = StoreSnapshot::decode(nodes_bytes)
            .map_err(|e| DecodeError::new(at + e.offset, e.reason))?;
        let buffer_pages = r.varint()?;
        if buffer_pages > STORE_PAGES_MAX {
            return Err(r.error(format!("{buffer_pages} buffer pages over {STORE_PAGES_MAX}")));
        }
        let partition = if version >= 2 { r.u8()? } else { 0 };
        if partition > 1 {
            return Err(DecodeError::new(r.position() - 1, format!("partition {partition}")));
        }
        let count = r.varint()?;
        // Six varints of at least a byte each per buffer.
        if count > POOL_BUFFERS_MAX as u64 || count > r.remaining() as u64 / 6 {
            return Err(r.error(format!("{count} buffers cannot fit (limit {POOL_BUFFERS_MAX})")));
        }
        let mut buffers = Vec::with_capacity(count as usize);
        let mut next: u64 = 0;
        for _ in 0..count {
            let at = r.position();
            let id = next.checked_add(r.varint()?).filter(|&id| id < next_buffer);
            let Some(id) = id else {
                return Err(DecodeError::new(at, format!("buffer id past {next_buffer}")));
            };
            let page = r.varint()?;
            let slot = u16::try_from(r.varint()?).map_err(|_| r.error("fragment slot over u16"))?;
            let entries = r.varint()?;
            let y_start = r.varint()?;
            let y_len = r.varint()?;
            let y_end = y_start.checked_add(y_len).filter(|&end| end <= entries);
            let Some(y_end) = y_end else {
                return Err(DecodeError::new(at, format!("Y past the buffer's {entries} entries")));
            };
            if page >= buffer_pages || entries == 0 {
                return Err(DecodeError::new(
                    at,
                    format!(
                        "buffer {id} at page {page} is empty \
                     or past the {buffer_pages} pages"
                    ),
                ));
            }
            let head = FragmentAddr { page, slot };
            buffers.push((PoolBufferId(id), BufferRoot { head, entries, y: y_start..y_end }));
            next = id + 1;
        }
        r.finish()?;
        Ok(TreeCheckpoint {
            shape,
            root,
            root_level,
            next_seq,
            next_buffer,
            nodes,
            buffer_pages,
            partition,
            buffers,
        })
    }
}

impl TreeCheckpoint {
    /// The files this checkpoint's tree lives in: its partition's node file and buffer
    /// file (the other partition's files hold nothing it needs).
    pub fn files(&self) -> [&'static str; 2] {
        [node_file(self.nodes.placement, self.partition), buffer_file(self.partition)]
    }
}

impl LaTree {
    /// Writes out and syncs everything only in memory (the pool's tails, then the dirty
    /// nodes); returns the checkpoint to commit. On an error nothing is lost from memory and
    /// the last committed checkpoint still opens; the checkpoint may be retried.
    pub fn checkpoint(&mut self) -> Result<TreeCheckpoint> {
        let (checkpoint, files) = self.checkpoint_unsynced()?;
        files.sync()?;
        Ok(checkpoint)
    }

    /// [`LaTree::checkpoint`] without the syncs: the writes are issued, and the returned
    /// [`CheckpointFiles`] must be synced before the checkpoint is committed. The tree may be
    /// changed in between (the engine syncs after releasing its tree lock): nothing the
    /// checkpoint reaches is overwritten before [`LaTree::checkpoint_committed`] (see the
    /// module docs of `checkpoint_files.rs` for why), and no reclamation starts meanwhile
    /// (`reclaim.rs` defers it until the commit).
    pub fn checkpoint_unsynced(&mut self) -> Result<(TreeCheckpoint, CheckpointFiles)> {
        if self.nodes.store().is_relocating() {
            return Err(Error::Io {
                context: "checkpointing the LA-tree".into(),
                source: std::io::Error::other("a reclamation failed earlier: the tree is unusable"),
            });
        }
        // A checkpoint holds no draining batch (`drain.rs`, invariant 3).
        self.finish_draining()?;
        self.pool.write_tails()?;
        self.nodes.write_back()?;
        let nodes = self.nodes.store().checkpoint();
        let buffers: Vec<_> =
            self.pool.buffer_ids().filter_map(|id| Some((id, self.pool.root(id)?))).collect();
        let checkpoint = TreeCheckpoint {
            shape: CheckpointShape::of(&self.options),
            root: self.root,
            root_level: self.root_level,
            next_seq: self.next_seq,
            next_buffer: self.next_buffer,
            nodes,
            buffer_pages: self.pool.stats().store.pages,
            partition: self.partitions.active,
            buffers,
        };
        self.partitions_checkpoint_taken();
        self.checkpoint_in_flight = true;
        Ok((checkpoint, self.checkpoint_files()))
    }

    /// The last checkpoint returned is durably committed: node ids and slots only earlier
    /// checkpoints reached may be reused, and the partition a reclamation left is erased
    /// if that checkpoint was taken after it (`reclaim.rs`).
    pub fn checkpoint_committed(&mut self) {
        self.checkpoint_in_flight = false;
        self.nodes.store().commit_durable();
        self.partitions_committed();
    }

    /// Reopens the tree a committed checkpoint names (see the module docs for what is
    /// validated, and when).
    pub fn open(
        storage: &dyn Storage,
        options: LaTreeOptions,
        checkpoint: &TreeCheckpoint,
    ) -> Result<Self> {
        options.validate()?;
        let shape = CheckpointShape::of(&options);
        if shape != checkpoint.shape {
            return Err(Error::Incompatible {
                reason: format!(
                    "the latree checkpoint was written with {:?}, opened with {shape:?}",
                    checkpoint.shape
                ),
            });
        }
        let layout =
            NodeLayout::new(options.node_bytes, options.key_bytes_max, options.value_bytes_max)?;
        let store_options = node_store_options(&options, layout);
        let (placement, partition) = (store_options.placement, checkpoint.partition);
        let node_name = node_file(placement, partition);
        let store = NodeStore::open(storage, node_name, store_options, checkpoint.nodes.clone())?;
        let page_bytes = options.buffer_page_bytes;
        let buffer_name = buffer_file(partition);
        let buffers =
            BufferStore::open_at(storage, buffer_name, page_bytes, checkpoint.buffer_pages)?;
        let partitions = Partitions::new(partition, None, Retired::Erasable);
        let mut tree = Self::assemble(options, layout, store, buffers, partitions)?;
        tree.root = checkpoint.root;
        tree.root_level = checkpoint.root_level;
        tree.next_seq = checkpoint.next_seq;
        tree.next_buffer = checkpoint.next_buffer;
        attach_buffers(&mut tree.pool, checkpoint)?;
        tree.check_root(storage)?;
        // Only now that everything was checked (a refused open creates no file): the other
        // partition, which no durable checkpoint names (this is the last committed one); its
        // leftovers are erased at the next commit or reclamation.
        tree.partitions.spare = Some(Spare::open(storage, placement, 1 - partition)?);
        Ok(tree)
    }

    /// The root is allocated, readable, and of the checkpoint's level.
    fn check_root(&self, storage: &dyn Storage) -> Result<()> {
        let name = node_file(self.nodes.store().options().placement, self.partitions.active);
        let corrupt = |reason: String| Error::corruption(storage.path_of(name), 0, reason);
        if !self.nodes.store().is_allocated(self.root) {
            return Err(corrupt(format!("the checkpoint's root {} is not allocated", self.root)));
        }
        let level = self.nodes.get(self.root)?.level();
        let is_leaf = matches!(*self.nodes.get(self.root)?, Node::Leaf(_));
        if level != self.root_level || is_leaf != (level == 0) {
            let reason = format!(
                "root {} is at level {level}, the checkpoint says {}",
                self.root, self.root_level
            );
            return Err(corrupt(reason));
        }
        Ok(())
    }
}

/// Gives the pool every buffer of the checkpoint, reading and checking each chain.
fn attach_buffers(pool: &mut BufferPool, checkpoint: &TreeCheckpoint) -> Result<()> {
    for (id, root) in &checkpoint.buffers {
        pool.attach(*id, root)?;
    }
    Ok(())
}
