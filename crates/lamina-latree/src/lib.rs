//! `latree`: the Lazy-Adaptive Tree of Agrawal, Ganesan, Sitaraman, Diao and Singh (VLDB
//! 2009; `docs/DESIGN.md`, "Papers"): a B+tree whose nodes at every K-th
//! level carry a flash-resident buffer of pending updates, each emptied when the ADAPT online
//! algorithm (section 2.2) says the lookups it slows have paid for an emptying.
//!
//! Built so far (issue 18, in progress): the ADAPT algorithm and the offline optimum it is
//! measured against (`adapt`), the cost model of section 3 (`cost`), the buffers' on-flash
//! layout and write-coalescing pool (`buffer`), and the nodes, their table and cache
//! (`node`), and the single-threaded tree core that puts them together (`tree`: lazy updates,
//! emptying with splits, merges and buffer splitting, lookups with ADAPT, range scans,
//! `verify()`), its checkpoints (`tree::TreeCheckpoint`: crash consistent between
//! checkpoints), its unbuffered baseline (`buffered = false`), and the engine (`engine`:
//! [`LaTreeEngine`] behind `lamina_core::OrderedIndex`, one tree lock, the group-commit log,
//! checkpoints through the superblock, recovery).

#![forbid(unsafe_code)]

pub mod adapt;
pub mod buffer;
pub mod cost;
pub mod engine;
pub mod node;
pub mod tree;

pub use engine::{LaTreeEngine, LaTreeEngineOptions};
