//! lamina's own engines behind the bench library's `EngineFactory`, through `lamina::Db`.
//! (The `peers` feature adds RocksDB, LevelDB, LMDB, Berkeley DB and WiredTiger through the
//! same trait.)

use std::{path::Path, sync::Arc};

use lamina::{Db, EngineKind, Error, Options, OrderedIndex, Result};
use lamina_bench::{EngineFactory, EngineInfo, EngineParams};

/// Opens lamina's engines.
#[derive(Debug, Default, Clone, Copy)]
pub struct LaminaFactory;

impl LaminaFactory {
    fn options(name: &str, params: &EngineParams) -> Result<Options> {
        if params.device.is_some() || params.emulate {
            return Err(Error::Unsupported {
                what: format!(
                    "--device/--emulate with engine `{name}`: device profiles need lamina-storage, which this build's engines do not use yet"
                ),
            });
        }
        let options = Options {
            engine: EngineKind::from_name(name)?,
            durability: params.durability,
            memory_budget_bytes: params.memory_budget_bytes,
            cache_bytes: params.cache_bytes,
            create_if_missing: true,
        };
        options.validate()?;
        Ok(options)
    }
}

impl EngineFactory for LaminaFactory {
    fn engines(&self) -> Vec<EngineInfo> {
        EngineKind::ALL
            .iter()
            .map(|k| EngineInfo { name: k.name().into(), description: k.description().into() })
            .collect()
    }

    fn check(&self, name: &str, params: &EngineParams) -> Result<()> {
        Self::options(name, params).map(|_| ())
    }

    fn open(&self, name: &str, dir: &Path, params: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
        Ok(Arc::new(Db::open(dir, Self::options(name, params)?)?))
    }
}
