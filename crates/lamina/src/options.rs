//! Options of [`crate::Db::open`], validated before anything is created.

use lamina_core::{Durability, Error, Result};
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
    /// Disk space the engine may use; 0 takes the engine's default. Enforced by engines whose
    /// log is a fixed ring (`mem`, `trie`: the ring's size, fixed when the database is
    /// created); refused as unsupported by the others.
    pub disk_budget_bytes: u64,
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
            device: DeviceProfile::host(),
            emulate_device: false,
            fdtree_size_ratio: None,
        }
    }
}

/// Smallest `memory_budget_bytes`.
pub const MEMORY_BUDGET_BYTES_MIN: u64 = 64 << 10;
/// Largest `memory_budget_bytes`.
pub const MEMORY_BUDGET_BYTES_MAX: u64 = 64 << 30;
/// Largest `cache_bytes`.
pub const CACHE_BYTES_MAX: u64 = 1 << 40;

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
        if self.disk_budget_bytes != 0 && !matches!(self.engine, EngineKind::Mem | EngineKind::Trie)
        {
            return Err(Error::Unsupported {
                what: format!(
                    "disk_budget_bytes = {} with engine `{}`, which does not enforce a disk \
                     budget; pass 0",
                    self.disk_budget_bytes, self.engine
                ),
            });
        }
        if let Some(ratio) = self.fdtree_size_ratio {
            if !matches!(self.engine, EngineKind::Fdtree(_)) {
                return Err(Error::Unsupported {
                    what: format!(
                        "fdtree_size_ratio with engine `{}`, which has no levels to size; \
                         pass None",
                        self.engine
                    ),
                });
            }
            let max = lamina_fdtree::options::SIZE_RATIO_MAX;
            if !(2..=max).contains(&ratio) {
                return Err(Error::option(
                    "fdtree_size_ratio",
                    format!("gamma {ratio} is outside 2..={max}"),
                ));
            }
        }
        Ok(())
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
        assert!(matches!(budget.validate(), Err(Error::Unsupported { .. })));
        assert!(Options { disk_budget_bytes: 1 << 30, ..mem() }.validate().is_ok());
    }

    #[test]
    fn fdtree_size_ratio_is_checked_and_only_for_fdtree() {
        let fdtree = Options { engine: EngineKind::Fdtree(crate::FcMode::Xm), ..mem() };
        Options { fdtree_size_ratio: Some(24), ..fdtree }.validate().unwrap();
        for bad in [0, 1, lamina_fdtree::options::SIZE_RATIO_MAX + 1] {
            let err = Options { fdtree_size_ratio: Some(bad), ..fdtree }.validate().unwrap_err();
            assert!(err.to_string().contains("fdtree_size_ratio"), "{err}");
        }
        let on_mem = Options { fdtree_size_ratio: Some(24), ..mem() }.validate();
        assert!(matches!(on_mem, Err(Error::Unsupported { .. })));
    }
}
