//! Disk levels and `L_0` runs: the level itself (`disk.rs`), its block latches
//! (`latches.rs`), its read-only map (`map.rs`), writing one (`writer.rs`) and reading one in
//! key order (`cursor.rs`).

pub mod cursor;
pub mod disk;
pub mod latches;
pub mod map;
pub mod writer;

pub use disk::{DiskLevel, IndexRef, LevelHit, TailFences};
pub use latches::BlockLatches;
pub use map::LevelMap;
pub use writer::{LevelWriter, Visibility};
