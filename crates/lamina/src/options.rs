//! Options of [`crate::Db::open`], validated before anything is created.

use lamina_core::{Durability, Error, Result};
use lamina_fdtree::{FcMode, FdTreeOptions};
use lamina_storage::DeviceProfile;

use crate::EngineKind;

/// How to open a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The index design. An existing directory must have been created with the same one.
    pub engine: EngineKind,
    /// When acknowledged writes survive a crash.
    pub durability: Durability,
    /// Memory an engine may use for its in-memory level or buffers (FD+tree's L0, NB-tree's
    /// root); 64 KiB to 64 GiB.
    pub memory_budget_bytes: u64,
    /// Block cache size; 0 disables the cache; at most 1 TiB.
    pub cache_bytes: u64,
    /// Create the directory if it does not exist.
    pub create_if_missing: bool,
    /// The most disk space the engine may use; 0 (the default): no cap, the engine grows with
    /// its data. Enforced by `mem` and `trie` (their log ring grows with the live data up
    /// to it; it may be raised or lowered from one open to the next): at the budget, writes
    /// that add data fail with `Error::NoSpace` naming this option, while deletes and
    /// overwrites that do not grow the data are accepted. Refused as unsupported by the
    /// other engines.
    pub disk_budget_bytes: u64,
    /// The most memory the engine's data may take (`Stats::memory_bytes`); 0 (the
    /// default): no limit. Enforced by the in-memory engines `mem` and `trie`: writes that
    /// would take them past it fail with `Error::NoSpace` naming this option (instead of
    /// the process running out of memory), while deletes and writes that do not grow the
    /// data are accepted. At least 1 MiB if set. Refused as unsupported by the other
    /// engines.
    pub memory_limit_bytes: u64,
    /// The device whose cost model turns the engine's I/O into modeled time
    /// (`Stats::io.modeled_device_ns`); `host` models nothing.
    pub device: DeviceProfile,
    /// Impose the device's modeled latency for real (sleep on each access), so wall-clock
    /// runs reproduce its asymmetry.
    pub emulate_device: bool,
    /// Engine-specific tuning, `fdtree` only: the size ratio gamma between adjacent levels
    /// (FD+FC section 2, invariant I3: `kappa_i = gamma^i kappa_0`; the paper's default is
    /// 24), in `2..=lamina_fdtree::options::SIZE_RATIO_MAX`. `None` takes the engine's
    /// default. Refused as unsupported with the other engines.
    pub fdtree_size_ratio: Option<u32>,
    /// Engine-specific tuning, `fdtree` only: the longest key accepted, in
    /// `1..=limits::KEY_BYTES_MAX` (longer keys are refused as invalid arguments). A block
    /// must hold `2 * gamma + 1` fences of the longest key (see `lamina-fdtree`'s README,
    /// "variable-length keys"), so a large `fdtree_size_ratio` such as the paper's 24 needs
    /// it lowered (or its keys would need bigger blocks). `None`: the API limit.
    pub fdtree_key_bytes_max: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            engine: EngineKind::default(),
            durability: Durability::Sync,
            memory_budget_bytes: 4 << 20,
            cache_bytes: 15 << 20,
            create_if_missing: true,
            disk_budget_bytes: 0,
            memory_limit_bytes: 0,
            device: DeviceProfile::host(),
            emulate_device: false,
            fdtree_size_ratio: None,
            fdtree_key_bytes_max: None,
        }
    }
}

/// Smallest `memory_budget_bytes`.
pub const MEMORY_BUDGET_BYTES_MIN: u64 = 64 << 10;
/// Largest `memory_budget_bytes`.
pub const MEMORY_BUDGET_BYTES_MAX: u64 = 64 << 30;
/// Largest `cache_bytes`.
pub const CACHE_BYTES_MAX: u64 = 1 << 40;
/// Smallest nonzero `memory_limit_bytes` (1 MiB).
pub const MEMORY_LIMIT_BYTES_MIN: u64 = 1 << 20;

