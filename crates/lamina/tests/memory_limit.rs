//! `Options::memory_limit_bytes`: the in-memory engines (`trie`, `mem`) refuse writes that
//! would take their data past it with `NoSpace` naming the option (instead of the process
//! running out of memory), change nothing for the refused write, keep accepting deletes,
//! and take new data again once deletes made room. Engines that cannot enforce it refuse
//! the option.

use lamina::{Db, Durability, EngineKind, Error, Options};

const LIMIT: u64 = 8 << 20;

fn options(engine: EngineKind) -> Options {
    Options {
        engine,
        durability: Durability::None,
        memory_limit_bytes: LIMIT,
        ..Options::default()
    }
}

#[test]
fn writes_past_the_memory_limit_are_refused_and_deletes_make_room() {
    for engine in [EngineKind::Trie, EngineKind::Mem] {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options(engine)).unwrap();
        let value = [7u8; 200];
        let mut keys = 0u64;
        let err = loop {
            match db.put(keys.to_be_bytes(), value) {
                Ok(()) => keys += 1,
                Err(err) => break err,
            }
            assert!(keys < 1_000_000, "{engine}: the limit never refused");
        };
        assert!(matches!(err, Error::NoSpace { .. }), "{engine}: {err}");
        let message = err.to_string();
        for name in [
            "memory limit",
            "lamina::Options::memory_limit_bytes",
            "lamina_options.memory_limit_bytes",
            "--memory-limit-bytes",
        ] {
            assert!(message.contains(name), "{engine}: names {name}: {err}");
        }
        // Refused before anything changed.
        assert_eq!(db.get(keys.to_be_bytes()).unwrap(), None);
        let stats = db.stats();
        assert!(stats.memory_bytes <= LIMIT + (1 << 20), "{engine}: {}", stats.memory_bytes);
        assert!(stats.memory_bytes > LIMIT / 2, "{engine}: the data fills the limit");
        // Deletes are accepted, and make room for new keys.
        for i in 0..keys / 4 {
            assert!(db.delete(i.to_be_bytes()).unwrap());
        }
        for i in 0..100 {
            db.put((keys + i).to_be_bytes(), value).unwrap();
        }
        db.close().unwrap();
    }
}

#[test]
fn engines_without_a_memory_limit_refuse_the_option() {
    for engine in [EngineKind::default(), EngineKind::Nbtree, EngineKind::Latree] {
        let dir = tempfile::tempdir().unwrap();
        let err = Db::open(dir.path(), options(engine)).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{engine}: {err}");
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "{engine}: nothing created"
        );
    }
}
