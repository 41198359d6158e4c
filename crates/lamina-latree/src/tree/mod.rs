//! The LA-tree (sections 2.1-2.3, 3), single-threaded: lazy updates into the root buffer,
//! emptying of non-leaf and leaf subtrees with splits, merges and buffer splitting, lookups
//! through the buffers on the path with ADAPT at each, range scans resolved by sequence
//! number, and `verify()`.

mod checkpoint;
mod checkpoint_files;
mod core;
mod empty;
mod ops;
mod options;
mod scan;
mod split;
mod verify;

pub use self::core::{BUFFER_FILE, LaTree, NODE_FILE, NODE_SLOTS_MAX, TreeCounters};
pub use checkpoint::{CHECKPOINT_FORMAT_VERSION, CheckpointShape, ROOT_LEVEL_MAX, TreeCheckpoint};
pub use checkpoint_files::CheckpointFiles;
pub use options::{
    BUFFER_ENTRIES_MAX, LEVELS_PER_BUFFER_MAX, LaTreeOptions, NODE_CACHE_EXTRA_BYTES_MAX,
};
pub use scan::SCAN_LIMIT_MAX;
pub use verify::TreeStats;

#[cfg(test)]
mod verify_tests;
