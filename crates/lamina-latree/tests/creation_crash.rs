//! A crash at any storage operation of a new store's creation, with the first checkpoint in a
//! side file (too large to be inline): the next open starts an empty store that works. Found
//! by the crash simulation (`lamina-sim`, latree seed 12 of its first version): a crash after
//! the side file's `sync_dir` and before the superblock's commit left a store every later
//! open refused as corrupt ("the superblock is empty but the tree was created").

use std::sync::Arc;

use lamina_core::{Durability, OpenIntent, OrderedIndex};
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::{DeviceProfile, FaultPlan, FaultyStorage, is_simulated_crash};

fn options() -> LaTreeEngineOptions {
    let mut options = LaTreeEngineOptions::for_device(DeviceProfile::ssd_msp7525());
    options.tree.memory_bytes = 256 << 10;
    options.durability = Durability::Sync;
    options.intent = OpenIntent::CreateIfMissing;
    options.checkpoint_inline_bytes_max = 0; // every checkpoint in a side file
    options
}

#[test]
fn a_crash_during_creation_leaves_a_store_that_opens_empty() {
    let mut crashed_creations = 0;
    for crash_at in 1.. {
        let storage = FaultyStorage::in_memory(FaultPlan::none().crash_at(crash_at));
        match LaTreeEngine::open(Arc::new(storage.clone()), &options()) {
            Ok(db) => {
                db.crash();
                assert!(!storage.crashed(), "creation completes before op {crash_at}");
                break;
            }
            Err(e) => assert!(is_simulated_crash(&e), "crash at {crash_at}: {e}"),
        }
        crashed_creations += 1;
        let after = storage.reopen_after_crash().unwrap();
        let db = LaTreeEngine::open(Arc::new(after), &options())
            .unwrap_or_else(|e| panic!("crash at op {crash_at} of the creation: reopen: {e}"));
        assert_eq!(db.get(b"k").unwrap(), None);
        db.put(b"k", b"v").unwrap();
        assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        db.verify().unwrap();
        db.close().unwrap();
    }
    assert!(crashed_creations > 3, "the creation has {crashed_creations} operations");
}
