//! FD+FC (section 4): the merge thread is held after a stage of merge-execute, so the tree is
//! observed with the wavefront in the middle of the keys: lookups on both sides of it,
//! scans across it, modifications into `L_0^new`, old blocks already reclaimed (Remark A.5),
//! and room freed in `L_0` by m-delete letting a waiting writer in before the merge ends
//! (dynamic memory sharing, section 4.2).

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{KeyRange, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions, Tree};
use lamina_storage::{MemoryStorage, Storage};

fn tiny() -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 2048,
        block_bytes: 512,
        size_ratio: 2,
        key_bytes_max: 8,
        value_bytes_max: 8,
        verify_each_merge: true,
        cache_bytes: 0,
        mode: FcMode::Fc,
        ..FdTreeOptions::default()
    }
}

fn key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn merge_due_or_running(db: &FdTree) -> bool {
    db.with_tree(|t| t.background_merge_due().is_some() || t.merge_in_progress()).unwrap()
}

fn all(db: &FdTree) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect()
}

/// Grows a tree of even keys, then deletes 40% of them in one batch, which violates (I6)
/// and starts a full merge (underflow, section 2.2) over every level; holds it after its
/// first stage.
fn tree_with_a_held_merge(
    storage: Arc<MemoryStorage>,
    evens: u64,
) -> (FdTree, BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = FdTree::with_storage(storage, &tiny(), false).unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..evens {
        db.put(&key(i * 2), &i.to_le_bytes()).unwrap();
        oracle.insert(key(i * 2).to_vec(), i.to_le_bytes().to_vec());
    }
    db.wait_for_merges().unwrap();
    assert!(db.with_tree(|t| t.materialized_labels().len()).unwrap() >= 3, "a deep tree");
    db.hold_merges(true);
    let mut batch = lamina_core::WriteBatch::new();
    for i in (0..evens).filter(|i| i % 5 < 2) {
        batch.delete(key(i * 2).to_vec());
        oracle.remove(key(i * 2).as_slice());
    }
    db.write_batch(&batch).unwrap();
    assert!(merge_due_or_running(&db));
    db.wait_merge_held();
    (db, oracle)
}

#[test]
fn lookups_scans_and_writes_on_both_sides_of_the_wavefront() {
    let storage = Arc::new(MemoryStorage::new());
    let (db, mut oracle) = tree_with_a_held_merge(storage, 600);
    // A few stages in: the wavefront is inside the key space and old blocks are gone.
    for _ in 0..6 {
        db.step_merge();
        db.with_tree(Tree::verify_wavefront).unwrap().unwrap();
    }
    let wavefront = db.with_tree(|t| t.wavefront_key().map(<[u8]>::to_vec)).unwrap();
    let wavefront = wavefront.expect("the merge is in progress");
    assert!(!wavefront.is_empty() && wavefront.as_slice() < key(1000).as_slice(), "{wavefront:?}");
    assert!(db.with_tree(Tree::reclaimed_old_blocks).unwrap() > 0, "m-delete reclaimed nothing");
    // Every key is found, behind the wavefront (new levels) and beyond it (old levels).
    for (k, v) in &oracle {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {k:?}");
    }
    assert_eq!(db.get(&key(5_000_001)).unwrap(), None);
    // Scans across the wavefront, whole and in pieces.
    assert_eq!(all(&db), oracle);
    let from = KeyRange::new(wavefront.clone()..);
    let expect: Vec<_> = oracle.range(wavefront.clone()..).take(7).collect();
    let got = db.scan(&from, 7).unwrap();
    assert_eq!(got.iter().map(|(k, v)| (k, v)).collect::<Vec<_>>(), expect);
    // Modifications go to L_0^new on both sides of the wavefront, once m-delete has freed
    // room in L_0 (the batch overfilled it; the merge is held, so each write first lets
    // it run until there is room).
    let make_room = |db: &FdTree| {
        while db.with_tree(Tree::top_is_full).unwrap() {
            db.step_merge();
        }
    };
    make_room(&db);
    let wavefront = db.with_tree(|t| t.wavefront_key().map(<[u8]>::to_vec)).unwrap().unwrap();
    let behind = oracle.range(..wavefront.clone()).next_back().map(|(k, _)| k.clone()).unwrap();
    let beyond = oracle.range(wavefront.clone()..).nth(3).map(|(k, _)| k.clone()).unwrap();
    assert!(db.delete(&behind).unwrap());
    oracle.remove(&behind);
    make_room(&db);
    db.put(&beyond, b"new").unwrap();
    oracle.insert(beyond.clone(), b"new".to_vec());
    make_room(&db);
    db.put(&key(1_000_001), b"fresh").unwrap();
    oracle.insert(key(1_000_001).to_vec(), b"fresh".to_vec());
    assert_eq!(db.get(&behind).unwrap(), None);
    assert_eq!(db.get(&beyond).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(all(&db), oracle);
    // More stages, then the end: everything still there, invariants hold.
    db.step_merge();
    assert_eq!(all(&db), oracle);
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    assert_eq!(all(&db), oracle);
    assert_eq!(db.with_tree(|t| t.counters().live_keys()).unwrap(), oracle.len() as u64);
}

#[test]
fn a_waiting_writer_gets_the_room_m_delete_frees_before_the_merge_ends() {
    let storage = Arc::new(MemoryStorage::new());
    let (db, _) = tree_with_a_held_merge(storage, 600);
    let db = Arc::new(db);
    let mut i = 1_000_000u64;
    while !db.with_tree(Tree::top_is_full).unwrap() {
        db.put(&key(i), b"v").unwrap();
        i += 1;
    }
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || db.put(&key(i), b"last").unwrap())
    };
    // Lookups complete while the writer waits.
    assert_eq!(db.get(&key(4)).unwrap().as_deref(), Some(&2u64.to_le_bytes()[..]));
    // One stage at a time: its m-delete frees L_0^old entries, which admits the writer long
    // before the merge is over.
    let mut stages = 0;
    while !writer.is_finished() {
        assert!(db.with_tree(Tree::merge_in_progress).unwrap(), "the merge ended first");
        db.step_merge();
        stages += 1;
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(stages < 10_000, "the writer never got in");
    }
    writer.join().unwrap();
    assert!(db.with_tree(Tree::merge_in_progress).unwrap(), "admitted only after the merge");
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    assert_eq!(db.get(&key(i)).unwrap().as_deref(), Some(&b"last"[..]));
}

