//! The FD+tree of Thonangi, Babu and Yang, "A Practical Concurrent Index for Solid-State
//! Drives" (`shared/papers/fdtree-fdfc-concurrent-ssd-index.md`), with the FD+FC (default),
//! FD+XM and FD+DS concurrency schemes. See the crate README for the map from paper sections
//! to modules.
//!
//! - [`options`]: `gamma`, `kappa_0`, block size; how fixed-`beta` formulas become bytes.
//! - [`entry`], [`block`]: data and fence entries (Figure 3) and their block format.
//! - [`top`], [`level`]: `L_0` in memory and the disk levels.
//! - [`tree`]: modification (section 2.2, Algorithm 1) and the counters `N_delta`/`N_nabla`.
//! - `lookup` (Algorithm 2), `scan`, `merge` (section 2.3), `verify` (I1-I6).
//! - [`engine`]: [`FdTree`], the `OrderedIndex` with FD+XM, FD+DS (section 3) or FD+FC
//!   (section 4); `merger`: the background merge thread; [`latch`]: per-block latches;
//!   [`fc`]: FD+FC's wavefront merge and its recovery (Remark A.6).
//! - [`manifest`], [`persist`]: the committed description of the tree, checkpoints through
//!   the superblock, the group-commit log and recovery.

pub mod block;
pub mod engine;
pub mod entry;
pub mod fc;
pub mod latch;
pub mod level;
mod lookup;
pub mod manifest;
pub mod merge;
mod merger;
pub mod options;
pub mod persist;
pub mod probe;
mod scan;
mod sealed;
pub mod store;
pub mod top;
pub mod tree;
mod verify;

pub use engine::FdTree;
pub use merge::Trigger;
pub use options::{FcMode, FdTreeOptions, Params};
pub use tree::{Counters, MergeCounts, MergeReport, Tree};
