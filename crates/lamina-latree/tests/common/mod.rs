//! What the engine tests share.

use lamina_core::{Durability, OpenIntent};
use lamina_latree::LaTreeEngineOptions;
use lamina_latree::engine::CHECKPOINT_LOG_BYTES_MAX;
use lamina_storage::DeviceProfile;

/// A small engine on the `ssd-msp7525` profile: root buffers of `buffer_entries_max`
/// entries, 256 KiB of memory, `Sync` writes, and checkpoints only when the test asks
/// for them (the log's size never triggers one).
pub fn explicit_checkpoint_options(
    buffer_entries_max: u64,
    intent: OpenIntent,
) -> LaTreeEngineOptions {
    let mut options = LaTreeEngineOptions::for_device(DeviceProfile::ssd_msp7525());
    options.tree.buffer_entries_max = buffer_entries_max;
    options.tree.memory_bytes = 256 << 10;
    options.durability = Durability::Sync;
    options.intent = intent;
    options.checkpoint_log_bytes = CHECKPOINT_LOG_BYTES_MAX;
    options
}
