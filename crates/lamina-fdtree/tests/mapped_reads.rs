//! Lookups read levels in place through read-only maps (`level_map.rs`): over the file
//! backend they make no `pread` of a finished level, nor of a level an FD+FC merge is still
//! writing, stay exact while an FD+FC merge punches the blocks it has passed, and still
//! report a segment damaged in a closed store as `Corruption`; with maps turned off, the
//! same lookups go through `pread` again.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use lamina_core::{Error, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions, Tree};
use lamina_storage::{FileOptions, FileStorage, Storage};

fn options() -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 4096,
        block_bytes: 1024,
        segment_bytes: 512,
        size_ratio: 2,
        key_bytes_max: 8,
        value_bytes_max: 16,
        verify_each_merge: true,
        cache_bytes: 64 << 10,
        mode: FcMode::Fc,
        ..FdTreeOptions::default()
    }
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn value(i: u64) -> Vec<u8> {
    [i.to_le_bytes(), (!i).to_le_bytes()].concat()
}

fn open(dir: &std::path::Path, read_maps: bool) -> (Arc<FileStorage>, FdTree) {
    let storage = Arc::new(
        FileStorage::open_dir(dir, FileOptions { read_maps, ..FileOptions::default() }).unwrap(),
    );
    let db = FdTree::with_storage(storage.clone(), &options(), false).unwrap();
    (storage, db)
}

/// A tree of `n` keys with every merge done.
fn filled(db: &FdTree, n: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut oracle = BTreeMap::new();
    for i in 0..n {
        db.put(&key(i * 3), &value(i)).unwrap();
        oracle.insert(key(i * 3).to_vec(), value(i));
    }
    db.flush().unwrap();
    db.wait_for_merges().unwrap();
    assert!(db.with_tree(|t| t.materialized_labels().len()).unwrap() >= 2, "a deep tree");
    oracle
}

/// Looks every key of `oracle` up (and the absent key after each); returns the storage
/// reads and the mapped reads that took.
fn look_up_all(
    storage: &FileStorage,
    db: &FdTree,
    oracle: &BTreeMap<Vec<u8>, Vec<u8>>,
) -> (u64, u64) {
    let reads_before = storage.io_stats();
    let mapped_before = db.with_tree(Tree::mapped_reads).unwrap();
    for (k, v) in oracle {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {k:?}");
        let absent = (u64::from_be_bytes(k[..].try_into().unwrap()) + 1).to_be_bytes();
        assert_eq!(db.get(&absent).unwrap(), None);
    }
    let reads = storage.io_stats().since(&reads_before).reads();
    (reads, db.with_tree(Tree::mapped_reads).unwrap() - mapped_before)
}

#[test]
fn finished_levels_are_read_in_place_and_not_with_pread() {
    let dir = tempfile::tempdir().unwrap();
    let (storage, db) = open(dir.path(), true);
    let oracle = filled(&db, 3000);
    let (reads, mapped) = look_up_all(&storage, &db, &oracle);
    assert_eq!(reads, 0, "every level is finished: no lookup reads with pread");
    // Most keys are on disk, each found by one segment read (the memtables hold the rest).
    assert!(mapped >= 2000, "{mapped} mapped reads for {} keys", oracle.len());
    db.close().unwrap();
}

#[test]
fn without_maps_the_same_lookups_read_with_pread() {
    let dir = tempfile::tempdir().unwrap();
    let (storage, db) = open(dir.path(), false);
    let oracle = filled(&db, 3000);
    let (reads, mapped) = look_up_all(&storage, &db, &oracle);
    assert_eq!(mapped, 0);
    assert!(reads > 0, "the first read of each segment is a pread (then the cache)");
    db.close().unwrap();
}

/// FD+FC punches the blocks a merge has passed out of the mapped files of the old levels
/// (section 4.4.2); lookups on both sides of the wavefront stay exact while it does.
#[test]
fn lookups_stay_exact_while_a_merge_punches_mapped_levels() {
    let dir = tempfile::tempdir().unwrap();
    let (storage, db) = open(dir.path(), true);
    let mut oracle = filled(&db, 3000);
    // Every finished level mapped before the merge starts.
    look_up_all(&storage, &db, &oracle);
    db.hold_merges(true);
    let mut batch = lamina_core::WriteBatch::new();
    for i in (0..3000u64).filter(|i| i % 5 < 2) {
        batch.delete(key(i * 3).to_vec());
        oracle.remove(key(i * 3).as_slice());
    }
    db.write_batch(&batch).unwrap();
    db.flush().unwrap();
    db.wait_merge_held();
    assert!(db.with_tree(Tree::merge_in_progress).unwrap());
    let sample: BTreeMap<Vec<u8>, Vec<u8>> =
        oracle.iter().step_by(7).map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut reclaimed_max = 0;
    let mut steps = 0;
    while db.with_tree(Tree::merge_in_progress).unwrap() {
        assert!(steps < 10_000, "the merge does not end");
        let (_, mapped) = look_up_all(&storage, &db, &sample);
        assert!(mapped > 0);
        db.step_merge();
        reclaimed_max = reclaimed_max.max(db.with_tree(Tree::reclaimed_old_blocks).unwrap());
        steps += 1;
    }
    assert!(reclaimed_max > 10, "only {reclaimed_max} old blocks reclaimed during the merge");
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    look_up_all(&storage, &db, &oracle);
    db.verify().unwrap();
    db.close().unwrap();
}

