//! Disk levels and `L_0` runs: the level itself (`disk.rs`), its block latches
//! (`latches.rs`), writing one (`writer.rs`; continuing one a merge was writing,
//! `writer/resume.rs`) and reading one in key order (`cursor.rs`).

pub mod cursor;
pub mod disk;
pub mod latches;
pub mod writer;

pub use disk::{DiskLevel, IndexRef, LevelHit, SegmentRead, TailFences};
pub use latches::BlockLatches;
pub use writer::{LevelWriter, Visibility};
