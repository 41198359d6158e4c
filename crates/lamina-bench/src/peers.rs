//! The peer engines (RocksDB, LevelDB, LMDB, Berkeley DB, WiredTiger, crate `lamina-peers`)
//! behind [`EngineFactory`], so a benchmark runs them on exactly the same requests as
//! lamina's engines. Every peer configuration is listed whether or not the build links the
//! libraries; without the `peers` feature, `check` and `open` refuse with an error naming
//! the feature, so `--engines rocksdb` says what to rebuild instead of "unknown engine".

use std::{path::Path, sync::Arc};

use lamina_core::{Error, OrderedIndex, Result};
use lamina_peers::{FEATURE_MISSING, PEER_NAMES, PeerName, PeerOptions, open_peer, peers_built};

use crate::{EngineFactory, EngineInfo, EngineParams};

/// Opens the peer configurations of `docs/peers.md`.
#[derive(Debug, Default, Clone, Copy)]
pub struct PeerFactory;

impl PeerFactory {
    /// Whether `name` is a peer configuration (built or not).
    pub fn is_peer(name: &str) -> bool {
        PeerName::parse(name).is_some()
    }

    fn options(name: &str, params: &EngineParams) -> Result<PeerOptions> {
        if !peers_built() {
            return Err(Error::Unsupported {
                what: format!("peer engine `{name}`: {FEATURE_MISSING}"),
            });
        }
        if params.device.is_some() || params.emulate {
            return Err(Error::Unsupported {
                what: format!(
                    "--device/--emulate with peer `{name}`: peers do their own I/O, outside lamina-storage's device model"
                ),
            });
        }
        let options = PeerOptions {
            durability: params.durability,
            cache_bytes: params.cache_bytes,
            memory_budget_bytes: params.memory_budget_bytes,
            data_bytes_expected: 0,
        };
        options.validate()?;
        Ok(options)
    }
}

fn description(name: &str) -> String {
    let what = match PeerName::parse(name) {
        Some(PeerName::RocksDb) => "RocksDB 7.8, defaults, block cache = --cache",
        Some(PeerName::RocksDbTuned) => {
            "RocksDB 7.8, bloom 10 bits/key, write buffer from --memory"
        }
        Some(PeerName::LevelDb) => "LevelDB 1.23, defaults, block cache = --cache",
        Some(PeerName::LevelDbTuned) => "LevelDB 1.23, bloom 10 bits/key, 32 MiB write buffer",
        Some(PeerName::Lmdb) => "LMDB 0.9.24 B+-tree (mmap; OS page cache)",
        Some(PeerName::Bdb) => "Berkeley DB 5.3 transactional B-tree, cache = --cache + --memory",
        Some(PeerName::WiredTigerBtree) => "WiredTiger 3.2.1 B-tree, cache = --cache + --memory",
        Some(PeerName::WiredTigerLsm) => "WiredTiger 3.2.1 LSM, cache = --cache + --memory",
        None => "unknown peer",
    };
    if peers_built() {
        format!("peer: {what}")
    } else {
        format!("peer: {what} (needs --features peers)")
    }
}

impl EngineFactory for PeerFactory {
    fn engines(&self) -> Vec<EngineInfo> {
        PEER_NAMES.iter().map(|name| EngineInfo::new(*name, description(name))).collect()
    }

    fn check(&self, name: &str, params: &EngineParams) -> Result<()> {
        Self::options(name, params).map(|_| ())
    }

    fn open(&self, name: &str, dir: &Path, params: &EngineParams) -> Result<Arc<dyn OrderedIndex>> {
        let options = Self::options(name, params)?;
        Ok(Arc::from(open_peer(name, dir, &options)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_is_listed_and_checked() {
        let names: Vec<String> = PeerFactory.engines().into_iter().map(|e| e.name).collect();
        assert_eq!(names.len(), PEER_NAMES.len());
        let result = PeerFactory.check("rocksdb", &EngineParams::default());
        if peers_built() {
            result.unwrap();
        } else {
            let err = result.unwrap_err().to_string();
            assert!(err.contains("`peers` feature"), "{err}");
        }
        let device = EngineParams { device: Some("ssd".into()), ..EngineParams::default() };
        assert!(PeerFactory.check("lmdb", &device).is_err());
    }
}
