//! Reopening a persistent LA-tree: replay of the log after a crash, a checkpoint too large
//! for the superblock (committed through a side file), `OpenIntent::MustExist` on an empty
//! store, an interrupted creation, and a store opened as the other engine.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{Durability, Error, OpenIntent, OrderedIndex};
use lamina_latree::engine::{CHECKPOINT_LOG_BYTES_MAX, CHECKPOINT_LOG_BYTES_MIN, SUPERBLOCK_FILE};
use lamina_latree::tree::{BUFFER_FILE, NODE_FILE};
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::{DeviceProfile, MemoryStorage, OpenMode, Storage};

fn options(buffered: bool, intent: OpenIntent) -> LaTreeEngineOptions {
    let mut options = LaTreeEngineOptions::for_device(DeviceProfile::ssd_msp7525());
    options.tree.buffered = buffered;
    options.tree.buffer_entries_max = 64;
    options.tree.memory_bytes = 256 << 10;
    options.durability = Durability::Sync;
    options.intent = intent;
    options.verify_each_checkpoint = true;
    options
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 1_000_000).into_bytes()
}

fn extra(db: &LaTreeEngine, name: &str) -> u64 {
    db.stats().extra.iter().find(|(n, _)| *n == name).unwrap().1
}

#[test]
fn a_crash_replays_the_log_after_the_last_checkpoint() {
    for buffered in [true, false] {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let mut opts = options(buffered, OpenIntent::CreateIfMissing);
        opts.checkpoint_log_bytes = CHECKPOINT_LOG_BYTES_MAX; // only explicit checkpoints
        let db = LaTreeEngine::open(storage.clone(), &opts).unwrap();
        let mut model = BTreeMap::new();
        for i in 0..2000 {
            db.put(&key(i), &i.to_le_bytes()).unwrap();
            model.insert(key(i), i.to_le_bytes().to_vec());
        }
        db.checkpoint().unwrap();
        for i in (0..2000).step_by(3) {
            assert!(db.delete(&key(i)).unwrap());
            model.remove(&key(i));
        }
        for i in 2000..2500 {
            db.put(&key(i), b"after").unwrap();
            model.insert(key(i), b"after".to_vec());
        }
        db.crash(); // the log holds everything after the checkpoint (Sync)
        drop(db);
        let opts = LaTreeEngineOptions { intent: OpenIntent::MustExist, ..opts };
        let db = LaTreeEngine::open(storage.clone(), &opts).unwrap();
        assert_eq!(extra(&db, "replayed_records"), 667 + 500, "buffered {buffered}");
        assert_eq!(lamina_core::testkit::dump(&db), model, "buffered {buffered}");
        db.verify().unwrap();
        db.close().unwrap();
        // Closing checkpointed: nothing left to replay.
        let db = LaTreeEngine::open(storage, &opts).unwrap();
        assert_eq!(extra(&db, "replayed_records"), 0);
        assert_eq!(lamina_core::testkit::dump(&db), model);
        db.close().unwrap();
    }
}

#[test]
fn a_checkpoint_larger_than_the_superblock_goes_to_a_side_file() {
    // Out of place (raw NAND: the checkpoint carries the node table), with every checkpoint
    // sent to a side file (a real one goes there past `CHECKPOINT_INLINE_BYTES_MAX`).
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let mut opts = LaTreeEngineOptions::for_device(DeviceProfile::nand_toshiba());
    opts.tree.buffer_entries_max = 256;
    opts.tree.memory_bytes = 256 << 10;
    opts.durability = Durability::None;
    opts.checkpoint_log_bytes = CHECKPOINT_LOG_BYTES_MIN * 16;
    opts.checkpoint_inline_bytes_max = 0;
    let db = LaTreeEngine::open(storage.clone(), &opts).unwrap();
    let count = 6000u32;
    for i in 0..count {
        db.put(&key(i), &[i as u8; 40]).unwrap();
        if i % 2000 == 1999 {
            // Besides the background ones (whose timing the test does not rely on).
            db.checkpoint().unwrap();
        }
    }
    assert!(extra(&db, "checkpoints") >= 3, "the writes checkpointed several times");
    db.close().unwrap();
    let side: Vec<String> = storage
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with("latree.checkpoint-"))
        .collect();
    assert_eq!(side.len(), 1, "one side file, the previous ones removed: {side:?}");
    let opts = LaTreeEngineOptions { intent: OpenIntent::MustExist, ..opts };
    let db = LaTreeEngine::open(storage.clone(), &opts).unwrap();
    for i in (0..count).step_by(97) {
        assert_eq!(db.get(&key(i)).unwrap(), Some(vec![i as u8; 40]), "key {i}");
    }
    db.verify().unwrap();
    db.close().unwrap();
    // A damaged side file is corruption naming it.
    let name =
        storage.list().unwrap().into_iter().find(|n| n.starts_with("latree.checkpoint-")).unwrap();
    let file = storage.open(&name, OpenMode::Existing).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(100, &mut byte).unwrap();
    file.write_all_at(100, &[byte[0] ^ 0x10]).unwrap();
    let err = LaTreeEngine::open(storage.clone(), &opts).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }) && err.to_string().contains(&name), "{err}");
    storage.remove(&name).unwrap();
    let err = LaTreeEngine::open(storage, &opts).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }) && err.to_string().contains(&name), "{err}");
}

#[test]
fn must_exist_on_an_empty_store_is_corruption_and_creates_nothing() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let err =
        LaTreeEngine::open(storage.clone(), &options(true, OpenIntent::MustExist)).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains(SUPERBLOCK_FILE), "{err}");
    assert!(storage.list().unwrap().is_empty(), "a refused open creates nothing");
}

#[test]
fn an_interrupted_creation_starts_afresh_unless_the_store_must_exist() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    // What a crash between creating the tree's files and the first commit leaves.
    for name in [SUPERBLOCK_FILE, NODE_FILE, BUFFER_FILE] {
        storage.open(name, OpenMode::CreateNew).unwrap();
    }
    storage.open(NODE_FILE, OpenMode::Existing).unwrap().write_all_at(0, &[7; 4096]).unwrap();
    let err =
        LaTreeEngine::open(storage.clone(), &options(true, OpenIntent::MustExist)).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    let db =
        LaTreeEngine::open(storage.clone(), &options(true, OpenIntent::CreateIfMissing)).unwrap();
    assert!(lamina_core::testkit::dump(&db).is_empty());
    db.put(b"k", b"v").unwrap();
    db.close().unwrap();
    let db = LaTreeEngine::open(storage, &options(true, OpenIntent::MustExist)).unwrap();
    assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
    db.close().unwrap();
}

#[test]
fn a_store_opened_as_the_other_engine_is_incompatible() {
    for buffered in [true, false] {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let db =
            LaTreeEngine::open(storage.clone(), &options(buffered, OpenIntent::CreateIfMissing))
                .unwrap();
        db.put(b"k", b"v").unwrap();
        db.close().unwrap();
        let err = LaTreeEngine::open(storage.clone(), &options(!buffered, OpenIntent::MustExist))
            .unwrap_err();
        assert!(matches!(err, Error::Incompatible { .. }), "{err}");
        let db = LaTreeEngine::open(storage, &options(buffered, OpenIntent::MustExist)).unwrap();
        assert_eq!(db.get(b"k").unwrap(), Some(b"v".to_vec()));
        db.close().unwrap();
    }
}
