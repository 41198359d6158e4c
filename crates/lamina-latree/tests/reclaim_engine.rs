//! Reclamation through the engine (section 4.3, `tree/reclaim.rs`): a persistent tree on raw
//! NAND with small partitions and a checkpoint interval far beyond the workload's log, so
//! only the tree's own wish (`LaTree::wants_checkpoint`, taken up by the engine at its next
//! write after a reclamation) commits checkpoints and lets old partitions be erased. Churn
//! over a small key set; then: reclamations ran and were not all deferred, checkpoints were
//! taken, the data equals the model, and after `close` (a final committed checkpoint) the
//! other partition is erased and the files hold about the live tree. Reopened: the same data.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{Durability, OrderedIndex};
use lamina_latree::node::NodeLayout;
use lamina_latree::tree::TREE_FILES;
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::{DeviceProfile, MemoryStorage, OpenMode, Storage};

const PARTITION_BYTES: u64 = 64 << 10;

fn options() -> LaTreeEngineOptions {
    let mut options = LaTreeEngineOptions::for_device(DeviceProfile::nand_toshiba());
    options.tree.key_bytes_max = 16;
    options.tree.value_bytes_max = 32;
    options.tree.node_bytes = NodeLayout::node_bytes_min_for(16, 32).max(512);
    options.tree.buffer_entries_max = 64;
    options.tree.memory_bytes = 8 << 10;
    options.tree.partition_bytes = PARTITION_BYTES;
    options.durability = Durability::None;
    options.checkpoint_log_bytes = 1 << 30;
    options.verify_each_checkpoint = true;
    options
}

fn file_bytes(storage: &dyn Storage, name: &str) -> u64 {
    if !storage.exists(name).unwrap() {
        return 0;
    }
    storage.open(name, OpenMode::Existing).unwrap().len().unwrap()
}

#[test]
fn the_engine_commits_checkpoints_for_reclamation_and_erases_old_partitions() {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = LaTreeEngine::open(storage.clone(), &options()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..20_000u32 {
        let key = format!("key{:03}", (i * 7919) % 150).into_bytes();
        if i % 6 == 5 {
            db.delete(&key).unwrap();
            model.remove(&key);
        } else {
            let value = vec![(i % 251) as u8; (i % 29) as usize];
            db.put(&key, &value).unwrap();
            model.insert(key, value);
        }
    }
    let extra = |name: &str| db.stats().extra.iter().find(|(n, _)| *n == name).unwrap().1;
    let (reclamations, deferred) = (extra("reclamations"), extra("reclamations_deferred"));
    eprintln!("{:?}", db.stats().extra);
    assert!(reclamations >= 5, "{reclamations} reclamations");
    assert!(extra("checkpoints") >= 2, "checkpoints were taken for the reclamations");
    assert!(extra("reclaim_bytes_erased") > 0, "old partitions were erased");
    assert_eq!(lamina_core::testkit::dump(&db), model);
    db.close().unwrap();
    // The final checkpoint is committed: the other partition is erased.
    let sizes: Vec<(&str, u64)> =
        TREE_FILES.iter().map(|&n| (n, file_bytes(&*storage, n))).collect();
    eprintln!("{reclamations} reclamations, {deferred} deferred, files {sizes:?}");
    let empty = sizes.iter().filter(|(_, len)| *len == 0).count();
    assert_eq!(empty, 2, "one partition's two files are erased: {sizes:?}");
    let total: u64 = sizes.iter().map(|(_, len)| len).sum();
    assert!(total <= 2 * PARTITION_BYTES, "{total} bytes: {sizes:?}");
    let db = LaTreeEngine::open(storage, &options()).unwrap();
    assert_eq!(lamina_core::testkit::dump(&db), model);
    db.close().unwrap();
}
