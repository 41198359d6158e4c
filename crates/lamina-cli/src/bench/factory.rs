//! lamina's own engines behind the bench library's `EngineFactory`, through `lamina::Db`,
//! and [`AllEngines`], which adds the peers (RocksDB, LevelDB, LMDB, Berkeley DB and
//! WiredTiger, `lamina_bench::PeerFactory`) in a build with the `peers` feature; without it
//! they are not listed, and `lamina bench` refuses a peer by name with an error naming the
//! feature.

use std::{path::Path, sync::Arc};

use lamina::{Db, EngineKind, Error, Options, OrderedIndex, Result};
use lamina_bench::{EngineFactory, EngineInfo, EngineParams, PeerFactory};

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

/// lamina's engines, then the peers.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllEngines;

impl AllEngines {
    /// Whether this build links the peers (feature `peers`); without it they are not listed.
    pub fn peers_built() -> bool {
        cfg!(feature = "peers")
    }

    fn pick(name: &str) -> &'static dyn EngineFactory {
        if PeerFactory::is_peer(name) { &PeerFactory } else { &LaminaFactory }
    }
}

impl EngineFactory for AllEngines {
    fn engines(&self) -> Vec<EngineInfo> {
        let mut all = LaminaFactory.engines();
        if Self::peers_built() {
            all.extend(PeerFactory.engines());
        }
        all
    }

    fn check(&self, name: &str, params: &EngineParams) -> Result<()> {
        Self::pick(name).check(name, params)
    }

    fn open(&self, name: &str, dir: &Path, params: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
        Self::pick(name).open(name, dir, params)
    }
}