impl Options {
    /// Checks every option; the error names the option and its range.
    pub fn validate(&self) -> Result<()> {
        self.durability.validate()?;
        if !(MEMORY_BUDGET_BYTES_MIN..=MEMORY_BUDGET_BYTES_MAX).contains(&self.memory_budget_bytes)
        {
            return Err(Error::option(
                "memory_budget_bytes",
                format!(
                    "{} is outside {MEMORY_BUDGET_BYTES_MIN}..={MEMORY_BUDGET_BYTES_MAX}",
                    self.memory_budget_bytes
                ),
            ));
        }
        if self.cache_bytes > CACHE_BYTES_MAX {
            return Err(Error::option(
                "cache_bytes",
                format!("{} is over {CACHE_BYTES_MAX}", self.cache_bytes),
            ));
        }
        let in_memory = matches!(self.engine, EngineKind::Mem | EngineKind::Trie);
        for (name, value, what, supported) in [
            ("disk_budget_bytes", self.disk_budget_bytes, "a disk budget", true),
            ("memory_limit_bytes", self.memory_limit_bytes, "a memory limit", in_memory),
        ] {
            if value != 0 && !supported {
                return Err(Error::Unsupported {
                    what: format!(
                        "{name} = {value} with engine `{}`, which does not enforce {what}; \
                         pass 0",
                        self.engine
                    ),
                });
            }
        }
        if self.memory_limit_bytes != 0 && self.memory_limit_bytes < MEMORY_LIMIT_BYTES_MIN {
            return Err(Error::option(
                "memory_limit_bytes",
                format!(
                    "{} is below {MEMORY_LIMIT_BYTES_MIN}; set {} higher (or 0: no limit)",
                    self.memory_limit_bytes,
                    lamina_core::MEMORY_LIMIT_OPTION
                ),
            ));
        }
        let fdtree = matches!(self.engine, EngineKind::Fdtree(_));
        for (name, given) in [
            ("fdtree_size_ratio", self.fdtree_size_ratio.is_some()),
            ("fdtree_key_bytes_max", self.fdtree_key_bytes_max.is_some()),
        ] {
            if given && !fdtree {
                return Err(Error::Unsupported {
                    what: format!(
                        "{name} with engine `{}`, which is not fdtree; pass None",
                        self.engine
                    ),
                });
            }
        }
        if let Some(key_bytes_max) = self.fdtree_key_bytes_max
            && !(1..=lamina_core::limits::KEY_BYTES_MAX).contains(&key_bytes_max)
        {
            return Err(Error::option(
                "fdtree_key_bytes_max",
                format!("{key_bytes_max} is outside 1..={}", lamina_core::limits::KEY_BYTES_MAX),
            ));
        }
        if let Some(ratio) = self.fdtree_size_ratio {
            let max = lamina_fdtree::options::SIZE_RATIO_MAX;
            if !(2..=max).contains(&ratio) {
                return Err(Error::option(
                    "fdtree_size_ratio",
                    format!("gamma {ratio} is outside 2..={max}"),
                ));
            }
        }
        if let EngineKind::Fdtree(mode) = self.engine {
            // The engine's own sizing rules (block capacity against gamma and key length), so
            // a bad combination is refused before anything is created.
            self.fdtree_options(mode).params()?;
        }
        Ok(())
    }

    /// The `fdtree` engine's options for concurrency scheme `mode`.
    pub(crate) fn fdtree_options(&self, mode: FcMode) -> FdTreeOptions {
        let defaults = FdTreeOptions::default();
        FdTreeOptions {
            memory_budget_bytes: self.memory_budget_bytes,
            cache_bytes: usize::try_from(self.cache_bytes).unwrap_or(usize::MAX),
            mode,
            durability: self.durability,
            size_ratio: self.fdtree_size_ratio.unwrap_or(defaults.size_ratio),
            key_bytes_max: self.fdtree_key_bytes_max.unwrap_or(defaults.key_bytes_max),
            disk_budget_bytes: self.disk_budget_bytes,
            ..defaults
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn mem() -> Options {
        Options { engine: EngineKind::Mem, ..Options::default() }
    }

    #[test]
    fn out_of_range_options_name_themselves() {
        let err = Options { memory_budget_bytes: 1, ..mem() }.validate().unwrap_err();
        assert!(err.to_string().contains("memory_budget_bytes"), "{err}");
        let err = Options { cache_bytes: u64::MAX, ..mem() }.validate().unwrap_err();
        assert!(err.to_string().contains("cache_bytes"), "{err}");
        let bad = Durability::Buffered { max_delay: Duration::ZERO };
        let err = Options { durability: bad, ..mem() }.validate().unwrap_err();
        assert!(err.to_string().contains("durability"), "{err}");
        assert!(mem().validate().is_ok());
        let budget = Options { disk_budget_bytes: 1 << 30, ..Options::default() };
        assert!(budget.validate().is_ok(), "every engine honors a disk budget");
        assert!(Options { disk_budget_bytes: 1 << 30, ..mem() }.validate().is_ok());
        let limit = Options { memory_limit_bytes: 1 << 30, ..Options::default() };
        assert!(matches!(limit.validate(), Err(Error::Unsupported { .. })));
        assert!(Options { memory_limit_bytes: 1 << 30, ..mem() }.validate().is_ok());
        let err = Options { memory_limit_bytes: 4096, ..mem() }.validate().unwrap_err();
        assert!(err.to_string().contains("--memory-limit-bytes"), "{err}");
    }

    #[test]
    fn fdtree_size_ratio_is_checked_and_only_for_fdtree() {
        let fdtree = Options { engine: EngineKind::Fdtree(FcMode::Xm), ..mem() };
        let err = Options { fdtree_size_ratio: Some(24), ..fdtree }.validate().unwrap_err();
        assert!(err.to_string().contains("size_ratio"), "too many fences of 1 KiB keys: {err}");
        Options { fdtree_size_ratio: Some(24), fdtree_key_bytes_max: Some(256), ..fdtree }
            .validate()
            .unwrap();
        for bad in [0, 1, lamina_fdtree::options::SIZE_RATIO_MAX + 1] {
            let err = Options { fdtree_size_ratio: Some(bad), ..fdtree }.validate().unwrap_err();
            assert!(err.to_string().contains("fdtree_size_ratio"), "{err}");
        }
        let on_mem = Options { fdtree_size_ratio: Some(24), ..mem() }.validate();
        assert!(matches!(on_mem, Err(Error::Unsupported { .. })));
        Options { fdtree_key_bytes_max: Some(64), ..fdtree }.validate().unwrap();
        let err = Options { fdtree_key_bytes_max: Some(0), ..fdtree }.validate().unwrap_err();
        assert!(err.to_string().contains("fdtree_key_bytes_max"), "{err}");
        let on_mem = Options { fdtree_key_bytes_max: Some(64), ..mem() }.validate();
        assert!(matches!(on_mem, Err(Error::Unsupported { .. })));
    }
}
