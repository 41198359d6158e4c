//! The LA-tree (sections 2.1-2.3, 3), single-threaded: lazy updates into the root buffer,
//! emptying of non-leaf and leaf subtrees with splits, merges and buffer splitting, lookups
//! through the buffers on the path with ADAPT at each, range scans resolved by sequence
//! number, `verify()`, checkpoints, and section 4.3's two-partition reclamation.

mod checkpoint;
mod checkpoint_files;
mod core;
mod drain;
mod empty;
mod ops;
mod options;
mod reclaim;
mod scan;
mod split;
mod verify;

pub use self::core::{
    BUFFER_FILE, BUFFER_FILE_1, LaTree, NODE_FILE, NODE_FILE_1, NODE_SLOTS_MAX, TREE_FILES,
    TreeCounters, buffer_file, node_file,
};
pub use checkpoint::{CHECKPOINT_FORMAT_VERSION, CheckpointShape, ROOT_LEVEL_MAX, TreeCheckpoint};
pub use checkpoint_files::CheckpointFiles;
pub use ops::{EmptyWish, LookupPass};
pub use options::{
    BUFFER_ENTRIES_MAX, LEVELS_PER_BUFFER_MAX, LaTreeOptions, NODE_CACHE_EXTRA_BYTES_MAX,
    PARTITION_BYTES_DEFAULT, PARTITION_BYTES_MAX, PARTITION_BYTES_MIN,
};
pub use reclaim::{
    EMPTY_ALL_PASSES_MAX, ERASE_BLOCK_BYTES, ERASE_BLOCK_NS, PartitionUsage, ReclaimCounters,
    Retired,
};
pub use scan::SCAN_LIMIT_MAX;
pub use verify::TreeStats;

#[cfg(test)]
mod verify_tests;
