//! What the store-level tests of `lamina verify` share: the options they open with and the
//! closed store they damage or verify.

use lamina::{Db, Durability, EngineKind, Options};

/// `engine` with `Sync` durability.
pub fn options(engine: EngineKind) -> Options {
    Options { engine, durability: Durability::Sync, ..Options::default() }
}

/// 2,000 keys written (every 10th deleted), closed: 1,800 entries.
pub fn written(engine: EngineKind) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(engine)).unwrap();
    for i in 0..2_000u32 {
        db.put(i.to_be_bytes(), format!("value {i}").repeat(3).as_bytes()).unwrap();
    }
    for i in (0..2_000u32).step_by(10) {
        assert!(db.delete(i.to_be_bytes()).unwrap());
    }
    db.close().unwrap();
    dir
}
