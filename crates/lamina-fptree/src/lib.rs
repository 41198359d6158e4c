//! `fptree`: the Fingerprinting Persistent Tree of Oukid, Lasperas, Nica, Willhalm and Lehner
//! (SIGMOD 2016; `docs/DESIGN.md`, "Papers"): leaves in persistent
//! memory (unsorted, a validity bitmap written p-atomically, one-byte fingerprints, micro-logs
//! for splits and deletes), inner nodes in DRAM rebuilt from the leaves on recovery, and
//! selective concurrency (optimistic version locks on the inner nodes in place of HTM, leaf
//! locks for the persistent part).
//!
//! - [`FpTree`]: the tree (`get`, `put`, `delete`, `scan`, recovery on `open`), generic over
//!   the persistent region and the inner nodes ([`inner::InnerIndex`]).
//! - The persistent part: `leaf` (Figure 2, with the pending slots of a write in progress),
//!   `leaf_lock` (the leaf's version lock, section 4.4), `record` (a slot's record: a blob,
//!   Appendix C, or inline, section 4's fixed-size case), `blob`, `fingerprint` (section 4.2),
//!   `microlog`, `split` (Algorithms 3-4), `delete_leaf` (6-7), `groups` (10-13), `recovery`
//!   (9, 17) with `recovery_records` (the check of every leaf, on several threads), `write`
//!   (2, 5, 8, 14-16).
//!
//! Byte layout: `docs/format/fptree.md`. Algorithm map and adaptations: the crate README.

mod blob;
mod delete_leaf;
pub mod engine;
pub mod fingerprint;
mod groups;
pub mod inner;
pub mod layout;
pub mod leaf;
pub mod leaf_lock;
mod microlog;
pub mod record;
mod recovery;
mod recovery_records;
mod split;
mod store;
mod tree;
mod write;

pub use engine::{FpTreeEngine, FpTreeEngineOptions};
pub use layout::FpTreeConfig;
pub use recovery::RecoveryReport;
pub use tree::{FpTree, FpTreeStats, Record};
