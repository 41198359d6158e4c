//! `LogRingSettings::log_buffer_bytes` reaches the `trie` and `mem` engines: a store opened
//! with its own buffer size works and reopens, an out-of-range size is refused naming the
//! option before anything is created, and the settings are refused for other engines.

use lamina::{
    Durability, EngineChoice, EngineKind, EngineSettings, Error, LogRingSettings, Options,
};

fn options(kind: EngineKind, buffer_bytes: usize) -> Options {
    let settings = EngineSettings::LogRing(LogRingSettings::new().log_buffer_bytes(buffer_bytes));
    Options::new().engine(EngineChoice::with_settings(kind, settings)).durability(Durability::Sync)
}

#[test]
fn a_custom_log_buffer_works_and_reopens() {
    for kind in [EngineKind::Trie, EngineKind::Mem] {
        let dir = tempfile::tempdir().unwrap();
        let db = lamina::Db::open(dir.path(), options(kind, 256 << 10)).unwrap();
        for i in 0..2_000u32 {
            db.put(i.to_be_bytes(), vec![7u8; 100]).unwrap();
        }
        db.close().unwrap();
        drop(db);
        let db = lamina::Db::open(dir.path(), options(kind, 256 << 10)).unwrap();
        assert_eq!(db.stats().keys, Some(2_000), "{kind}");
        assert_eq!(db.get(1_999u32.to_be_bytes()).unwrap(), Some(vec![7u8; 100]));
        db.close().unwrap();
    }
}

#[test]
fn an_out_of_range_log_buffer_is_refused_naming_it() {
    for kind in [EngineKind::Trie, EngineKind::Mem] {
        let dir = tempfile::tempdir().unwrap();
        let err = lamina::Db::open(dir.path(), options(kind, 1)).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{kind}: {err}");
        assert!(err.to_string().contains("buffer_bytes"), "{kind}: {err}");
    }
}

#[test]
fn log_ring_settings_are_refused_for_other_engines() {
    let settings = EngineSettings::LogRing(LogRingSettings::new().log_buffer_bytes(1 << 20));
    let options = Options { engine_settings: settings, ..Options::default() };
    assert!(matches!(options.validate(), Err(Error::Unsupported { .. })));
}
