//! The Nested B-tree (NB-tree) of Zeighami and Wong, "Bridging the Gap Between Theory and
//! Practice on Insertion-Intensive Database" (`docs/DESIGN.md`, "Papers"), final
//! version of section 5: an s-tree of s-nodes, each owning a d-tree written sequentially,
//! a Bloom filter per d-tree, single recursive flush, lazy removal and deamortized
//! insertion. See the crate README for the map from paper sections to modules.
//!
//! - [`options`]: `f`, sigma, pages, Bloom bits, deamortization mode.
//! - [`entry`]: entries and their sizes.
//! - [`dtree`]: d-tree files (written once, sequentially; read with in-memory inner nodes).
//! - [`memtable`]: the root's d-tree in memory.
//! - [`stree`]: the s-tree and its invariants.
//! - [`flush`]: HandleFullSNode as a resumable job (flush, SNodeSplit, lazy removal).
//! - [`manifest`], [`persist`]: the committed state and recovery.
//! - [`engine`]: [`NbTree`], the `OrderedIndex`.

#![forbid(unsafe_code)]

pub mod dtree;
pub mod engine;
pub mod entry;
pub mod flush;
pub mod manifest;
pub mod memtable;
pub mod options;
pub mod persist;
pub mod stree;
mod verify;

pub use engine::NbTree;
pub use options::{Deamortization, NbTreeOptions};
