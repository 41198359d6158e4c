//! How the benchmark reaches the engines it measures, without depending on any of them.
//!
//! The bench library only knows [`lamina_core::OrderedIndex`]. A binary that links engines
//! implements [`EngineFactory`] (the `lamina` CLI does it for lamina's engines through
//! `lamina::Db`, and for the peer engines behind its `peers` feature) and hands it to
//! [`crate::run_bench`]. An implementation is small:
//!
//! ```
//! use std::{path::Path, sync::Arc};
//! use lamina_bench::{EngineFactory, EngineInfo, EngineParams};
//! use lamina_core::{Durability, Error, OrderedIndex, Result};
//!
//! struct Nothing;
//! impl EngineFactory for Nothing {
//!     fn engines(&self) -> Vec<EngineInfo> {
//!         vec![EngineInfo { name: "none".into(), description: "no engine".into() }]
//!     }
//!     fn check(&self, name: &str, params: &EngineParams) -> Result<()> {
//!         Err(Error::Unsupported { what: format!("engine `{name}` is only an example") })
//!     }
//!     fn open(&self, name: &str, _dir: &Path, _p: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
//!         Err(Error::Unsupported { what: format!("engine `{name}` is only an example") })
//!     }
//! }
//! assert!(Nothing.check("none", &EngineParams::default()).is_err());
//! ```

use std::{path::Path, sync::Arc};

use lamina_core::{Durability, OrderedIndex, Result};

/// One engine a factory can open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineInfo {
    /// Name used with `--engines` (`mem`, `fdtree`, `rocksdb`, ...). Also the name of its
    /// subdirectory under `--dir`.
    pub name: String,
    /// One line for listings.
    pub description: String,
}

/// The engine-independent settings every open receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineParams {
    /// When acknowledged writes survive a crash.
    pub durability: Durability,
    /// Memory for an engine's in-memory level or buffers.
    pub memory_budget_bytes: u64,
    /// Block cache size.
    pub cache_bytes: u64,
    /// Device profile (from `lamina-storage`) whose modeled time the engine reports.
    pub device: Option<String>,
    /// Impose the device profile's latency for real.
    pub emulate: bool,
}

impl Default for EngineParams {
    fn default() -> Self {
        EngineParams {
            durability: Durability::None,
            memory_budget_bytes: 4 << 20,
            cache_bytes: 15 << 20,
            device: None,
            emulate: false,
        }
    }
}

/// Opens the engines a benchmark compares.
///
/// Contract: `engines` lists every name `open` accepts; `check` says, without touching the
/// disk, whether `open` would accept these parameters (an `Error::Unsupported` or
/// `Error::InvalidArgument` saying why not), so the bench can skip or refuse an
/// engine/durability combination before any run starts; `open` creates a fresh engine in
/// `dir` (an empty directory the bench created).
pub trait EngineFactory: Send + Sync {
    /// Every engine this factory can open.
    fn engines(&self) -> Vec<EngineInfo>;

    /// Whether `name` can be opened with `params`; the error says why not.
    fn check(&self, name: &str, params: &EngineParams) -> Result<()>;

    /// Opens engine `name` in `dir`.
    fn open(&self, name: &str, dir: &Path, params: &EngineParams) -> Result<Arc<dyn OrderedIndex>>;
}
