//! lamina's own engines behind the bench library's `EngineFactory`, through `lamina::Db`.
//! (The `peers` feature adds RocksDB, LevelDB, LMDB, Berkeley DB and WiredTiger through the
//! same trait.)

use std::{path::Path, sync::Arc};

use lamina::{
    BenchmarkOptions, Db, DeviceProfile, EngineKind, EngineSettings, Error, FdtreeSettings,
    NbtreeSettings, Options, OrderedIndex, Result,
};
use lamina_bench::{EngineFactory, EngineInfo, EngineParams};

/// The name of the default engine (`lamina engines`, the README): the FD+tree with its
/// default scheme, FD+FC. The bench lists that engine as `fdtree-fc` (the mode's name,
/// which reports show) and accepts `fdtree` for it.
pub const DEFAULT_ENGINE_NAME: &str = "fdtree";

/// Opens lamina's engines.
#[derive(Debug, Default, Clone, Copy)]
pub struct LaminaFactory;

impl LaminaFactory {
    fn options(name: &str, params: &EngineParams) -> Result<Options> {
        let kind = EngineKind::from_name(name)?;
        let device = match &params.device {
            Some(device) => DeviceProfile::from_name(device)?,
            None => DeviceProfile::host(),
        };
        if kind == EngineKind::Mem && (params.device.is_some() || params.emulate) {
            return Err(Error::Unsupported {
                what: format!(
                    "--device/--emulate with engine `{name}`: it does no block I/O to model"
                ),
            });
        }
        let mut options = Options::new()
            .engine(kind)
            .durability(params.durability)
            .memory_budget_bytes(params.memory_budget_bytes)
            .cache_bytes(params.cache_bytes)
            .benchmark(BenchmarkOptions::new(device, params.emulate));
        // Engine-specific settings are refused (not ignored) with the other engines.
        let mut fdtree = FdtreeSettings::new();
        if let Some(gamma) = params.fdtree_size_ratio {
            fdtree = fdtree.size_ratio(gamma);
        }
        if let Some(bytes) = params.fdtree_key_bytes_max {
            fdtree = fdtree.key_bytes_max(bytes);
        }
        if fdtree != FdtreeSettings::new() {
            options.engine_settings = EngineSettings::Fdtree(fdtree);
        }
        if let Some(fanout) = params.nbtree_fanout {
            if options.engine_settings != EngineSettings::Default {
                return Err(Error::Unsupported {
                    what: "fdtree and nbtree settings together".to_string(),
                });
            }
            options.engine_settings = EngineSettings::Nbtree(NbtreeSettings::new().fanout(fanout));
        }
        options.validate()?;
        Ok(options)
    }
}

impl EngineFactory for LaminaFactory {
    fn engines(&self) -> Vec<EngineInfo> {
        EngineKind::ALL
            .iter()
            .map(|k| {
                let mut info = EngineInfo::new(k.name(), k.description());
                if *k == EngineKind::default() {
                    info.aliases.push(DEFAULT_ENGINE_NAME.into());
                }
                info
            })
            .collect()
    }

    fn check(&self, name: &str, params: &EngineParams) -> Result<()> {
        Self::options(name, params).map(|_| ())
    }

    fn open(&self, name: &str, dir: &Path, params: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
        Ok(Arc::new(Db::open(dir, Self::options(name, params)?)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdtree_is_the_default_engine_listed_as_fdtree_fc() {
        assert_eq!(EngineKind::from_name(DEFAULT_ENGINE_NAME).unwrap(), EngineKind::default());
        assert_eq!(
            LaminaFactory.canonical_name(DEFAULT_ENGINE_NAME).as_deref(),
            Some(EngineKind::default().name())
        );
        assert_eq!(EngineKind::default().name(), "fdtree-fc");
        let listed = LaminaFactory.engines();
        assert_eq!(listed.iter().filter(|e| e.answers_to(DEFAULT_ENGINE_NAME)).count(), 1);
        LaminaFactory.check(DEFAULT_ENGINE_NAME, &EngineParams::default()).unwrap();
    }

    #[test]
    fn the_size_ratio_reaches_fdtree_and_is_refused_elsewhere() {
        let params = EngineParams { fdtree_size_ratio: Some(24), ..EngineParams::default() };
        // gamma = 24 needs shorter keys than the API limit in the default 32 KiB blocks.
        let err = LaminaFactory.check("fdtree-xm", &params).unwrap_err().to_string();
        assert!(err.contains("size_ratio"), "{err}");
        let params = EngineParams { fdtree_key_bytes_max: Some(256), ..params };
        LaminaFactory.check("fdtree-xm", &params).unwrap();
        let options = LaminaFactory::options("fdtree-xm", &params).unwrap();
        let expected = FdtreeSettings::new().size_ratio(24).key_bytes_max(256);
        assert_eq!(options.engine_settings, EngineSettings::Fdtree(expected));
        assert!(matches!(LaminaFactory.check("mem", &params), Err(Error::Unsupported { .. })));
        let bad = EngineParams { fdtree_size_ratio: Some(1), ..EngineParams::default() };
        assert!(LaminaFactory.check("fdtree-ds", &bad).unwrap_err().is_invalid_argument());
    }

    #[test]
    fn nbtree_is_listed_and_its_fanout_reaches_it_and_is_refused_elsewhere() {
        assert!(LaminaFactory.engines().iter().any(|e| e.name == "nbtree"));
        LaminaFactory.check("nbtree", &EngineParams::default()).unwrap();
        let params = EngineParams { nbtree_fanout: Some(8), ..EngineParams::default() };
        let options = LaminaFactory::options("nbtree", &params).unwrap();
        let expected = EngineSettings::Nbtree(NbtreeSettings::new().fanout(8));
        assert_eq!((options.engine, options.engine_settings), (EngineKind::Nbtree, expected));
        for other in ["fdtree-fc", "trie", "mem"] {
            let err = LaminaFactory.check(other, &params).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }), "{other}: {err}");
        }
        let bad = EngineParams { nbtree_fanout: Some(2), ..EngineParams::default() };
        let err = LaminaFactory.check("nbtree", &bad).unwrap_err();
        assert!(err.is_invalid_argument() && err.to_string().contains("nbtree fanout"), "{err}");
        // The NB-tree does block I/O: a device profile applies to it.
        let device = EngineParams { device: Some("ssd-x25e".into()), ..EngineParams::default() };
        LaminaFactory.check("nbtree", &device).unwrap();
    }
}