/// Block-wise movement frees old blocks during the merge (volatile tree): in the middle of a
/// merge the level files hold at most a few blocks more than before it, never a copy of
/// the merged levels.
#[test]
fn old_blocks_are_freed_during_the_merge() {
    let storage = Arc::new(MemoryStorage::new());
    let (db, _) = tree_with_a_held_merge(storage.clone(), 2000);
    let stats =
        |db: &FdTree| db.with_tree(|t| (t.level_blocks(), t.reclaimed_old_blocks())).unwrap();
    let mut max_reclaimed = 0;
    while db.with_tree(Tree::merge_in_progress).unwrap() {
        // (I7) between any two stages.
        db.with_tree(Tree::verify_wavefront).unwrap().unwrap();
        db.step_merge();
        max_reclaimed = max_reclaimed.max(stats(&db).1);
    }
    assert!(max_reclaimed > 10, "only {max_reclaimed} old blocks reclaimed during the merge");
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    // Nothing of the old levels is left behind.
    let files = storage
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "lvl"))
        .count();
    let levels = db.with_tree(|t| t.level_blocks().len()).unwrap();
    assert_eq!(files, levels);
}

/// Lookups during a merge still read at most one block per level they pass (Algorithm 2,
/// on either side of the wavefront).
#[test]
fn lookups_during_a_merge_read_one_block_per_level() {
    let storage = Arc::new(MemoryStorage::new());
    let (db, oracle) = tree_with_a_held_merge(storage.clone(), 1500);
    for _ in 0..10 {
        db.step_merge();
    }
    let (behind, beyond) = db.with_tree(Tree::lookup_paths_levels).unwrap();
    assert!(beyond > 0, "the merge is in progress");
    let levels_max = behind.max(beyond) as u64;
    for (k, _) in oracle.iter().step_by(37) {
        let before = storage.io_stats();
        db.get(k).unwrap();
        let reads = storage.io_stats().since(&before).reads();
        assert!(reads <= levels_max, "{reads} reads for one lookup ({levels_max} levels)");
    }
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
}

/// Space (section 4.5): block-wise movement frees each old block during the merge, so the
/// level files never hold much more than before the merge: `O(h)` blocks, not a copy of the
/// merged levels (FD+DS needs that copy). Volatile tree over the memory backend, which frees
/// whole 4 KiB pages, so 4 KiB blocks.
#[test]
fn disk_space_during_a_full_merge_stays_near_the_steady_state() {
    disk_space_during_a_full_merge(false);
}

/// The same for a persistent tree: old blocks are freed after the progress commit that
/// covers their entries (Remark A.6), every 4 reclaimed blocks here.
#[test]
fn disk_space_during_a_full_merge_stays_near_the_steady_state_persistent() {
    disk_space_during_a_full_merge(true);
}

