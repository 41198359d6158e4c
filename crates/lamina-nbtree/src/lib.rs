//! The Nested B-tree (NB-tree) of Zeighami and Wong, "Bridging the Gap Between Theory and
//! Practice on Insertion-Intensive Database" (`shared/papers/nbtree-nested-btrees.md`), final
//! version of section 5: an s-tree of s-nodes, each owning a d-tree written sequentially,
//! a Bloom filter per d-tree, single recursive flush, lazy removal and deamortized
//! insertion. See the crate README for the map from paper sections to modules.

pub mod dtree;
pub mod engine;
pub mod entry;
pub mod options;

pub use engine::NbTree;
pub use options::{Deamortization, NbTreeOptions};
