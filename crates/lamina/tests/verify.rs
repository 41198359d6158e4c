//! `Db::verify` (issue 20, `lamina verify`): for every engine, a closed store verifies clean
//! with its exact entry count and is byte-for-byte unchanged afterwards (verification is
//! read-only even when opening would recover); a store open elsewhere is refused; a damaged
//! data file is reported, never passed as clean with different contents.

use std::collections::BTreeMap;
use std::path::Path;

use lamina::{Db, EngineKind, Error, Options};

mod support;

use support::{options, written};

/// Each file's length and a hash of its bytes, read in pieces (the fptree region file is
/// 8 GiB sparse: reading it whole would take 8 GiB of memory).
fn snapshot(dir: &Path) -> BTreeMap<String, (u64, u64)> {
    use std::hash::{Hash, Hasher};
    use std::io::Read;
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let mut file = std::fs::File::open(e.path()).unwrap();
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            let mut buf = vec![0u8; 1 << 20];
            let mut len = 0u64;
            loop {
                let n = file.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                buf[..n].hash(&mut hasher);
                len += n as u64;
            }
            (e.file_name().into_string().unwrap(), (len, hasher.finish()))
        })
        .collect()
}

#[test]
fn every_engine_verifies_clean_and_unchanged() {
    for &engine in EngineKind::ALL {
        let dir = written(engine);
        let before = snapshot(dir.path());
        let report = Db::verify(dir.path(), options(engine))
            .unwrap_or_else(|e| panic!("{engine}: a clean store must verify: {e}"));
        assert_eq!(report.engine, engine);
        assert_eq!(report.entries, 1_800, "{engine}");
        assert_eq!(report.files, before.len(), "{engine}");
        // fptree maps its region file (privately) instead of reading it through the storage
        // layer, so the overlay counts no bytes read for it.
        assert!(report.bytes_read > 0 || engine == EngineKind::Fptree, "{engine}");
        assert_eq!(snapshot(dir.path()), before, "{engine}: verify changed the store");
    }
}

#[test]
fn an_open_store_is_refused_and_a_foreign_directory_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(EngineKind::default())).unwrap();
    db.put(b"k", b"v").unwrap();
    let err = Db::verify(dir.path(), Options::default()).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    db.close().unwrap();
    drop(db);
    assert_eq!(Db::verify(dir.path(), Options::default()).unwrap().entries, 1);
    let foreign = tempfile::tempdir().unwrap();
    std::fs::write(foreign.path().join("notes.txt"), b"x").unwrap();
    let err = Db::verify(foreign.path(), Options::default()).unwrap_err();
    assert!(matches!(err, Error::Incompatible { .. }), "{err:?}");
    assert!(!foreign.path().join("LOCK").exists());
}

#[test]
fn a_cut_data_file_is_reported_by_every_engine() {
    for &engine in EngineKind::ALL {
        let dir = written(engine);
        // The largest file holds the data (a level, a ring, a log segment, a node file).
        let (name, (len, _)) =
            snapshot(dir.path()).into_iter().max_by_key(|(_, (len, _))| *len).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(dir.path().join(&name)).unwrap();
        file.set_len(len / 2).unwrap();
        match Db::verify(dir.path(), options(engine)) {
            Err(Error::Corruption { .. } | Error::Io { .. }) => {}
            other => panic!("{engine}: {name} cut in half must be reported, got {other:?}"),
        }
    }
}
