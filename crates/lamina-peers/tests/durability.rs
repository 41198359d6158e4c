//! Every peer under `Sync` and `Buffered`: writes of each kind survive close and reopen, the
//! buffered syncer runs and stops cleanly, and stats name the configuration.
#![cfg(feature = "peers")]

use std::time::Duration;

use lamina_core::{CasOutcome, Durability, Error, KeyRange, WriteBatch};
use lamina_peers::{PEER_NAMES, PeerOptions, open_peer};

fn options(durability: Durability) -> PeerOptions {
    PeerOptions {
        durability,
        cache_bytes: 8 << 20,
        memory_budget_bytes: 32 << 20,
        data_bytes_expected: 1 << 20,
    }
}

fn roundtrip(durability: Durability) {
    for name in PEER_NAMES {
        let dir = tempfile::tempdir().unwrap();
        let db = open_peer(name, dir.path(), &options(durability)).unwrap();
        db.put(b"a", b"1").unwrap();
        db.put(&[7u8; 1024], b"long key").unwrap();
        let mut batch = WriteBatch::new();
        batch.put(b"b".to_vec(), b"2".to_vec()).put(b"c".to_vec(), b"3".to_vec());
        db.write_batch(&batch).unwrap();
        assert!(db.delete(b"c").unwrap(), "{name}");
        assert_eq!(
            db.compare_and_swap(b"a", Some(b"1"), Some(b"one")).unwrap(),
            CasOutcome::Swapped,
            "{name}"
        );
        if let Durability::Buffered { max_delay } = durability {
            // Let the syncer run at least once.
            std::thread::sleep(max_delay * 3);
        }
        db.sync().unwrap();
        let stats = db.stats();
        assert_eq!(stats.engine, name);
        assert!(stats.user_bytes_written > 1024, "{name}: {stats:?}");
        db.close().unwrap();
        assert!(matches!(db.get(b"a"), Err(Error::Closed)), "{name}");
        drop(db);

        let db = open_peer(name, dir.path(), &options(durability)).unwrap();
        let all = db.scan(&KeyRange::all(), 10).unwrap();
        let keys: Vec<&[u8]> = all.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(keys, vec![&[7u8; 1024][..], b"a", b"b"], "{name}");
        assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"one"[..]), "{name}");
        db.close().unwrap();
    }
}

#[test]
fn sync_writes_survive_reopen() {
    roundtrip(Durability::Sync);
}

#[test]
fn buffered_writes_survive_reopen() {
    roundtrip(Durability::Buffered { max_delay: Duration::from_millis(20) });
}

#[test]
fn bad_options_are_refused_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("never");
    let bad = PeerOptions { cache_bytes: 10, ..PeerOptions::default() };
    let err = open_peer("rocksdb", &sub, &bad).err().unwrap();
    assert!(err.is_invalid_argument(), "{err:?}");
    assert!(!sub.exists());
}

/// Each library's main files replaced by garbage: opening fails with a lamina error carrying
/// the library's message, and nothing panics.
#[test]
fn garbage_files_are_an_error_not_a_panic() {
    let cases: [(&str, &[&str]); 5] = [
        ("rocksdb", &["CURRENT"]),
        ("leveldb", &["CURRENT"]),
        ("lmdb", &["data.mdb"]),
        ("bdb", &["data.db"]),
        ("wiredtiger-btree", &["WiredTiger", "WiredTiger.turtle", "WiredTiger.wt"]),
    ];
    for (name, files) in cases {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            std::fs::write(dir.path().join(file), vec![0xA5u8; 8192]).unwrap();
        }
        match open_peer(name, dir.path(), &options(Durability::None)) {
            Ok(db) => {
                // A library may ignore a file it does not need; it must then work.
                db.put(b"k", b"v").unwrap();
                db.close().unwrap();
            }
            Err(err) => {
                let text = err.to_string();
                assert!(text.contains(name), "{name}: {text}");
                assert!(
                    matches!(err, Error::Io { .. } | Error::Corruption { .. }),
                    "{name}: {err:?}"
                );
            }
        }
    }
}

/// The LSM peers report their library's own statistics (read through each C API's
/// properties) next to lamina's.
#[test]
fn lsm_peers_report_library_stats() {
    let cases: [(&str, &[&str]); 4] = [
        ("leveldb", &["files_at_level0", "files_at_level6"]),
        ("leveldb-tuned", &["files_at_level0", "files_at_level6"]),
        ("rocksdb", &["estimate_num_keys", "live_sst_files_bytes", "running_compactions"]),
        ("rocksdb-tuned", &["estimate_num_keys", "live_sst_files_bytes", "running_compactions"]),
    ];
    for (name, extra_names) in cases {
        let dir = tempfile::tempdir().unwrap();
        let db = open_peer(name, dir.path(), &options(Durability::None)).unwrap();
        for i in 0..100u32 {
            db.put(&i.to_be_bytes(), b"value").unwrap();
        }
        let stats = db.stats();
        for extra_name in extra_names {
            assert!(stats.extra.iter().any(|(n, _)| n == extra_name), "{name}: {stats:?}");
        }
        assert!(stats.memory_bytes > 0, "{name}: {stats:?}");
        db.close().unwrap();
    }
}
