//! The conformance kit against every peer configuration (feature `peers`), one module per
//! configuration, each store in its own temporary directory and reopened (close, then open
//! again) where the kit asks.
//!
//! The kit runs under `Durability::None` to keep the suite fast (a clean close still keeps
//! every write); `tests/durability.rs` exercises `Sync` and `Buffered` for each peer.
#![cfg(feature = "peers")]

use lamina_core::testkit::Subject;
use lamina_core::{
    CasOutcome, Durability, Entry, KeyRange, OrderedIndex, Result, Stats, WriteBatch,
};
use lamina_peers::{PeerOptions, open_peer};

/// A peer opened through `open_peer`, as the concrete type the kit needs.
struct Handle(Box<dyn OrderedIndex>);

impl OrderedIndex for Handle {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.get(key)
    }
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.0.put(key, value)
    }
    fn delete(&self, key: &[u8]) -> Result<bool> {
        self.0.delete(key)
    }
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        self.0.compare_and_swap(key, expected, new)
    }
    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        self.0.scan(range, limit)
    }
    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        self.0.write_batch(batch)
    }
    fn sync(&self) -> Result<()> {
        self.0.sync()
    }
    fn stats(&self) -> Stats {
        self.0.stats()
    }
    fn close(&self) -> Result<()> {
        self.0.close()
    }
}

/// One peer configuration in a temporary directory.
struct PeerSubject {
    name: &'static str,
    dir: tempfile::TempDir,
}

impl PeerSubject {
    fn new(name: &'static str) -> Self {
        PeerSubject { name, dir: tempfile::tempdir().unwrap() }
    }
}

impl Subject for PeerSubject {
    type Index = Handle;

    fn open(&mut self) -> Result<Handle> {
        let options = PeerOptions {
            durability: Durability::None,
            cache_bytes: 8 << 20,
            memory_budget_bytes: 32 << 20,
            data_bytes_expected: 64 << 20,
        };
        open_peer(self.name, self.dir.path(), &options).map(Handle)
    }

    fn durable(&self) -> bool {
        true
    }

    fn accepts_empty_key(&self) -> bool {
        // LMDB and WiredTiger refuse zero-length keys (the peer refuses them with KeyEmpty
        // first).
        !(self.name == "lmdb" || self.name.starts_with("wiredtiger"))
    }
}

macro_rules! peer_conformance {
    ($($module:ident => $name:literal),* $(,)?) => {
        $(
            mod $module {
                use super::*;
                lamina_core::conformance_tests!(PeerSubject::new($name));
            }
        )*
    };
}

peer_conformance!(
    rocksdb => "rocksdb",
    rocksdb_tuned => "rocksdb-tuned",
    leveldb => "leveldb",
    leveldb_tuned => "leveldb-tuned",
    lmdb => "lmdb",
    bdb => "bdb",
    wiredtiger_btree => "wiredtiger-btree",
    wiredtiger_lsm => "wiredtiger-lsm",
);
