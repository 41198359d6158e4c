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
//!         vec![EngineInfo::new("none", "no engine")]
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
    /// Name used with `--engines` (`mem`, `fdtree-fc`, `rocksdb`, ...), in reports, and as
    /// the name of its subdirectory under `--dir`.
    pub name: String,
    /// One line for listings.
    pub description: String,
    /// Other names accepted for the same engine (`fdtree` for `fdtree-fc`). The bench
    /// resolves them to [`EngineInfo::name`] before anything runs, so reports always show
    /// `name`, however the engine was asked for.
    pub aliases: Vec<String>,
}

impl EngineInfo {
    /// An engine without aliases.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        EngineInfo { name: name.into(), description: description.into(), aliases: Vec::new() }
    }

    /// Whether `name` is this engine's name or one of its aliases.
    pub fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.iter().any(|a| a == name)
    }

    /// `name`, followed by its aliases in parentheses (for error messages and listings).
    pub fn display_name(&self) -> String {
        if self.aliases.is_empty() {
            self.name.clone()
        } else {
            format!("{} (also {})", self.name, self.aliases.join(", "))
        }
    }
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
    /// FD+tree size ratio gamma (`lamina::Options::fdtree_size_ratio`); `None`: the engine's
    /// default. Engines without levels refuse it (peers ignore it).
    pub fdtree_size_ratio: Option<u32>,
    /// FD+tree's longest key (`lamina::Options::fdtree_key_bytes_max`); `None`: the API
    /// limit.
    pub fdtree_key_bytes_max: Option<usize>,
    /// NB-tree s-tree fanout `f` (`lamina::Options::nbtree_fanout`); `None`: the engine's
    /// default. Other engines refuse it (peers ignore it).
    pub nbtree_fanout: Option<u32>,
}

impl Default for EngineParams {
    fn default() -> Self {
        EngineParams {
            durability: Durability::None,
            memory_budget_bytes: 4 << 20,
            cache_bytes: 15 << 20,
            device: None,
            emulate: false,
            fdtree_size_ratio: None,
            fdtree_key_bytes_max: None,
            nbtree_fanout: None,
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

    /// The listed name `name` stands for: itself, or the engine it is an alias of; `None`
    /// when no listed engine answers to it.
    fn canonical_name(&self, name: &str) -> Option<String> {
        self.engines().into_iter().find(|e| e.answers_to(name)).map(|e| e.name)
    }

    /// Whether `name` can be opened with `params`; the error says why not.
    fn check(&self, name: &str, params: &EngineParams) -> Result<()>;

    /// Opens engine `name` in `dir`.
    fn open(&self, name: &str, dir: &Path, params: &EngineParams) -> Result<Arc<dyn OrderedIndex>>;
}

/// Several factories as one: `engines` lists theirs in order, and each name is served by
/// the first factory that lists it. This is how the CLI adds the peer engines (feature
/// `peers`) to lamina's own.
pub struct Factories {
    members: Vec<Box<dyn EngineFactory>>,
}

impl std::fmt::Debug for Factories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.engines().into_iter().map(|e| e.name).collect();
        f.debug_struct("Factories").field("engines", &names).finish()
    }
}

impl Factories {
    /// The union of `members`.
    pub fn new(members: Vec<Box<dyn EngineFactory>>) -> Self {
        Factories { members }
    }

    fn owner(&self, name: &str) -> Result<&dyn EngineFactory> {
        self.members
            .iter()
            .find(|m| m.engines().iter().any(|e| e.answers_to(name)))
            .map(AsRef::as_ref)
            .ok_or_else(|| {
                let known: Vec<String> =
                    self.engines().iter().map(EngineInfo::display_name).collect();
                lamina_core::Error::option(
                    "engines",
                    format!("unknown engine `{name}`; known: {}", known.join(", ")),
                )
            })
    }
}

impl EngineFactory for Factories {
    fn engines(&self) -> Vec<EngineInfo> {
        let mut all: Vec<EngineInfo> = Vec::new();
        for info in self.members.iter().flat_map(|m| m.engines()) {
            if !all.iter().any(|e| e.answers_to(&info.name)) {
                all.push(info);
            }
        }
        all
    }

    fn check(&self, name: &str, params: &EngineParams) -> Result<()> {
        self.owner(name)?.check(name, params)
    }

    fn open(&self, name: &str, dir: &Path, params: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
        self.owner(name)?.open(name, dir, params)
    }
}

#[cfg(test)]
mod tests {
    use lamina_core::Error;

    use super::*;

    struct Named(&'static str);

    impl EngineFactory for Named {
        fn engines(&self) -> Vec<EngineInfo> {
            let mut info = EngineInfo::new(self.0, "");
            info.aliases.push(format!("{}-alias", self.0));
            vec![info]
        }
        fn check(&self, _: &str, _: &EngineParams) -> Result<()> {
            Err(Error::Unsupported { what: format!("from {}", self.0) })
        }
        fn open(&self, _: &str, _: &Path, _: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
            Err(Error::Unsupported { what: format!("from {}", self.0) })
        }
    }

    #[test]
    fn factories_dispatch_by_name() {
        let all =
            Factories::new(vec![Box::new(Named("a")), Box::new(Named("b")), Box::new(Named("a"))]);
        let names: Vec<String> = all.engines().into_iter().map(|e| e.name).collect();
        assert_eq!(names, ["a", "b"]);
        let p = EngineParams::default();
        assert!(all.check("b", &p).unwrap_err().to_string().contains("from b"));
        assert!(all.check("c", &p).unwrap_err().to_string().contains("unknown engine `c`"));
        assert!(all.check("b-alias", &p).unwrap_err().to_string().contains("from b"));
        assert_eq!(all.canonical_name("a-alias").as_deref(), Some("a"));
        assert_eq!(all.canonical_name("b").as_deref(), Some("b"));
        assert_eq!(all.canonical_name("c"), None);
    }
}
