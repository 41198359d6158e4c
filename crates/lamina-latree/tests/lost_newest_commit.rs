//! A completed newest checkpoint commit lost afterwards (a damaged superblock slot: media
//! damage, not a crash) while the slots the older checkpoint reaches have been freed by the
//! newest one and written again (`docs/results/reliability.md`, "Gaps": the engines that
//! reuse freed pages). The superblock then opens the older commit; its node table names
//! slots that now hold other nodes, or newer copies of the same nodes. The open, or a read,
//! must be `Corruption`, or the data must be exactly every acknowledged write: never a
//! silently different database.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{Error, KeyRange, OpenIntent, OrderedIndex};
use lamina_latree::engine::{LOG_FILE_PREFIX, SUPERBLOCK_BYTES, SUPERBLOCK_FILE};
use lamina_latree::tree::NODE_FILE;
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::{MemoryStorage, OpenMode, Storage};

/// The superblock's slot size (`docs/format/superblock.md`: slot `i` is block `i`).
const SLOT_BYTES: u64 = SUPERBLOCK_BYTES as u64;
const KEYS: u32 = 3000;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(intent: OpenIntent) -> LaTreeEngineOptions {
    common::explicit_checkpoint_options(256, intent)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000).into_bytes()
}

/// Every key written with `round`'s value.
fn write_round(db: &LaTreeEngine, model: &mut Model, round: u8) {
    for i in 0..KEYS {
        let value = vec![round.wrapping_mul(31).wrapping_add((i % 200) as u8); 60];
        db.put(&key(i), &value).unwrap();
        model.insert(key(i), value);
    }
}

/// The slot of the superblock that differs between two copies of it (the commit made in
/// between).
fn changed_slot(before: &[u8], after: &[u8]) -> u64 {
    let slot = |i: u64| {
        let range = (i * SLOT_BYTES) as usize..((i + 1) * SLOT_BYTES) as usize;
        (before.get(range.clone()), after.get(range))
    };
    let changed: Vec<u64> = (0..2).filter(|&i| slot(i).0 != slot(i).1).collect();
    assert_eq!(changed.len(), 1, "one commit changes one slot");
    changed[0]
}

/// Opens the store and reads everything: `Corruption` somewhere (returned), or exactly
/// `model` (`None`).
fn corruption_or_model(storage: &Arc<dyn Storage>, model: &Model) -> Option<Error> {
    let db = match LaTreeEngine::open(storage.clone(), &options(OpenIntent::MustExist)) {
        Err(e @ Error::Corruption { .. }) => return Some(e),
        Err(other) => panic!("expected corruption or the data, got {other}"),
        Ok(db) => db,
    };
    let all = match db.scan(&KeyRange::all(), model.len() + 1) {
        Ok(all) => all.into_iter().collect::<BTreeMap<_, _>>(),
        Err(e @ Error::Corruption { .. }) => return Some(e),
        Err(other) => panic!("expected corruption or the data, got {other}"),
    };
    assert_eq!(all.len(), model.len(), "a silently different database");
    assert!(all == *model, "a silently different database: values differ");
    for (key, value) in model {
        match db.get(key) {
            Ok(found) => assert_eq!(found.as_ref(), Some(value), "wrong value"),
            Err(e @ Error::Corruption { .. }) => return Some(e),
            Err(other) => panic!("expected corruption or the data, got {other}"),
        }
    }
    None
}

