//! Options of the `latree` engine: the tree's own ([`LaTreeOptions`]) and what the engine adds
//! around it (durability, open intent, when to checkpoint, the disk budget).

use lamina_core::limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_core::{Durability, Error, OpenIntent, Result};
use lamina_storage::DeviceProfile;

use crate::node::NodeLayout;
use crate::tree::LaTreeOptions;

/// Default log bytes between two checkpoints.
pub const CHECKPOINT_LOG_BYTES_DEFAULT: u64 = 64 << 20;
/// Fewest log bytes between two checkpoints (each checkpoint writes out the buffer pool's
/// tails and dirty nodes and syncs three files: more often only wastes writes).
pub const CHECKPOINT_LOG_BYTES_MIN: u64 = 4 << 10;
/// Most log bytes between two checkpoints (bounds the replay at open).
pub const CHECKPOINT_LOG_BYTES_MAX: u64 = 16 << 30;

/// Largest checkpoint committed inline: what the superblock's block holds besides its own
/// header, the commit number and the commit record's fields (at most 32 bytes).
pub const CHECKPOINT_INLINE_BYTES_MAX: usize =
    super::durable::SUPERBLOCK_BYTES - lamina_storage::block::BLOCK_HEADER_BYTES - 8 - 32;

/// How a [`super::LaTreeEngine`] is opened.
#[derive(Debug, Clone)]
pub struct LaTreeEngineOptions {
    /// The tree: node size, key and value limits, `K`, `U`, memory, device, `buffered`
    /// (`false`: engine `latree-btree`). `crash_consistent` is set by the engine (true for
    /// a persistent tree, false for a volatile one).
    pub tree: LaTreeOptions,
    /// When an acknowledged write survives a crash (persistent trees).
    pub durability: Durability,
    /// Whether the store must exist (a missing or empty superblock is then `Corruption`).
    pub intent: OpenIntent,
    /// A checkpoint is taken (by the background thread) once this many bytes were logged
    /// since the last one; the log is truncated after each.
    pub checkpoint_log_bytes: u64,
    /// Disk space the store may use (0: no limit). At the budget, puts that add data are
    /// refused with `NoSpace`; deletes and overwrites by values no longer go through.
    pub disk_budget_bytes: u64,
    /// Largest encoded tree checkpoint committed inline in the superblock; larger ones go to
    /// a side file the superblock names. At most (and by default)
    /// [`CHECKPOINT_INLINE_BYTES_MAX`]; tests lower it to exercise side files.
    pub checkpoint_inline_bytes_max: usize,
    /// Run [`crate::tree::LaTree::verify`] after every checkpoint (tests).
    pub verify_each_checkpoint: bool,
}

impl LaTreeEngineOptions {
    /// The LA-tree for `device` with lamina's full key and value limits (1024-byte keys,
    /// 4096-byte values), which need 16 KiB nodes (README, "Adaptations: Node size"; a tree
    /// with smaller nodes opens with lower limits in `tree`).
    pub fn for_device(device: DeviceProfile) -> Self {
        let mut tree = LaTreeOptions::for_device(device);
        // A root emptying is spread over the updates that follow (`tree/drain.rs`).
        tree.drain_root = true;
        tree.key_bytes_max = KEY_BYTES_MAX;
        tree.value_bytes_max = VALUE_BYTES_MAX;
        tree.node_bytes =
            tree.node_bytes.max(NodeLayout::node_bytes_min_for(KEY_BYTES_MAX, VALUE_BYTES_MAX));
        LaTreeEngineOptions {
            tree,
            durability: Durability::Sync,
            intent: OpenIntent::CreateIfMissing,
            checkpoint_log_bytes: CHECKPOINT_LOG_BYTES_DEFAULT,
            disk_budget_bytes: 0,
            checkpoint_inline_bytes_max: CHECKPOINT_INLINE_BYTES_MAX,
            verify_each_checkpoint: false,
        }
    }

    /// The paper's baseline B+tree (engine `latree-btree`): the same with `buffered = false`.
    pub fn btree_for_device(device: DeviceProfile) -> Self {
        let mut options = Self::for_device(device);
        options.tree.buffered = false;
        options
    }

    /// The engine's name for these options.
    pub fn engine_name(&self) -> &'static str {
        if self.tree.buffered { "latree" } else { "latree-btree" }
    }

    /// Refuses options out of range (the tree's included: its node layout against its key
    /// and value limits, so a bad combination is refused before anything is created).
    pub fn validate(&self) -> Result<()> {
        self.tree.validate()?;
        NodeLayout::new(self.tree.node_bytes, self.tree.key_bytes_max, self.tree.value_bytes_max)?;
        self.durability.validate()?;
        if !(CHECKPOINT_LOG_BYTES_MIN..=CHECKPOINT_LOG_BYTES_MAX)
            .contains(&self.checkpoint_log_bytes)
        {
            return Err(Error::option(
                "checkpoint_log_bytes",
                format!(
                    "{} is outside {CHECKPOINT_LOG_BYTES_MIN}..={CHECKPOINT_LOG_BYTES_MAX}",
                    self.checkpoint_log_bytes
                ),
            ));
        }
        if self.checkpoint_inline_bytes_max > CHECKPOINT_INLINE_BYTES_MAX {
            return Err(Error::option(
                "checkpoint_inline_bytes_max",
                format!(
                    "{} is over {CHECKPOINT_INLINE_BYTES_MAX}",
                    self.checkpoint_inline_bytes_max
                ),
            ));
        }
        Ok(())
    }
}

impl Default for LaTreeEngineOptions {
    /// [`LaTreeEngineOptions::for_device`] on the `host` profile.
    fn default() -> Self {
        Self::for_device(DeviceProfile::host())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_take_the_full_limits_and_validate() {
        for device in [DeviceProfile::host(), DeviceProfile::nand_toshiba()] {
            let options = LaTreeEngineOptions::for_device(device);
            options.validate().unwrap();
            assert_eq!(options.tree.node_bytes, 16 << 10);
            assert_eq!(options.tree.key_bytes_max, KEY_BYTES_MAX);
            assert_eq!(options.tree.value_bytes_max, VALUE_BYTES_MAX);
            assert_eq!(options.engine_name(), "latree");
            let btree = LaTreeEngineOptions::btree_for_device(device);
            assert!(!btree.tree.buffered);
            assert_eq!(btree.engine_name(), "latree-btree");
        }
    }

    #[test]
    fn bad_options_name_themselves() {
        let mut options = LaTreeEngineOptions { checkpoint_log_bytes: 1, ..Default::default() };
        let err = options.validate().unwrap_err().to_string();
        assert!(err.contains("checkpoint_log_bytes"), "{err}");
        options.checkpoint_log_bytes = CHECKPOINT_LOG_BYTES_DEFAULT;
        options.tree.node_bytes = 4096;
        let err = options.validate().unwrap_err().to_string();
        assert!(err.contains("node_bytes"), "{err}");
    }
}
