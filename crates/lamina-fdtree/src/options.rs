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
//! - A block is a run of segments (`format/segment.rs`) with a 24-byte header each. Two
//!   consecutive segments of a block hold more than `segment_bytes` (the second started
//!   because the first could not take its first entry), so a block has fewer than
//!   `2 * block_bytes / segment_bytes + 2` segments, and a key group that did not fit its
//!   block needs at most two new segment headers. Hence
//!   `cap_eff = block_bytes - (2 * block_bytes / segment_bytes + 4) * 24 - 2 * fence_bytes_max`
//!   is less than what any two consecutive blocks hold, and the greedy (next-fit) packing of
//!   merge-execute never uses more than `2 * B(L_i) + 1` physical blocks.

use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_core::{Durability, Error, Result};

use crate::format::bloom::BITS_PER_KEY_MAX;
use crate::format::entry::{delete_bytes_max, fence_bytes, insert_bytes};
use crate::format::segment::{SEGMENT_BYTES_MAX, SEGMENT_HEADER_BYTES};

/// Concurrency scheme (paper sections 3 and 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FcMode {
    /// FD+XM: one readers-writer lock over the whole tree, held by a merge (section 3).
    Xm,
    /// FD+DS: merges run in a background thread and build new levels on the side while
    /// lookups use the old levels (section 3).
    Ds,
    /// FD+FC: merges run in a background thread behind a wavefront, moving data block by
    /// block; lookups never wait for a merge (section 4). The default.
    #[default]
    Fc,
}

/// Options of an FD+tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdTreeOptions {
    /// Memory for `L_0` in bytes (its memtables and fences); `kappa_0 =
    /// memory_budget_bytes / block_bytes` blocks.
    pub memory_budget_bytes: u64,
    /// Size of a disk block in bytes (the unit of every level file, of fences and of
    /// reclamation during an FD+FC merge).
    pub block_bytes: u32,
    /// Target size of a segment, the unit a point lookup reads and checks (a power of two,
    /// 512 to 32 KiB, at most `block_bytes`). A new tree takes it; a reopened tree keeps the
    /// one it was created with.
    pub segment_bytes: u32,
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
    /// When a write is durable (persistent trees).
    pub durability: Durability,
    /// Bytes of the segment cache lookups read through; 0 disables it.
    pub cache_bytes: usize,
    /// Bits per key of each level's and memtable's Bloom filter; 0 disables them. An `L_0`
    /// run's filter has [`RUN_BLOOM_EXTRA_BITS_PER_KEY`] more.
    pub bloom_bits_per_key: u32,
    /// FD+FC in a persistent tree: bytes of old blocks reclaimed by a merge after which it
    /// commits its progress, so their space is freed (Remark A.6). Space during a merge is
    /// at most this much (plus a block per level) above the steady state; each commit costs
    /// a few syncs.
    pub merge_commit_bytes: u64,
    /// Log bytes after which `L_0`'s memtable is written to disk even if it is not full, so
    /// the log (and the time to replay it) stays bounded when writes overwrite a few keys.
    pub log_checkpoint_bytes: u64,
    /// Disk space the tree may use (0: no limit). Writes that add data are refused with
    /// `NoSpace` once it is reached; deletes always go through.
    pub disk_budget_bytes: u64,
}

impl Default for FdTreeOptions {
    /// Defaults accept keys and values up to the API limits: 32 KiB blocks of 4 KiB
    /// segments, `gamma = 8`, 4 MiB for `L_0` (`kappa_0 = 128`). (1 KiB segments took 42%
    /// fewer instructions per lookup on a settled 10M-key tree, but in the `scale`
    /// experiment, where lookups run beside a merge, they were no faster and inserts were
    /// 8% slower: `docs/results/scale.md`.)
    fn default() -> Self {
        FdTreeOptions {
            memory_budget_bytes: 4 << 20,
            block_bytes: 32 << 10,
            segment_bytes: 4 << 10,
            size_ratio: 8,
            key_bytes_max: KEY_BYTES_MAX,
            value_bytes_max: VALUE_BYTES_MAX,
            mode: FcMode::Fc,
            verify_each_merge: cfg!(feature = "verify"),
            durability: Durability::Sync,
            cache_bytes: 8 << 20,
            bloom_bits_per_key: 10,
            merge_commit_bytes: 32 << 20,
            log_checkpoint_bytes: 64 << 20,
            disk_budget_bytes: 0,
        }
    }
}

