//! Every engine through the facade, with real files: what was written is there after a close
//! and reopen (and the `LAMINA` file names the engine's format), and once a database exists,
//! losing every file of its engine is `Corruption`, never a new, empty database.

use std::path::Path;

use lamina::{Db, Durability, EngineKind, Error, META_FILE_NAME, Meta, Options};

fn options(engine: EngineKind) -> Options {
    Options { engine, durability: Durability::Sync, ..Options::default() }
}

/// A database of `engine` with 300 keys (key 7 deleted, keys below 5 overwritten), closed.
fn written(engine: EngineKind) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(engine)).unwrap();
    for i in 0..300u32 {
        db.put(i.to_be_bytes(), format!("first {i}").as_bytes()).unwrap();
    }
    for i in 0..5u32 {
        db.put(i.to_be_bytes(), b"second").unwrap();
    }
    assert!(db.delete(7u32.to_be_bytes()).unwrap());
    db.close().unwrap();
    dir
}

fn reopen_keeps_data(engine: EngineKind) {
    let dir = written(engine);
    let meta = Meta::read(dir.path()).unwrap().unwrap();
    assert_eq!(meta, Meta { engine: engine.format_name().into(), created: true });
    assert_eq!(
        Db::engine_of(dir.path()).unwrap().map(EngineKind::format_name),
        Some(meta.engine.as_str())
    );
    let db = Db::open(dir.path(), options(engine)).unwrap();
    assert_eq!(db.engine(), engine);
    for i in 0..300u32 {
        let expected = match i {
            0..5 => Some(b"second".to_vec()),
            7 => None,
            _ => Some(format!("first {i}").into_bytes()),
        };
        assert_eq!(db.get(i.to_be_bytes()).unwrap(), expected, "{engine}: key {i}");
    }
    let all = db.scan(&lamina::KeyRange::all(), 1000).unwrap();
    assert_eq!(all.len(), 299, "{engine}");
    db.close().unwrap();
}

fn engine_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| {
            let name = entry.file_name();
            name != META_FILE_NAME && name != "LOCK"
        })
        .map(|entry| entry.path())
        .collect()
}

fn lost_files_are_corruption(engine: EngineKind) {
    let dir = written(engine);
    let files = engine_files(dir.path());
    assert!(!files.is_empty(), "{engine} created no files of its own");
    for path in files {
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
    match Db::open(dir.path(), options(engine)) {
        Err(Error::Corruption { .. }) => {}
        Err(other) => panic!("{engine}: expected corruption, got {other}"),
        Ok(db) => panic!(
            "{engine}: opened with {} keys instead of failing",
            db.scan(&lamina::KeyRange::all(), 1000).unwrap().len()
        ),
    }
}

macro_rules! per_engine {
    ($($(#[$attr:meta])* $name:ident: $kind:expr;)*) => {
        $(
            mod $name {
                use super::*;

                #[test]
                $(#[$attr])*
                fn reopen_keeps_data() {
                    super::reopen_keeps_data($kind);
                }

                #[test]
                $(#[$attr])*
                fn lost_files_are_corruption() {
                    super::lost_files_are_corruption($kind);
                }
            }
        )*
    };
}

per_engine! {
    mem: EngineKind::Mem;
    trie: EngineKind::Trie;
    fdtree_fc: EngineKind::Fdtree(lamina::FcMode::Fc);
    fdtree_xm: EngineKind::Fdtree(lamina::FcMode::Xm);
    fdtree_ds: EngineKind::Fdtree(lamina::FcMode::Ds);
    nbtree: EngineKind::Nbtree;
    latree: EngineKind::Latree;
    latree_btree: EngineKind::LatreeBtree;
    fptree: EngineKind::Fptree;
}

#[test]
fn every_engine_is_covered() {
    // A new engine must be added to `per_engine!` above.
    assert_eq!(EngineKind::ALL.len(), 9);
}
