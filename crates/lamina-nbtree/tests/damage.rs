//! Damaged and missing files (issue 16: "Damaged files give `Corruption` naming the file,
//! never a panic or silently wrong data; a missing superblock never opens as an empty
//! database").

use std::sync::Arc;

use lamina_core::{Durability, Error, OpenIntent, OrderedIndex};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::persist::SUPERBLOCK_FILE_NAME;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions, dtree};
use lamina_storage::{MemoryStorage, OpenMode, Storage};

fn options(intent: OpenIntent) -> NbTreeOptions {
    NbTreeOptions {
        sigma_bytes: SIGMA_BYTES_MIN,
        page_bytes: 512,
        durability: Durability::None,
        deamortization: Deamortization::Foreground,
        intent,
        ..NbTreeOptions::default()
    }
}

/// A closed tree with several d-trees on disk.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn built() -> (Arc<dyn Storage>, Pairs) {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = NbTree::open(storage.clone(), &options(OpenIntent::CreateIfMissing)).unwrap();
    let mut pairs = Vec::new();
    for i in 0..3000u32 {
        let key = format!("key{:08}", i.wrapping_mul(2_654_435_761) % 100_000).into_bytes();
        let value = vec![(i % 200) as u8; 40];
        db.put(&key, &value).unwrap();
        pairs.push((key, value));
    }
    db.flush_now().unwrap();
    assert!(db.stree().dtrees().count() >= 3);
    db.close().unwrap();
    (storage, pairs)
}

fn corruption_naming(err: &Error, name: &str) -> bool {
    matches!(err, Error::Corruption { .. }) && err.to_string().contains(name)
}

fn names(storage: &Arc<dyn Storage>, pick: impl Fn(&str) -> bool) -> Vec<String> {
    storage.list().unwrap().into_iter().filter(|n| pick(n)).collect()
}

#[test]
fn a_missing_superblock_of_an_existing_database_is_corruption() {
    let (storage, _) = built();
    storage.remove(SUPERBLOCK_FILE_NAME).unwrap();
    let err = NbTree::open(storage.clone(), &options(OpenIntent::MustExist)).unwrap_err();
    assert!(corruption_naming(&err, SUPERBLOCK_FILE_NAME), "{err}");
    // Nothing was deleted: the d-trees are still there.
    assert!(!names(&storage, |n| dtree::parse_file_name(n).is_some()).is_empty());
}

#[test]
fn an_empty_superblock_is_corruption() {
    let (storage, _) = built();
    storage.open(SUPERBLOCK_FILE_NAME, OpenMode::Existing).unwrap().set_len(0).unwrap();
    let err = NbTree::open(storage, &options(OpenIntent::MustExist)).unwrap_err();
    assert!(corruption_naming(&err, SUPERBLOCK_FILE_NAME), "{err}");
}

/// The superblock's newest commit lost to damage (`docs/results/reliability.md`, "Gaps"):
/// the older slot names the manifest the newest commit replaced, which that commit removed
/// (as it marked the d-trees it replaced for removal), so the open is `Corruption` naming
/// that manifest, never the older state over files changed since. The older slot lost
/// instead opens with every write.
#[test]
fn a_lost_newest_superblock_commit_is_corruption_naming_the_older_manifest() {
    let (pristine, pairs) = built();
    let mut outcomes = Vec::new();
    for slot in 0..2u64 {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        for name in pristine.list().unwrap() {
            let bytes = pristine.read_all(&name).unwrap();
            storage.open(&name, OpenMode::CreateNew).unwrap().write_all_at(0, &bytes).unwrap();
        }
        let file = storage.open(SUPERBLOCK_FILE_NAME, OpenMode::Existing).unwrap();
        let at = slot * 4096 + 40;
        let mut byte = [0u8];
        file.read_exact_at(at, &mut byte).unwrap();
        file.write_all_at(at, &[byte[0] ^ 0x5a]).unwrap();
        drop(file);
        match NbTree::open(storage.clone(), &options(OpenIntent::MustExist)) {
            Ok(db) => {
                for (key, value) in &pairs {
                    assert_eq!(db.get(key).unwrap().as_ref(), Some(value), "slot {slot}");
                }
                db.verify().unwrap();
                outcomes.push("opened");
            }
            Err(err) => {
                let manifests = names(&storage, |n| n.starts_with("nbtree-"));
                assert!(
                    corruption_naming(&err, "nbtree-") && corruption_naming(&err, ".man"),
                    "slot {slot}: {err}"
                );
                assert!(manifests.iter().all(|m| !err.to_string().contains(m.as_str())), "{err}");
                assert!(err.to_string().contains("newest commit is damaged"), "{err}");
                outcomes.push("corruption");
            }
        }
    }
    outcomes.sort_unstable();
    assert_eq!(outcomes, ["corruption", "opened"], "one slot is the newest commit");
}

