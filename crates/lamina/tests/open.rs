//! Opening directories: engine recorded, wrong engine refused, foreign directory refused,
//! locked directory refused.

use lamina::{Db, Durability, EngineKind, Error, Meta, Options};

fn options() -> Options {
    Options { engine: EngineKind::Mem, durability: Durability::None, ..Options::default() }
}

#[test]
fn reopen_keeps_data_and_records_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    drop(db);
    assert_eq!(Db::engine_of(dir.path()).unwrap(), Some(EngineKind::Mem));
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_second_handle_is_refused_while_the_first_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let _db = Db::open(dir.path(), options()).unwrap();
    let err = Db::open(dir.path(), options()).unwrap_err();
    assert!(err.to_string().contains("already open"), "{err}");
}

#[test]
fn a_directory_of_another_engine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    Meta { engine: "fdtree".into(), created: true }.write(dir.path()).unwrap();
    let err = Db::open(dir.path(), options()).unwrap_err();
    assert!(matches!(err, Error::Incompatible { .. }), "{err:?}");
    assert!(err.to_string().contains("`fdtree` database"), "{err}");
}

#[test]
fn a_foreign_directory_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("thesis.tex"), b"precious").unwrap();
    let err = Db::open(dir.path(), options()).unwrap_err();
    assert!(err.to_string().contains("not a lamina database"), "{err}");
    assert!(!dir.path().join(lamina::META_FILE_NAME).exists());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["thesis.tex"], "opening a foreign directory must write nothing there");
}

#[test]
fn a_corrupt_metadata_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(lamina::META_FILE_NAME), b"LAMINADB garbage").unwrap();
    let err = Db::open(dir.path(), options()).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err:?}");
}

#[test]
fn bad_options_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("db");
    let err = Db::open(&target, Options { memory_budget_bytes: 0, ..options() }).unwrap_err();
    assert!(err.is_invalid_argument());
    assert!(!target.exists());
    let err = Db::open(&target, Options { create_if_missing: false, ..options() }).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
}
