//! The tree's options (issue 18): node size and entry limits, `K`, `U`, the memory split
//! between the buffer pool and the node cache, the device profile behind the cost model and
//! ADAPT's savings rule.

use lamina_core::{Error, Result};
use lamina_storage::DeviceProfile;

use crate::adapt::SavingsRule;

/// Largest `K` accepted (levels between buffered levels).
pub const LEVELS_PER_BUFFER_MAX: u8 = 8;
/// Largest `U` accepted (entries in one buffer).
pub const BUFFER_ENTRIES_MAX: u64 = 1 << 24;
/// Default partition size (`LaTreeOptions::partition_bytes`): 16 MiB.
pub const PARTITION_BYTES_DEFAULT: u64 = 16 << 20;
/// Smallest partition size accepted (tests use a few KiB to reclaim often).
pub const PARTITION_BYTES_MIN: u64 = 1 << 10;
/// Largest partition size accepted (1 TiB; with it a tree never reclaims in practice).
pub const PARTITION_BYTES_MAX: u64 = 1 << 40;

/// Largest `node_cache_extra_bytes` (1 TiB, lamina's largest block cache).
pub const NODE_CACHE_EXTRA_BYTES_MAX: u64 = 1 << 40;

/// How a [`super::LaTree`] is built.
#[derive(Debug, Clone)]
pub struct LaTreeOptions {
    /// Bytes of a node on flash.
    pub node_bytes: u32,
    /// Longest key the tree takes (checked at `put`, so an emptying never meets an entry
    /// its leaves cannot hold).
    pub key_bytes_max: usize,
    /// Longest value the tree takes.
    pub value_bytes_max: usize,
    /// `K`: buffers sit on inner nodes whose level (height above the leaves) is a multiple
    /// of `K`, and on the root (section 2.1; default 2). See the README's adaptations.
    pub levels_per_buffer: u8,
    /// `U`, in entries: an update taking a buffer past this many entries empties it
    /// (Algorithm 1 lines 11-13).
    pub buffer_entries_max: u64,
    /// Page size of the buffer store.
    pub buffer_page_bytes: u32,
    /// Memory for the buffer pool and the node cache together.
    pub memory_bytes: usize,
    /// The node cache's share of `memory_bytes` in percent (section 4.2: 25).
    pub node_cache_percent: u32,
    /// Node cache bytes on top of that share (0: the paper's split alone). The engine under
    /// `lamina::Db` gets lamina's block cache here (`Options::cache_bytes`, what the other
    /// engines spend on their block or page caches; see the README's adaptations). At most
    /// [`NODE_CACHE_EXTRA_BYTES_MAX`].
    pub node_cache_extra_bytes: usize,
    /// The device the cost model of section 3 describes.
    pub device: DeviceProfile,
    /// Mean encoded bytes of a buffer entry, for the cost model's `b_w` and `R_b`.
    pub mean_entry_bytes: u64,
    /// ADAPT's savings rule (default the paper's).
    pub savings_rule: SavingsRule,
    /// Whether updates are buffered (the LA-tree). `false` is the paper's baseline B+tree
    /// (engine `latree-btree`): every update goes straight to its leaf, no buffers exist.
    pub buffered: bool,
    /// Whether the files stay crash consistent between checkpoints: a node the last
    /// checkpoint reaches is never overwritten in place (it is written to another slot
    /// first), and freed space is reused only after the next checkpoint commits. `false`
    /// (volatile trees, the paper's experiments) rewrites in place as section 4.3 says.
    pub crash_consistent: bool,
    /// The floor of the reclamation trigger (section 4.3, `tree/reclaim.rs`): the active
    /// partition (buffer pages, plus node slots on raw NAND) is reclaimed once it spans more
    /// than `max(partition_bytes, 2 * live bytes)`. Not part of the file format: it may
    /// change between opens.
    pub partition_bytes: u64,
    /// Whether a root emptying triggered by an update is spread over the updates that
    /// follow, one child of the root per update (`drain.rs`; an adaptation, off by default:
    /// the paper's experiments empty in one go). The engine turns it on.
    pub drain_root: bool,
}

impl LaTreeOptions {
    /// Defaults for `device`: 4 KiB nodes, keys up to 64 bytes and values up to 256 bytes,
    /// `K = 2`, `U = 4096` entries, 512-byte buffer pages on raw NAND and 4 KiB otherwise,
    /// 64 MiB of memory with 25% for nodes, 32-byte mean entries, 16 MiB partitions.
    pub fn for_device(device: DeviceProfile) -> Self {
        let buffer_page_bytes = if device.name == "nand-toshiba" { 512 } else { 4096 };
        LaTreeOptions {
            node_bytes: 4096,
            key_bytes_max: 64,
            value_bytes_max: 256,
            levels_per_buffer: 2,
            buffer_entries_max: 4096,
            buffer_page_bytes,
            memory_bytes: 64 << 20,
            node_cache_percent: 25,
            node_cache_extra_bytes: 0,
            device,
            mean_entry_bytes: 32,
            savings_rule: SavingsRule::Paper,
            buffered: true,
            crash_consistent: true,
            partition_bytes: PARTITION_BYTES_DEFAULT,
            drain_root: false,
        }
    }

    /// Refuses options out of range (the node layout and stores check their own).
    pub fn validate(&self) -> Result<()> {
        if !(1..=LEVELS_PER_BUFFER_MAX).contains(&self.levels_per_buffer) {
            let reason =
                format!("K = {} is not in 1..={LEVELS_PER_BUFFER_MAX}", self.levels_per_buffer);
            return Err(Error::option("levels_per_buffer", reason));
        }
        if !(1..=BUFFER_ENTRIES_MAX).contains(&self.buffer_entries_max) {
            let reason =
                format!("U = {} is not in 1..={BUFFER_ENTRIES_MAX}", self.buffer_entries_max);
            return Err(Error::option("buffer_entries_max", reason));
        }
        if !(PARTITION_BYTES_MIN..=PARTITION_BYTES_MAX).contains(&self.partition_bytes) {
            let reason = format!(
                "{} is not in {PARTITION_BYTES_MIN}..={PARTITION_BYTES_MAX}",
                self.partition_bytes
            );
            return Err(Error::option("partition_bytes", reason));
        }
        if self.node_cache_extra_bytes as u64 > NODE_CACHE_EXTRA_BYTES_MAX {
            let reason =
                format!("{} is over {NODE_CACHE_EXTRA_BYTES_MAX}", self.node_cache_extra_bytes);
            return Err(Error::option("node_cache_extra_bytes", reason));
        }
        Ok(())
    }
}
