//! Options of the FD+tree and the sizing parameters derived from them (paper section 2.1).
//!
//! The paper measures everything in entries of a fixed size: a block holds `beta` entries,
//! level `L_i` may hold `kappa_i = gamma^i * kappa_0` blocks. lamina has variable-length keys
//! and values, so sizes are measured in bytes and converted to "blocks" with one effective
//! capacity `cap_eff` (see [`Params::cap_eff_bytes`] and the crate README):
//!
//! - `B(L_i) = ceil(sized_bytes(L_i) / cap_eff)`, where `sized_bytes` is the encoded size of
//!   every entry of the level except the leading fence of each block (the fence that (I2)
//!   forces at the start of a block is block overhead, like the block header).
//! - `cap_eff = block_bytes - header - 2 * fence_bytes_max`. With that slack, the greedy
//!   (next-fit) packing of merge-execute never uses more than `2 * B(L_i) + 1` physical blocks
//!   (two consecutive blocks always hold more than `cap_eff` sized bytes).

use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_core::{Durability, Error, Result};

use crate::block::BLOCK_HEADER_BYTES;
use crate::entry::{delete_bytes, fence_bytes, insert_bytes};

/// Concurrency scheme (paper sections 3 and 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FcMode {
    /// FD+XM: one readers-writer lock over the whole tree, held by a merge (section 3).
    Xm,
    /// FD+DS: merges run in a background thread and build new levels on the side while
    /// lookups use the old levels; modifications during a merge go to a second `L_0`
    /// (section 3).
    Ds,
    /// FD+FC: merges run in a background thread behind a wavefront, moving data block by
    /// block; lookups never wait for a merge, modifications only when `L_0` is full
    /// (section 4). The default.
    #[default]
    Fc,
}

/// Options of an FD+tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdTreeOptions {
    /// Memory for `L_0` in bytes; `kappa_0 = memory_budget_bytes / block_bytes` blocks.
    pub memory_budget_bytes: u64,
    /// Size of a disk block in bytes (the unit of every level file).
    pub block_bytes: u32,
    /// The size ratio `gamma` between adjacent levels: `kappa_i = gamma * kappa_(i-1)`.
    pub size_ratio: u32,
    /// Longest key accepted (at most the API limit). Lower it to allow smaller blocks.
    pub key_bytes_max: usize,
    /// Longest value accepted (at most the API limit). Lower it to allow smaller blocks.
    pub value_bytes_max: usize,
    /// Concurrency scheme: [`FcMode::Fc`] (the default), [`FcMode::Xm`] or [`FcMode::Ds`].
    pub mode: FcMode,
    /// Run [`crate::FdTree::verify`] after every merge (always on with feature `verify`).
    pub verify_each_merge: bool,
    /// When a write is durable (persistent trees; see `persist.rs`).
    pub durability: Durability,
    /// Bytes of the block cache lookups read through (`lamina_storage::cache::BlockCache`;
    /// FD+FC's 15 MB default, section 5); 0 disables it.
    pub cache_bytes: usize,
    /// FD+FC in a persistent tree: reclaimed old blocks that trigger a progress commit of
    /// the merge, after which their space is freed (Remark A.6). Space during a merge is
    /// at most this many blocks (plus one per level) above the steady state; each commit
    /// costs a few syncs. 1 to 65536.
    pub merge_commit_blocks: u32,
}

impl Default for FdTreeOptions {
    /// Defaults accept keys and values up to the API limits: 32 KiB blocks, `gamma = 8`,
    /// 1 MiB for `L_0` (`kappa_0 = 32`).
    fn default() -> Self {
        FdTreeOptions {
            memory_budget_bytes: 1 << 20,
            block_bytes: 32 << 10,
            size_ratio: 8,
            key_bytes_max: KEY_BYTES_MAX,
            value_bytes_max: VALUE_BYTES_MAX,
            mode: FcMode::Fc,
            verify_each_merge: cfg!(feature = "verify"),
            durability: Durability::Sync,
            cache_bytes: lamina_storage::cache::CacheConfig::default().capacity_bytes,
            merge_commit_blocks: 32,
        }
    }
}