/// Builds the store (an older commit, changes, the newest commit, writes that take the
/// freed slots again, a crash), loses the newest commit and opens what is left; returns
/// the `Corruption` reported, if any (else the data was exactly every write).
/// With `reopen`, the store is crashed and opened again right after the newest commit.
fn lose_the_newest_commit(
    between: impl Fn(&LaTreeEngine, &mut Model),
    reopen: bool,
) -> Option<Error> {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let mut db =
        LaTreeEngine::open(storage.clone(), &options(OpenIntent::CreateIfMissing)).unwrap();
    let mut model = Model::new();
    write_round(&db, &mut model, 1);
    db.checkpoint().unwrap(); // the older commit
    let written = db.storage().io_stats().blocks_written;
    between(&db, &mut model);
    assert!(db.storage().io_stats().blocks_written > written, "the tree changed in between");
    let before = storage.read_all(SUPERBLOCK_FILE).unwrap();
    db.checkpoint().unwrap(); // the newest: frees the slots only the older one reaches
    let newest = changed_slot(&before, &storage.read_all(SUPERBLOCK_FILE).unwrap());
    if reopen {
        db.crash();
        drop(db);
        db = LaTreeEngine::open(storage.clone(), &options(OpenIntent::MustExist)).unwrap();
    }
    write_round(&db, &mut model, 3); // rewrites nodes, into the freed slots first
    write_round(&db, &mut model, 4);
    db.crash();
    drop(db);

    // Undamaged, every write is there.
    let intact = MemoryStorage::new();
    for name in storage.list().unwrap() {
        let bytes = storage.read_all(&name).unwrap();
        intact.open(&name, OpenMode::CreateNew).unwrap().write_all_at(0, &bytes).unwrap();
    }
    let intact = corruption_or_model(&(Arc::new(intact) as Arc<dyn Storage>), &model);
    assert!(intact.is_none(), "the undamaged store opens with its data: {intact:?}");

    // The newest commit lost: one byte of its slot flipped.
    let file = storage.open(SUPERBLOCK_FILE, OpenMode::Existing).unwrap();
    let at = newest * SLOT_BYTES + 40;
    let mut byte = [0u8];
    file.read_exact_at(at, &mut byte).unwrap();
    file.write_all_at(at, &[byte[0] ^ 0x5a]).unwrap();
    drop(file);
    corruption_or_model(&storage, &model)
}

/// Writes between the two commits: the log is truncated at the newest, so the older one
/// needs records the log no longer holds, which the log's open reports, unless opening the
/// older commit's tree already read a node whose slot the later writes took (which slots
/// they take depends on how the updates hand entries down, `tree/drain.rs`): then it is the
/// node file's corruption. Either way, never the older state.
#[test]
fn a_lost_newest_commit_after_writes_is_corruption_naming_the_log_or_the_node_file() {
    for reopen in [false, true] {
        match lose_the_newest_commit(|db, model| write_round(db, model, 2), reopen) {
            Some(Error::Corruption { file, reason, .. })
                if file.to_string_lossy().contains(LOG_FILE_PREFIX) =>
            {
                assert!(reason.contains("newer committed state lost"), "{reason}");
            }
            Some(Error::Corruption { file, reason, .. }) => {
                assert!(file.to_string_lossy().contains(NODE_FILE), "{file:?}: {reason}");
            }
            other => panic!("reopen {reopen}: expected the log's corruption, got {other:?}"),
        }
    }
}

/// Only lookups between the two commits: ADAPT empties buffers at lookups (section 3), so
/// the tree changes with nothing logged, and both commits name the same log position. The
/// older commit's slots were freed by the newest and written again: reading them is
/// `Corruption` in the node file, never the older state over newer pages. (Before the
/// write-sequence check, a slot taken by another node read "node 13 found where 9 was
/// expected", and one taken again by the same node read its newer copy silently.)
#[test]
fn a_lost_newest_commit_after_lookups_only_is_corruption_naming_the_node_file() {
    let lookups = |db: &LaTreeEngine, model: &mut Model| {
        for _ in 0..20 {
            for key in model.keys() {
                db.get(key).unwrap();
            }
        }
    };
    for reopen in [false, true] {
        match lose_the_newest_commit(lookups, reopen) {
            Some(Error::Corruption { file, reason, .. }) => {
                assert!(file.to_string_lossy().contains(NODE_FILE), "{file:?}: {reason}");
            }
            other => panic!("reopen {reopen}: expected the node file's corruption, got {other:?}"),
        }
    }
}
