//! The FD+tree of Thonangi, Babu and Yang, "A Practical Concurrent Index for Solid-State
//! Drives" (CIKM 2012; `docs/DESIGN.md`, "Papers"), with the FD+FC (default),
//! FD+XM and FD+DS concurrency schemes. See the crate README for the map from paper sections
//! to modules.
//!
//! - [`options`]: `gamma`, `kappa_0`, block and segment sizes; how fixed-`beta` formulas
//!   become bytes.
//! - [`format`]: entries, segments, blocks, Bloom filters and level indexes as bytes.
//! - [`level`]: disk levels and `L_0` runs: reading, writing, latches.
//! - [`level_map`]: finished level files mapped read-only for lookups.
//! - [`memtable`], [`top`]: `L_0` (memtables, runs, fences); `flush`: memtable to run.
//! - [`tree`]: the tree's state and counters; `lookup` (Algorithm 2), `scan`.
//! - [`merge`]: merge-prepare, -execute and -finalize (section 2.3), FD+XM/FD+DS merges.
//! - [`fc`]: FD+FC's wavefront merge and its recovery (section 4, Remark A.6).
//! - [`persist`]: the manifest, commits and recovery.
//! - [`engine`]: [`FdTree`], the `OrderedIndex`.

#![forbid(unsafe_code)]

pub mod engine;
pub mod fc;
mod flush;
pub mod format;
pub mod level;
pub mod level_map;
mod lookup;
pub mod memtable;
pub mod merge;
pub mod options;
pub mod persist;
mod scan;
mod scan_cursor;
pub mod store;
pub mod top;
pub mod tree;
mod verify;

pub use engine::{FdTree, RUNS_PACE_FLOOR, RUNS_PACE_SPAN, runs_allowed};
pub use merge::Trigger;
pub use options::{FcMode, FdTreeOptions, Params};
pub use tree::{Counters, MergeCounts, MergeReport, Tree};