/// Smallest block accepted.
pub const BLOCK_BYTES_MIN: u32 = 512;
/// Largest block accepted.
pub const BLOCK_BYTES_MAX: u32 = 1 << 20;
/// Smallest segment accepted.
pub const SEGMENT_BYTES_MIN: u32 = 512;
/// Largest segment target accepted.
pub const SEGMENT_TARGET_MAX: u32 = 32 << 10;
/// Largest `gamma` accepted.
pub const SIZE_RATIO_MAX: u32 = 1024;
/// Smallest `memory_budget_bytes` (and at least one block).
pub const MEMORY_BUDGET_BYTES_MIN: u64 = 512;
/// Smallest `merge_commit_bytes` and `log_checkpoint_bytes`.
pub const COMMIT_BYTES_MIN: u64 = 512;
/// Largest `merge_commit_bytes` and `log_checkpoint_bytes`.
pub const COMMIT_BYTES_MAX: u64 = 1 << 40;

/// Fraction of the memtable budget at which the active memtable is frozen and written out
/// as a run, leaving the rest for writers while it is written: 1/2, so the next memtable fills
/// for as long as the frozen one took to fill, which covers writing it out even when a merge
/// competes for the CPU and the disk (at 2/3, writers waited up to 47 ms in the `scale`
/// experiment).
const FREEZE_NUMERATOR: u64 = 1;
const FREEZE_DENOMINATOR: u64 = 2;

/// Sizing parameters derived from validated options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Block size in bytes.
    pub block_bytes: u32,
    /// Segment target in bytes.
    pub segment_bytes: u32,
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
    /// Segment cache budget (0: no cache).
    pub cache_bytes: usize,
    /// Bloom filter bits per key (0: none).
    pub bloom_bits_per_key: u32,
    /// See [`FdTreeOptions::merge_commit_bytes`].
    pub merge_commit_bytes: u64,
    /// See [`FdTreeOptions::log_checkpoint_bytes`].
    pub log_checkpoint_bytes: u64,
    /// See [`FdTreeOptions::disk_budget_bytes`] (0: none).
    pub disk_budget_bytes: u64,
    /// Memory the memtables (active and frozen) may hold together.
    pub memtable_bytes_max: u64,
}

