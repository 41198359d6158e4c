//! lamina: an embeddable, concurrent, crash-safe, ordered key-value store.
//!
//! ```
//! use lamina::{Db, Durability, EngineKind, KeyRange, Options};
//!
//! # fn main() -> lamina::Result<()> {
//! let dir = tempfile::tempdir().unwrap();
//! let options = Options { engine: EngineKind::Mem, durability: Durability::None, ..Options::default() };
//! let db = Db::open(dir.path(), options)?;
//! db.put(b"apple", b"red")?;
//! db.put(b"banana", b"yellow")?;
//! assert_eq!(db.get(b"apple")?.as_deref(), Some(&b"red"[..]));
//! assert!(db.compare_and_swap(b"apple", Some(b"red"), Some(b"green"))?.is_swapped());
//! let fruits: Vec<_> = db.iter(KeyRange::all()).collect::<lamina::Result<_>>()?;
//! assert_eq!(fruits.len(), 2);
//! db.close()?;
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

mod db;
mod engine_kind;
mod engine_settings;
mod iter;
mod meta;
mod options;
mod verify;

pub use db::{Db, FPTREE_FILE_NAME};
pub use engine_kind::EngineKind;
pub use engine_settings::{
    BenchmarkOptions, EngineChoice, EngineSettings, FdtreeSettings, LogRingSettings, NbtreeSettings,
};
pub use iter::ScanIter;
pub use lamina_core::limits;
pub use lamina_core::{
    BatchOp, CasOutcome, DISK_BUDGET_OPTION, Durability, Entry, Error, IntoKeyRange,
    InvalidArgument, IoStats, KeyRange, MEMORY_LIMIT_OPTION, OpenIntent, OrderedIndex, Result,
    Stats, WriteBatch,
};
#[cfg(feature = "fdtree")]
pub use lamina_fdtree::FcMode;
pub use lamina_storage::DeviceProfile;
pub use meta::{META_FILE_NAME, Meta};
pub use options::{FPTREE_REGION_BYTES_DEFAULT, MEMORY_LIMIT_BYTES_MIN, Options};
pub use verify::VerifyReport;

/// The README's example, compiled and run as a doctest so it stays true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