/// Smallest block accepted (that of `lamina_storage::block`).
pub const BLOCK_BYTES_MIN: u32 = lamina_storage::block::BLOCK_BYTES_MIN as u32;
/// Largest block accepted.
pub const BLOCK_BYTES_MAX: u32 = 1 << 20;
/// Largest `gamma` accepted.
pub const SIZE_RATIO_MAX: u32 = 1024;

/// Sizing parameters derived from validated options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Block size in bytes.
    pub block_bytes: u32,
    /// Payload bytes of a block (block minus header).
    pub payload_bytes: u32,
    /// Effective capacity used to convert bytes to blocks (module docs).
    pub cap_eff_bytes: u64,
    /// `kappa_0` in blocks.
    pub kappa0_blocks: u64,
    /// `gamma`.
    pub size_ratio: u64,
    /// Longest key accepted.
    pub key_bytes_max: usize,
    /// Longest value accepted.
    pub value_bytes_max: usize,
    /// Whether to verify after every merge.
    pub verify_each_merge: bool,
    /// Concurrency scheme.
    pub mode: FcMode,
    /// Longest encoded fence (`fence_bytes(key_bytes_max)`).
    pub fence_bytes_max: u64,
    /// Block cache budget (0: no cache).
    pub cache_bytes: usize,
    /// See [`FdTreeOptions::merge_commit_blocks`].
    pub merge_commit_blocks: usize,
}

impl FdTreeOptions {
    /// Checks the options and derives the sizing parameters.
    pub fn params(&self) -> Result<Params> {
        self.durability.validate()?;
        if !self.block_bytes.is_power_of_two()
            || !(BLOCK_BYTES_MIN..=BLOCK_BYTES_MAX).contains(&self.block_bytes)
        {
            return Err(Error::option(
                "block_bytes",
                format!(
                    "{} is not a power of two in {BLOCK_BYTES_MIN}..={BLOCK_BYTES_MAX}",
                    self.block_bytes
                ),
            ));
        }
        if !(2..=SIZE_RATIO_MAX).contains(&self.size_ratio) {
            return Err(Error::option(
                "size_ratio",
                format!("gamma {} is outside 2..={SIZE_RATIO_MAX}", self.size_ratio),
            ));
        }
        if !(1..=KEY_BYTES_MAX).contains(&self.key_bytes_max) {
            return Err(Error::option("key_bytes_max", format!("must be 1..={KEY_BYTES_MAX}")));
        }
        if self.value_bytes_max > VALUE_BYTES_MAX {
            return Err(Error::option("value_bytes_max", format!("must be <= {VALUE_BYTES_MAX}")));
        }
        let kappa0_blocks = self.memory_budget_bytes / u64::from(self.block_bytes);
        if kappa0_blocks == 0 {
            return Err(Error::option(
                "memory_budget_bytes",
                format!("must be at least one block ({} bytes)", self.block_bytes),
            ));
        }
        let payload_bytes = self.block_bytes - BLOCK_HEADER_BYTES as u32;
        let fence_max = fence_bytes(self.key_bytes_max) as u64;
        // The largest record merge-execute must place in an empty block: a leading fence, a
        // delete entry and an insert entry for one key (the four cases of section 2.2).
        let group_max = fence_max
            + delete_bytes(self.key_bytes_max) as u64
            + insert_bytes(self.key_bytes_max, self.value_bytes_max) as u64;
        if group_max > u64::from(payload_bytes) {
            return Err(Error::option(
                "block_bytes",
                format!(
                    "{} bytes cannot hold a fence, a delete and an insert of the largest key \
                     ({} bytes) and value ({} bytes): {group_max} payload bytes are needed; \
                     raise block_bytes or lower key_bytes_max/value_bytes_max",
                    self.block_bytes, self.key_bytes_max, self.value_bytes_max
                ),
            ));
        }
        let cap_eff_bytes = u64::from(payload_bytes) - 2 * fence_max;
        // A fence-only level holds one fence per physical block of the level below, that is
        // at most 2 * kappa_(i+1) + 1 fences; it must fit kappa_i = kappa_(i+1) / gamma
        // blocks, or merge-finalize could not keep (I3) (see README, "variable-length keys").
        let gamma = u64::from(self.size_ratio);
        if (2 * gamma + 1) * fence_max > cap_eff_bytes {
            return Err(Error::option(
                "size_ratio",
                format!(
                    "gamma {gamma} is too large for {}-byte blocks with {}-byte keys: need \
                     (2 * gamma + 1) * {fence_max} <= {cap_eff_bytes}",
                    self.block_bytes, self.key_bytes_max
                ),
            ));
        }
        if !(1..=65_536).contains(&self.merge_commit_blocks) {
            return Err(Error::option("merge_commit_blocks", "must be 1..=65536"));
        }
        Ok(Params {
            merge_commit_blocks: self.merge_commit_blocks as usize,
            block_bytes: self.block_bytes,
            payload_bytes,
            cap_eff_bytes,
            kappa0_blocks,
            size_ratio: gamma,
            key_bytes_max: self.key_bytes_max,
            value_bytes_max: self.value_bytes_max,
            verify_each_merge: self.verify_each_merge || cfg!(feature = "verify"),
            mode: self.mode,
            fence_bytes_max: fence_max,
            cache_bytes: if self.cache_bytes < self.block_bytes as usize {
                0 // too small to hold one block: no cache
            } else {
                self.cache_bytes
            },
        })
    }
}