#[test]
fn a_missing_or_damaged_manifest_is_corruption_naming_it() {
    let (storage, _) = built();
    let manifest = names(&storage, |n| n.starts_with("nbtree-")).pop().unwrap();
    let file = storage.open(&manifest, OpenMode::Existing).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(20, &mut byte).unwrap();
    file.write_all_at(20, &[byte[0] ^ 1]).unwrap();
    let err = NbTree::open(storage.clone(), &options(OpenIntent::MustExist)).unwrap_err();
    assert!(corruption_naming(&err, &manifest), "{err}");
    storage.remove(&manifest).unwrap();
    let err = NbTree::open(storage, &options(OpenIntent::MustExist)).unwrap_err();
    assert!(corruption_naming(&err, &manifest), "{err}");
}

#[test]
fn a_missing_or_cut_dtree_is_corruption_naming_it() {
    let (storage, _) = built();
    let victim = names(&storage, |n| dtree::parse_file_name(n).is_some()).pop().unwrap();
    let file = storage.open(&victim, OpenMode::Existing).unwrap();
    let len = file.len().unwrap();
    file.set_len(len / 2).unwrap();
    let err = NbTree::open(storage.clone(), &options(OpenIntent::MustExist)).unwrap_err();
    assert!(corruption_naming(&err, &victim), "{err}");
    storage.remove(&victim).unwrap();
    let err = NbTree::open(storage, &options(OpenIntent::MustExist)).unwrap_err();
    assert!(corruption_naming(&err, &victim), "{err}");
}

#[test]
fn a_flipped_byte_in_a_leaf_is_an_error_never_wrong_data() {
    let (storage, pairs) = built();
    for victim in names(&storage, |n| dtree::parse_file_name(n).is_some()) {
        let file = storage.open(&victim, OpenMode::Existing).unwrap();
        let mut byte = [0u8];
        file.read_exact_at(100, &mut byte).unwrap();
        file.write_all_at(100, &[byte[0] ^ 0x10]).unwrap();
    }
    // Opening may succeed (leaves are read on demand); any read of a damaged leaf fails.
    let db = match NbTree::open(storage, &options(OpenIntent::MustExist)) {
        Ok(db) => db,
        Err(err) => {
            assert!(matches!(err, Error::Corruption { .. }), "{err}");
            return;
        }
    };
    let last: std::collections::BTreeMap<_, _> = pairs.into_iter().collect();
    let mut errors = 0;
    for (key, value) in &last {
        match db.get(key) {
            Ok(Some(v)) => assert_eq!(&v, value, "never wrong data"),
            Ok(None) => panic!("key {key:?} silently missing"),
            Err(err) => {
                assert!(matches!(err, Error::Corruption { .. }), "{err}");
                errors += 1;
            }
        }
    }
    assert!(errors > 0, "a damaged leaf must be noticed");
    assert!(db.verify().is_err());
}

/// A refused open changes nothing: a d-tree file the committed state does not name (a
/// crash before its commit) is removed only once the open is validated, log included.
#[test]
fn a_refused_open_keeps_unnamed_files_until_the_log_is_validated() {
    let (storage, _) = built();
    let db = NbTree::open(storage.clone(), &options(OpenIntent::MustExist)).unwrap();
    db.put(b"after-flush", b"only-in-the-log").unwrap();
    db.sync().unwrap();
    drop(db); // no clean close: the record lives in the log only
    let orphan = dtree::file_name(1 << 40);
    storage.open(&orphan, OpenMode::CreateNew).unwrap().write_all_at(0, &[7; 512]).unwrap();
    let log =
        names(&storage, |n| n.starts_with(lamina_nbtree::persist::LOG_FILE_PREFIX)).pop().unwrap();
    let file = storage.open(&log, OpenMode::Existing).unwrap();
    let saved = storage.read_all(&log).unwrap();
    file.set_len(100).unwrap(); // cut inside the file header: the log is damaged
    let err = NbTree::open(storage.clone(), &options(OpenIntent::MustExist)).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(storage.exists(&orphan).unwrap(), "the refused open removed {orphan}");
    file.set_len(0).unwrap();
    file.write_all_at(0, &saved).unwrap();
    let db = NbTree::open(storage.clone(), &options(OpenIntent::MustExist)).unwrap();
    assert_eq!(db.get(b"after-flush").unwrap().as_deref(), Some(&b"only-in-the-log"[..]));
    assert!(!storage.exists(&orphan).unwrap(), "recovery removes {orphan}");
    db.close().unwrap();
}
