//! D-trees (paper sections 3.1 and 4.1): immutable B+-trees of fanout `B` (what fits a page),
//! one per s-node, each in its own file written once, sequentially, leaves in key order, with
//! a Bloom filter (section 5.2). Layout: `docs/format/nbtree-dtree.md`.
//!
//! - [`format`]: file names, node header, footer, layout constants.
//! - [`node`]: leaf entries and internal children.
//! - [`writer`]: [`DTreeWriter`], the streaming bottom-up bulk load with bounded steps.
//! - [`reader`]: [`DTree`], open and point lookups.
//! - [`cursor`]: [`DTreeCursor`], ordered scans.
//! - `verify`: [`DTree::verify`], the full check.

pub mod cursor;
pub mod format;
pub mod node;
pub mod reader;
mod verify;
pub mod writer;

pub use cursor::DTreeCursor;
pub use format::{DTreeParams, file_name, parse_file_name};
pub use reader::DTree;
pub use writer::DTreeWriter;
