//! `Options::disk_budget_bytes` with the ring engines (`trie`, `mem`), off by default: at the
//! budget, writes that add data fail with `NoSpace` naming the option as Rust, C and the
//! command line call it (never an option users cannot set), deletes still work, and a
//! larger budget at the next open lets the data grow again; without a budget the ring
//! grows with the data.

use lamina::{Db, Durability, EngineKind, Error, Options};

fn options(engine: EngineKind, disk_budget_bytes: u64) -> Options {
    Options { engine, durability: Durability::None, disk_budget_bytes, ..Options::default() }
}

/// Smallest budget of each engine's default ring (two of its default segments, and a
/// header): what the log's defaults give for its write buffer.
fn small_budget(engine: EngineKind) -> u64 {
    let segment: u64 = match engine {
        // 1 MiB buffers: twelve chunks of up to 2 MiB + 4 KiB.
        EngineKind::Trie => 12 * ((2 << 20) + 4096),
        // 256 KiB buffers: the 16 MiB default is above the minimum.
        _ => 16 << 20,
    };
    4096 + 2 * segment
}

fn fill(db: &Db, first: u64) -> u64 {
    let value = [1u8; 1000];
    let mut i = first;
    loop {
        match db.put(i.to_be_bytes(), value) {
            Ok(()) => i += 1,
            Err(err) => {
                assert!(matches!(err, Error::NoSpace { .. }), "{err}");
                let message = err.to_string();
                assert!(!message.contains("capacity_bytes"), "an option nobody can set: {err}");
                for name in [
                    "lamina::Options::disk_budget_bytes",
                    "lamina_options.disk_budget_bytes",
                    "--disk-budget-bytes",
                ] {
                    assert!(message.contains(name), "names {name}: {err}");
                }
                return i;
            }
        }
        assert!(i < first + 10_000_000, "the budget never refused");
    }
}

#[test]
fn the_budget_refuses_new_data_keeps_deletes_and_can_be_raised() {
    for engine in [EngineKind::Trie, EngineKind::Mem] {
        let dir = tempfile::tempdir().unwrap();
        let budget = small_budget(engine);
        let db = Db::open(dir.path(), options(engine, budget)).unwrap();
        let full = fill(&db, 0);
        assert!(db.delete(0u64.to_be_bytes()).unwrap(), "{engine}: deletes still work");
        db.close().unwrap();
        drop(db);
        let db = Db::open(dir.path(), options(engine, 2 * budget)).unwrap();
        assert_eq!(db.get(1u64.to_be_bytes()).unwrap().map(|v| v.len()), Some(1000));
        let more = fill(&db, full);
        assert!(more - full > full / 2, "{engine}: {full} keys, then {more}");
        db.close().unwrap();
        drop(db);
        // No budget: the ring grows with the data.
        let db = Db::open(dir.path(), options(engine, 0)).unwrap();
        for i in more..more + 1000 {
            db.put(i.to_be_bytes(), [2u8; 1000]).unwrap();
        }
        db.close().unwrap();
    }
}
