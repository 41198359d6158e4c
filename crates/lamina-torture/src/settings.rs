//! The store's settings: `Durability::Sync` (every acknowledged write must survive) and the
//! smallest memory budget, so flushes, merges and checkpoints run all the time.

use lamina::{Durability, EngineKind, Options};

/// Memory budget of the tortured store (the smallest the options accept is 64 KiB).
pub const MEMORY_BUDGET_BYTES: u64 = 128 << 10;

/// The options the child writes and the parent checks with.
pub fn options(engine: EngineKind) -> Options {
    Options {
        engine,
        durability: Durability::Sync,
        memory_budget_bytes: MEMORY_BUDGET_BYTES,
        ..Options::default()
    }
}