impl FdTreeOptions {
    /// Checks the options and derives the sizing parameters.
    #[allow(clippy::too_many_lines)] // one check per option, each with its message
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
        if !self.segment_bytes.is_power_of_two()
            || !(SEGMENT_BYTES_MIN..=SEGMENT_TARGET_MAX.min(self.block_bytes))
                .contains(&self.segment_bytes)
        {
            return Err(Error::option(
                "segment_bytes",
                format!(
                    "{} is not a power of two in {SEGMENT_BYTES_MIN}..={}",
                    self.segment_bytes,
                    SEGMENT_TARGET_MAX.min(self.block_bytes)
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
        if self.bloom_bits_per_key > BITS_PER_KEY_MAX {
            return Err(Error::option(
                "bloom_bits_per_key",
                format!("{} is over {BITS_PER_KEY_MAX}", self.bloom_bits_per_key),
            ));
        }
        for (name, v) in [
            ("merge_commit_bytes", self.merge_commit_bytes),
            ("log_checkpoint_bytes", self.log_checkpoint_bytes),
        ] {
            if !(COMMIT_BYTES_MIN..=COMMIT_BYTES_MAX).contains(&v) {
                return Err(Error::option(
                    name,
                    format!("{v} is outside {COMMIT_BYTES_MIN}..={COMMIT_BYTES_MAX}"),
                ));
            }
        }
        let block = u64::from(self.block_bytes);
        if self.memory_budget_bytes < block.max(MEMORY_BUDGET_BYTES_MIN) {
            return Err(Error::option(
                "memory_budget_bytes",
                format!(
                    "must be at least one block and {MEMORY_BUDGET_BYTES_MIN} bytes ({} given)",
                    self.memory_budget_bytes
                ),
            ));
        }
        let kappa0_blocks = self.memory_budget_bytes / block;
        let header = SEGMENT_HEADER_BYTES as u64;
        let fence_max = fence_bytes(self.key_bytes_max) as u64;
        let data_max = (insert_bytes(self.key_bytes_max, self.value_bytes_max) as u64)
            .max(delete_bytes_max(self.key_bytes_max) as u64);
        // The largest group merge-execute must place in an empty block: a leading fence and
        // one data entry of the longest key (and value), in at most two segments.
        let group_max = fence_max + data_max + 2 * header;
        if group_max > block || data_max + header > SEGMENT_BYTES_MAX as u64 {
            return Err(Error::option(
                "block_bytes",
                format!(
                    "{} bytes cannot hold a fence and an insert of the largest key ({} bytes) \
                     and value ({} bytes): {group_max} bytes are needed; raise block_bytes or \
                     lower key_bytes_max/value_bytes_max",
                    self.block_bytes, self.key_bytes_max, self.value_bytes_max
                ),
            ));
        }
        let segment_headers_max = 2 * block / u64::from(self.segment_bytes) + 4;
        let cap_eff_bytes = block
            .checked_sub(segment_headers_max * header + 2 * fence_max)
            .filter(|&c| c > 0)
            .ok_or_else(|| {
                Error::option("block_bytes", "too small for its segment headers and two fences")
            })?;
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
        let reserve = fence_reserve(kappa0_blocks, gamma, fence_max, self.memory_budget_bytes);
        let memtable_bytes_max = self.memory_budget_bytes - reserve;
        Ok(Params {
            block_bytes: self.block_bytes,
            segment_bytes: self.segment_bytes,
            cap_eff_bytes,
            kappa0_blocks,
            size_ratio: gamma,
            key_bytes_max: self.key_bytes_max,
            value_bytes_max: self.value_bytes_max,
            verify_each_merge: self.verify_each_merge || cfg!(feature = "verify"),
            mode: self.mode,
            fence_bytes_max: fence_max,
            cache_bytes: if self.cache_bytes < self.segment_bytes as usize {
                0 // too small to hold one segment: no cache
            } else {
                self.cache_bytes
            },
            bloom_bits_per_key: self.bloom_bits_per_key,
            merge_commit_bytes: self.merge_commit_bytes,
            log_checkpoint_bytes: self.log_checkpoint_bytes,
            disk_budget_bytes: self.disk_budget_bytes,
            memtable_bytes_max,
        })
    }
}

/// Bytes of `L_0`'s memory reserved for its fences (section 4.2: "we always reserve
/// `kappa_1` slots for `L_0^new`"): `kappa_1` fences of the longest key, at most half of the
/// budget.
fn fence_reserve(kappa0_blocks: u64, gamma: u64, fence_max: u64, budget: u64) -> u64 {
    kappa0_blocks.saturating_mul(gamma).saturating_mul(fence_max).min(budget / 2)
}

/// Bits per key an `L_0` run's filter has beyond [`FdTreeOptions::bloom_bits_per_key`].
///
/// Every lookup probes every run's filter while the run exists, and during a long merge into
/// the bottom level `L_0` holds tens of runs (`engine/pacing.rs`): at 10 bits per key
/// (1.1% false positives, this cache-line blocked filter) 44 runs sent a lookup to 0.3
/// segments it did not need, beside the merge, at 10M keys (`insert_lookup` example,
/// `SETTLE=0`: 1.3 segments read per lookup against 1.008 on the settled tree). At 16 bits
/// a run's filter answers falsely 0.24% of the time. This is Monkey's allocation (Dayan et
/// al., SIGMOD 2017: lower false-positive rates for the smaller runs, which cost little
/// memory) applied to the runs only; the levels keep the configured bits.
pub const RUN_BLOOM_EXTRA_BITS_PER_KEY: u32 = 6;

impl Params {
    /// Bits per key of the filter of a level (`label` > 0) or of an `L_0` run (`label` 0:
    /// [`RUN_BLOOM_EXTRA_BITS_PER_KEY`] more); 0 when filters are disabled.
    pub fn bloom_bits_per_key_of(&self, label: usize) -> u32 {
        match self.bloom_bits_per_key {
            0 => 0,
            bits if label == 0 => (bits + RUN_BLOOM_EXTRA_BITS_PER_KEY).min(BITS_PER_KEY_MAX),
            bits => bits,
        }
    }

    /// `kappa_i = gamma^i * kappa_0` blocks (I3), saturating.
    pub fn kappa(&self, level: usize) -> u64 {
        let mut k = self.kappa0_blocks;
        for _ in 0..level {
            k = k.saturating_mul(self.size_ratio);
        }
        k
    }

    /// Bytes converted to blocks: `ceil(bytes / cap_eff)`.
    pub fn blocks_of(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.cap_eff_bytes)
    }

    /// Bytes of `L_0`'s fences that the reserve allows (a level may become `L_0` in
    /// merge-finalize only if it fits, section 4.4.3).
    pub fn fence_reserve_bytes(&self) -> u64 {
        fence_reserve(self.kappa0_blocks, self.size_ratio, self.fence_bytes_max, u64::MAX)
            .min(self.kappa0_blocks * u64::from(self.block_bytes) / 2)
    }

    /// Memory of the active memtable at which it is frozen and written out as a run.
    pub fn memtable_freeze_bytes(&self) -> u64 {
        self.memtable_bytes_max * FREEZE_NUMERATOR / FREEZE_DENOMINATOR
    }

    /// Sized bytes of `L_0`'s runs that make a merge due: `kappa_0` blocks' worth (I3).
    pub fn top_capacity_bytes(&self) -> u64 {
        self.kappa0_blocks.saturating_mul(self.cap_eff_bytes)
    }

    /// Segments of one block at most (directory bounds).
    pub fn segments_per_block_max(&self) -> u64 {
        2 * u64::from(self.block_bytes) / u64::from(self.segment_bytes) + 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let p = FdTreeOptions::default().params().unwrap();
        assert_eq!(p.kappa0_blocks, 128);
        assert_eq!(p.kappa(2), 128 * 64);
        assert!(p.cap_eff_bytes > 29 << 10, "{}", p.cap_eff_bytes);
        assert!(p.memtable_freeze_bytes() < p.memtable_bytes_max);
        assert!(p.memtable_bytes_max >= p.kappa0_blocks * u64::from(p.block_bytes) / 2);
    }

    #[test]
    fn runs_filters_have_more_bits_per_key_than_levels() {
        let p = FdTreeOptions::default().params().unwrap();
        assert_eq!((p.bloom_bits_per_key_of(0), p.bloom_bits_per_key_of(1)), (16, 10));
        let none = FdTreeOptions { bloom_bits_per_key: 0, ..FdTreeOptions::default() };
        assert_eq!(none.params().unwrap().bloom_bits_per_key_of(0), 0);
        let most = FdTreeOptions { bloom_bits_per_key: 62, ..FdTreeOptions::default() };
        assert_eq!(most.params().unwrap().bloom_bits_per_key_of(0), BITS_PER_KEY_MAX);
    }

    #[test]
    fn bad_options_are_refused() {
        let bad = [
            FdTreeOptions { block_bytes: 4096, ..FdTreeOptions::default() },
            FdTreeOptions { block_bytes: 3000, ..FdTreeOptions::default() },
            FdTreeOptions { segment_bytes: 100, ..FdTreeOptions::default() },
            FdTreeOptions { segment_bytes: 64 << 10, ..FdTreeOptions::default() },
            FdTreeOptions { size_ratio: 40, ..FdTreeOptions::default() },
            FdTreeOptions { size_ratio: 1, ..FdTreeOptions::default() },
            FdTreeOptions { memory_budget_bytes: 10, ..FdTreeOptions::default() },
            FdTreeOptions { key_bytes_max: 0, ..FdTreeOptions::default() },
            FdTreeOptions { bloom_bits_per_key: 65, ..FdTreeOptions::default() },
            FdTreeOptions { merge_commit_bytes: 0, ..FdTreeOptions::default() },
            FdTreeOptions { log_checkpoint_bytes: u64::MAX, ..FdTreeOptions::default() },
        ];
        for o in bad {
            assert!(o.params().unwrap_err().is_invalid_argument(), "{o:?}");
        }
    }

    #[test]
    fn small_keys_allow_small_blocks_and_large_gamma() {
        let o = FdTreeOptions {
            block_bytes: 4096,
            segment_bytes: 1024,
            size_ratio: 24,
            key_bytes_max: 16,
            value_bytes_max: 128,
            memory_budget_bytes: 256 << 10,
            ..FdTreeOptions::default()
        };
        assert_eq!(o.params().unwrap().kappa0_blocks, 64);
    }
}