fn disk_space_during_a_full_merge(persistent: bool) {
    let options = FdTreeOptions {
        memory_budget_bytes: 16 << 10,
        block_bytes: 4096,
        size_ratio: 4,
        merge_commit_blocks: 4,
        durability: lamina_core::Durability::None,
        ..tiny()
    };
    let storage = Arc::new(MemoryStorage::new());
    let allocated = |storage: &MemoryStorage| -> u64 {
        storage
            .list()
            .unwrap()
            .into_iter()
            .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "lvl"))
            .map(|n| {
                let f = storage.open(&n, lamina_storage::OpenMode::Existing).unwrap();
                f.allocated_bytes().unwrap()
            })
            .sum()
    };
    let db = FdTree::with_storage(storage.clone(), &options, persistent).unwrap();
    for i in 0..20_000u64 {
        db.put(&key(i * 2), &i.to_le_bytes()).unwrap();
    }
    db.wait_for_merges().unwrap();
    let steady = allocated(&storage);
    // An underflow: a full merge over every level, held after each stage.
    db.hold_merges(true);
    let mut batch = lamina_core::WriteBatch::new();
    for i in (0..20_000u64).filter(|i| i % 5 < 2) {
        batch.delete(key(i * 2).to_vec());
    }
    db.write_batch(&batch).unwrap();
    db.wait_merge_held();
    let mut peak = 0;
    let mut stages = 0;
    while db.with_tree(Tree::merge_in_progress).unwrap() {
        peak = peak.max(allocated(&storage));
        db.step_merge();
        stages += 1;
    }
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    let h = db.with_tree(|t| t.materialized_labels().len()).unwrap() as u64;
    assert!(stages > 20, "{stages} stages");
    // Slack: per level one unsynced tail and one head, plus the blocks awaiting a commit.
    let slack_blocks = 4 * (h + 2) + if persistent { 2 * 4 } else { 0 };
    assert!(
        peak <= steady + slack_blocks * 4096,
        "peak {peak} bytes vs steady {steady} (h = {h}, {stages} stages)"
    );
    db.verify().unwrap();
}

/// Remark A.6: a crash in the middle of a merge is followed by a resumed merge, not a redone
/// one: recovery rebuilds the wavefront, the old levels from their first needed block (the
/// blocks freed before the crash are gone) and the new levels written so far; then the
/// merge completes and every acknowledged write is there.
#[test]
fn a_crash_in_the_middle_of_a_merge_resumes_it() {
    crash_in_the_middle_of_a_merge(FcMode::Fc);
}

/// The on-disk format is shared by the schemes: a directory left with an FD+FC merge in
/// progress, opened as FD+XM, finishes that merge while it opens.
#[test]
fn a_merge_left_in_progress_is_finished_by_another_scheme() {
    crash_in_the_middle_of_a_merge(FcMode::Xm);
}

fn crash_in_the_middle_of_a_merge(reopen_as: FcMode) {
    use lamina_storage::{FaultPlan, FaultyStorage};
    let options = FdTreeOptions { merge_commit_blocks: 1, ..tiny() };
    let storage = FaultyStorage::in_memory(FaultPlan::none());
    let db = FdTree::open(Arc::new(storage.clone()), &options).unwrap();
    let mut oracle = BTreeMap::new();
    for i in 0..1500u64 {
        db.put(&key(i * 2), &i.to_le_bytes()).unwrap();
        oracle.insert(key(i * 2).to_vec(), i.to_le_bytes().to_vec());
    }
    db.wait_for_merges().unwrap();
    db.hold_merges(true);
    let mut batch = lamina_core::WriteBatch::new();
    for i in (0..1500u64).filter(|i| i % 5 < 2) {
        batch.delete(key(i * 2).to_vec());
        oracle.remove(key(i * 2).as_slice());
    }
    db.write_batch(&batch).unwrap();
    db.wait_merge_held();
    for _ in 0..20 {
        db.step_merge();
    }
    let wavefront = db.with_tree(|t| t.wavefront_key().map(<[u8]>::to_vec)).unwrap().unwrap();
    assert!(!wavefront.is_empty());
    storage.crash().unwrap();
    db.hold_merges(false);
    drop(db);
    let recovered = storage.reopen_after_crash().unwrap();
    // Recovery alone (no merge thread): the merge is in progress at a committed wavefront.
    let params = options.params().unwrap();
    let shared: Arc<dyn Storage> = Arc::new(recovered.clone());
    let store = lamina_fdtree::store::BlockStore::new(shared.clone(), &params);
    let tree = Tree::recover(params, store).unwrap();
    let resumed_at = tree.wavefront_key().map(<[u8]>::to_vec).expect("a merge to resume");
    assert!(!resumed_at.is_empty() && resumed_at <= wavefront, "{resumed_at:?} vs {wavefront:?}");
    assert!(tree.reclaimed_old_blocks() > 0, "old blocks freed before the crash");
    drop(tree);
    let db = FdTree::open(shared, &FdTreeOptions { mode: reopen_as, ..options }).unwrap();
    db.wait_for_merges().unwrap();
    assert!(!db.with_tree(Tree::merge_in_progress).unwrap());
    db.verify().unwrap();
    assert_eq!(all(&db), oracle);
    db.close().unwrap();
}