/// The levels an FD+FC merge is writing are read through maps made past their files' ends
/// (`LevelMap::ahead`): lookups behind the wavefront make no `pread` either, at any point of
/// the merge (before, every one of them read the new levels through the segment cache).
#[test]
fn levels_being_written_are_read_in_place_too() {
    let dir = tempfile::tempdir().unwrap();
    let (storage, db) = open(dir.path(), true);
    let mut oracle = filled(&db, 3000);
    db.hold_merges(true);
    // One batch: single puts would be paced behind the held merge (`engine/pacing.rs`).
    let mut batch = lamina_core::WriteBatch::new();
    for i in 3000..4500u64 {
        batch.put(key(i * 3).to_vec(), value(i));
        oracle.insert(key(i * 3).to_vec(), value(i));
    }
    db.write_batch(&batch).unwrap();
    db.flush().unwrap();
    db.wait_merge_held();
    assert!(db.with_tree(Tree::merge_in_progress).unwrap());
    let sample: BTreeMap<Vec<u8>, Vec<u8>> =
        oracle.iter().step_by(5).map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut steps = 0;
    let mut mapped_total = 0;
    while db.with_tree(Tree::merge_in_progress).unwrap() {
        assert!(steps < 10_000, "the merge does not end");
        // Between two steps no merge reads: every read here would be a lookup's.
        let (reads, mapped) = look_up_all(&storage, &db, &sample);
        assert_eq!(reads, 0, "a lookup read with pread at merge step {steps}");
        mapped_total += mapped;
        db.step_merge();
        steps += 1;
    }
    assert!(steps > 5, "a merge of {steps} steps shows too little");
    assert!(mapped_total > 0);
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    let (reads, _) = look_up_all(&storage, &db, &oracle);
    assert_eq!(reads, 0);
    db.verify().unwrap();
    db.close().unwrap();
}

/// A byte flipped in a level file between two opens is seen through the map at the
/// segment's first read and reported as `Corruption` naming the file, never as a value.
/// (Segments this process wrote count as checked, `level_map.rs`: the damage is done to a
/// closed store, as a device or another program would do it.)
#[test]
fn a_damaged_mapped_segment_is_corruption_not_a_wrong_value() {
    let dir = tempfile::tempdir().unwrap();
    let persistent = || {
        let storage = Arc::new(FileStorage::open_dir(dir.path(), FileOptions::default()).unwrap());
        (storage.clone(), FdTree::with_storage(storage, &options(), true).unwrap())
    };
    let (_, db) = persistent();
    let oracle = filled(&db, 3000);
    db.close().unwrap();
    let (storage, db) = persistent();
    assert!(db.with_tree(|t| t.materialized_labels().len()).unwrap() >= 2, "reopened whole");
    // No lookup yet: a segment is checked in full at its first read through the map and
    // trusted after that (as a cached one is), so the damage comes before the reads.
    let levels: Vec<String> = storage
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "lvl"))
        .collect();
    assert!(!levels.is_empty());
    for name in &levels {
        let file = std::fs::OpenOptions::new().write(true).open(dir.path().join(name)).unwrap();
        // A byte inside the first segment's entries of every block.
        let len = file.metadata().unwrap().len();
        for block in 0..len / 1024 {
            file.write_all_at(&[0x5a], block * 1024 + 40).unwrap();
        }
    }
    let mut corrupt = 0;
    for (k, v) in &oracle {
        match db.get(k) {
            Ok(got) => assert_eq!(got.as_ref(), Some(v), "a damaged segment gave a wrong value"),
            Err(Error::Corruption { file, .. }) => {
                let name = file.file_name().unwrap().to_string_lossy().into_owned();
                assert!(levels.contains(&name), "{file:?}");
                corrupt += 1;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert!(corrupt > 0, "the damage was seen");
}

/// A short scan reads the segment holding its start in each level and run, and the next
/// one where its pairs continue there, not whole blocks (`scan_cursor.rs`): with maps off
/// every such read is a `pread` of one segment, counted.
#[test]
fn a_short_scan_reads_a_few_segments_per_level() {
    let dir = tempfile::tempdir().unwrap();
    let (storage, db) = open(dir.path(), false);
    let oracle = filled(&db, 3000);
    let parts = db.with_tree(|t| t.materialized_labels().len() + t.run_count()).unwrap() as u64;
    let keys: Vec<&Vec<u8>> = oracle.keys().collect();
    for (n, start) in keys.iter().step_by(97).enumerate() {
        let before = storage.io_stats();
        let range = lamina_core::KeyRange {
            start: std::ops::Bound::Included((*start).clone()),
            end: std::ops::Bound::Unbounded,
        };
        let got = db.scan(&range, 10).unwrap();
        let expect: Vec<_> = oracle
            .range((*start).clone()..)
            .take(10)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        assert_eq!(got, expect, "scan {n}");
        let read = storage.io_stats().since(&before);
        // Segments of 512 bytes (`options()`); two per part at most for 10 pairs.
        assert!(
            read.bytes_read <= parts * 2 * 512,
            "scan {n} read {} bytes from {parts} levels and runs",
            read.bytes_read
        );
    }
    db.close().unwrap();
}