impl Params {
    /// `kappa_i = gamma^i * kappa_0` blocks (I3), saturating.
    pub fn kappa(&self, level: usize) -> u64 {
        let mut k = self.kappa0_blocks;
        for _ in 0..level {
            k = k.saturating_mul(self.size_ratio);
        }
        k
    }

    /// The bytes of `L_0` that `kappa_0` allows: `kappa_0 * cap_eff`.
    pub fn top_capacity_bytes(&self) -> u64 {
        self.kappa0_blocks.saturating_mul(self.cap_eff_bytes)
    }

    /// Bytes of `L_0` reserved for the fences a background merge produces (section 4.2:
    /// "we always reserve `kappa_1` slots for `L_0^new`"): `kappa_1` fences of the longest
    /// key, at most half of `L_0` (the option checks make `kappa_1` fences fit half).
    pub fn fence_reserve_bytes(&self) -> u64 {
        self.kappa(1).saturating_mul(self.fence_bytes_max).min(self.top_capacity_bytes() / 2)
    }

    /// When a background merge (FD+DS) starts: `L_0` is close to, but below, its capacity,
    /// leaving the fence reserve for the modifications and fences of the merge (section
    /// 4.2). FD+XM merges when `B(L_0) > kappa_0` (section 2.2).
    pub fn top_trigger_bytes(&self) -> u64 {
        self.top_capacity_bytes() - self.fence_reserve_bytes()
    }

    /// Bytes converted to blocks: `ceil(bytes / cap_eff)`.
    pub fn blocks_of(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.cap_eff_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let p = FdTreeOptions::default().params().unwrap();
        assert_eq!(p.kappa0_blocks, 32);
        assert_eq!(p.kappa(2), 32 * 64);
    }

    #[test]
    fn bad_options_are_refused() {
        let o = FdTreeOptions { block_bytes: 4096, ..FdTreeOptions::default() };
        assert!(o.params().unwrap_err().is_invalid_argument());
        let o = FdTreeOptions { size_ratio: 40, ..FdTreeOptions::default() };
        assert!(o.params().unwrap_err().is_invalid_argument());
        let o = FdTreeOptions { memory_budget_bytes: 10, ..FdTreeOptions::default() };
        assert!(o.params().unwrap_err().is_invalid_argument());
        let o = FdTreeOptions { mode: FcMode::Fc, ..FdTreeOptions::default() };
        assert!(o.params().is_ok());
        let o = FdTreeOptions { mode: FcMode::Ds, ..FdTreeOptions::default() };
        let p = o.params().unwrap();
        assert!(p.top_trigger_bytes() >= p.top_capacity_bytes() / 2);
    }

    #[test]
    fn small_keys_allow_small_blocks() {
        let o = FdTreeOptions {
            block_bytes: 4096,
            size_ratio: 24,
            key_bytes_max: 16,
            value_bytes_max: 128,
            memory_budget_bytes: 256 << 10,
            ..FdTreeOptions::default()
        };
        assert_eq!(o.params().unwrap().kappa0_blocks, 64);
    }
}
