//! A full disk under the durable trie (ENOSPC from storage operation N on), then space back:
//! the write that meets it fails with `NoSpace` naming `trie.ring`, the tree is unchanged by
//! it, the same handle accepts writes again once space is freed, `close` succeeds, and every
//! acknowledged write is there after a power cut.

#![cfg(not(feature = "shuttle"))]

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::testkit::dump;
use lamina_core::{Durability, Error, OrderedIndex};
use lamina_storage::log::options::BUFFER_BYTES_MIN;
use lamina_storage::{FailKind, FaultPlan, FaultyStorage, Storage};
use lamina_trie::{TrieEngine, TrieOptions};

fn options() -> TrieOptions {
    TrieOptions::default().log_buffer_bytes(BUFFER_BYTES_MIN).durability(Durability::Sync)
}

/// Returns whether a write met the full disk.
fn run(fail_at: u64) -> bool {
    let faulty =
        FaultyStorage::in_memory(FaultPlan::none().fail_at(fail_at, FailKind::NoSpace, true));
    let storage: Arc<dyn Storage> = Arc::new(faulty.clone());
    let Ok(db) = TrieEngine::open(storage, options()) else { return false };
    let mut model = BTreeMap::new();
    let mut failed = None;
    for i in 0..40u32 {
        let (k, v) = (format!("k{}", i % 25).into_bytes(), vec![i as u8; 500]);
        match db.put(&k, &v) {
            Ok(()) => {
                model.insert(k, v);
            }
            Err(err) => {
                failed = Some((k, err));
                break;
            }
        }
    }
    let Some((k, err)) = failed else {
        db.close().unwrap();
        return false;
    };
    assert!(matches!(err, Error::NoSpace { .. }), "{err}");
    assert!(err.to_string().contains("trie.ring") && !err.to_string().contains(".tmp"), "{err}");
    assert_eq!(db.get(&k).unwrap(), model.get(&k).cloned(), "a failed write changes nothing");
    assert!(matches!(db.put(&k, b"x"), Err(Error::NoSpace { .. })), "still full");
    faulty.stop_failing();
    for i in 0..10u32 {
        let (k, v) = (format!("after{i}").into_bytes(), vec![1u8; 100]);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.close().unwrap();
    drop(db);
    let storage: Arc<dyn Storage> = Arc::new(faulty.reopen_after_crash().unwrap());
    let db = TrieEngine::open(storage, options()).unwrap();
    assert_eq!(dump(&db), model, "full disk at op {fail_at}");
    db.close().unwrap();
    true
}

#[test]
fn a_full_disk_fails_writes_until_space_is_back_and_loses_nothing() {
    let hit = (1..80).filter(|&n| run(n)).count();
    assert!(hit > 30, "the disk filled up during the workload only {hit} times");
}
