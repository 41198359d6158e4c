//! The peer configurations `open_peer` accepts. Always compiled, so a build without the
//! `peers` feature can still list them and say why it cannot open them.

/// Every configuration name, in the order reports list them.
pub const PEER_NAMES: [&str; 8] = [
    "rocksdb",
    "rocksdb-tuned",
    "leveldb",
    "leveldb-tuned",
    "lmdb",
    "bdb",
    "wiredtiger-btree",
    "wiredtiger-lsm",
];

/// One peer configuration (see `docs/peers.md` for each one's settings and reasoning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerName {
    /// RocksDB 7.8 with its defaults; block cache = the cache budget.
    RocksDb,
    /// RocksDB with a 10 bits/key Bloom filter and a large write buffer (NB-tree paper §6.1).
    RocksDbTuned,
    /// LevelDB 1.23 with its defaults; block cache = the cache budget.
    LevelDb,
    /// LevelDB with a 10 bits/key Bloom filter and a 32 MiB write buffer (NB-tree paper §6.1).
    LevelDbTuned,
    /// LMDB 0.9.24, map size sized to the run.
    Lmdb,
    /// Berkeley DB 5.3 B-tree in a transactional environment, cache = the cache budget.
    Bdb,
    /// WiredTiger 3.2.1 row-store B-tree, cache = the cache budget.
    WiredTigerBtree,
    /// WiredTiger 3.2.1 LSM tree, cache = the cache budget.
    WiredTigerLsm,
}

impl PeerName {
    /// Every configuration, in [`PEER_NAMES`] order.
    pub const ALL: [PeerName; 8] = [
        PeerName::RocksDb,
        PeerName::RocksDbTuned,
        PeerName::LevelDb,
        PeerName::LevelDbTuned,
        PeerName::Lmdb,
        PeerName::Bdb,
        PeerName::WiredTigerBtree,
        PeerName::WiredTigerLsm,
    ];

    /// The configuration's name (also the `engine` of its stats).
    pub fn as_str(self) -> &'static str {
        match self {
            PeerName::RocksDb => "rocksdb",
            PeerName::RocksDbTuned => "rocksdb-tuned",
            PeerName::LevelDb => "leveldb",
            PeerName::LevelDbTuned => "leveldb-tuned",
            PeerName::Lmdb => "lmdb",
            PeerName::Bdb => "bdb",
            PeerName::WiredTigerBtree => "wiredtiger-btree",
            PeerName::WiredTigerLsm => "wiredtiger-lsm",
        }
    }

    /// The configuration called `name`, if any.
    pub fn parse(name: &str) -> Option<PeerName> {
        PeerName::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

impl std::fmt::Display for PeerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether `name` is one of [`PEER_NAMES`].
pub fn is_peer_name(name: &str) -> bool {
    PeerName::parse(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_enum_agree() {
        for (name, peer) in PEER_NAMES.iter().zip(PeerName::ALL) {
            assert_eq!(*name, peer.as_str());
            assert_eq!(PeerName::parse(name), Some(peer));
        }
        assert!(!is_peer_name("mem"));
        assert!(is_peer_name("wiredtiger-lsm"));
    }
}
