//! FD+FC (section 4): the merge thread is held after a stage of merge-execute, so the tree is
//! observed with the wavefront in the middle of the keys: lookups on both sides of it, scans
//! across it, modifications into `L_0^new`, old blocks already reclaimed (Remark A.5), and
//! writers that are never held up by the merge (all of `L_0`'s memory serves `L_0^new`,
//! `flush.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{KeyRange, OrderedIndex};
use lamina_fdtree::{
    FcMode, FdTree, FdTreeOptions, RUNS_PACE_FLOOR, RUNS_PACE_SPAN, Tree, runs_allowed,
};
use lamina_storage::{MemoryStorage, Storage};

fn tiny() -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 2048,
        block_bytes: 512,
        segment_bytes: 512,
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

fn all(db: &FdTree) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.scan(&KeyRange::all(), 1 << 20).unwrap().into_iter().collect()
}

/// Asserts that the whole content is `oracle` (with a short message if it is not).
fn assert_content(db: &FdTree, oracle: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let got = all(db);
    if &got != oracle {
        let missing = oracle.keys().filter(|k| !got.contains_key(*k)).count();
        let extra = got.keys().filter(|k| !oracle.contains_key(*k)).count();
        let first = oracle.keys().find(|k| !got.contains_key(*k));
        panic!(
            "content differs: {} keys vs {} expected, {missing} missing (first {first:?}), \
             {extra} extra",
            got.len(),
            oracle.len()
        );
    }
}

/// Grows a tree of even keys, then deletes 40% of them in one batch and writes it out as a
/// run, which violates (I6) and starts a full merge (underflow, section 2.2) over every
/// level; holds it after its first stage.
fn tree_with_a_held_merge(db: FdTree, evens: u64) -> (FdTree, BTreeMap<Vec<u8>, Vec<u8>>) {
    let mut oracle = BTreeMap::new();
    for i in 0..evens {
        db.put(&key(i * 2), &i.to_le_bytes()).unwrap();
        oracle.insert(key(i * 2).to_vec(), i.to_le_bytes().to_vec());
    }
    db.flush().unwrap();
    db.wait_for_merges().unwrap();
    assert!(db.with_tree(|t| t.materialized_labels().len()).unwrap() >= 3, "a deep tree");
    db.hold_merges(true);
    let mut batch = lamina_core::WriteBatch::new();
    for i in (0..evens).filter(|i| i % 5 < 2) {
        batch.delete(key(i * 2).to_vec());
        oracle.remove(key(i * 2).as_slice());
    }
    db.write_batch(&batch).unwrap();
    db.flush().unwrap();
    db.wait_merge_held();
    assert!(db.with_tree(Tree::merge_in_progress).unwrap());
    (db, oracle)
}

fn scan_restarts(db: &FdTree) -> u64 {
    db.stats().extra.iter().find(|(name, _)| *name == "scan_restarts").map_or(0, |(_, v)| *v)
}

/// A scan does not wait for the merge (it used to hold the merge's stage gate): when the
/// merge reclaims blocks the scan's views still name, the scan finds them reclaimed under
/// their latches, starts again after the last pair it has with the moved wavefront, and
/// returns exactly the content, at every point of the merge.
#[test]
fn a_scan_whose_blocks_a_merge_reclaims_starts_again_and_is_exact() {
    let (db, oracle) = tree_with_a_held_merge(volatile(), 3000);
    let expect: Vec<(Vec<u8>, Vec<u8>)> = oracle.into_iter().collect();
    let mut restarted = 0;
    for round in 0..200 {
        if !db.with_tree(Tree::merge_in_progress).unwrap() {
            break;
        }
        let before = scan_restarts(&db);
        let got = db
            .scan_with_pause(&KeyRange::all(), 1 << 20, || {
                for _ in 0..3 {
                    db.step_merge(); // runs one stage and returns at the next hold point
                }
            })
            .unwrap();
        assert!(got == expect, "round {round}: {} pairs, {} expected", got.len(), expect.len());
        restarted += scan_restarts(&db) - before;
    }
    assert!(restarted > 0, "no scan found a block reclaimed under it");
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    assert_eq!(db.scan(&KeyRange::all(), 1 << 20).unwrap(), expect);
}

fn volatile() -> FdTree {
    FdTree::with_storage(Arc::new(MemoryStorage::new()), &tiny(), false).unwrap()
}

#[test]
fn lookups_scans_and_writes_on_both_sides_of_the_wavefront() {
    let (db, mut oracle) = tree_with_a_held_merge(volatile(), 600);
    // Some stages in: the wavefront is inside the key space and old blocks are gone (it
    // moves as the data level's writes land on disk, a batch of blocks at a time).
    for stage in 0.. {
        db.step_merge();
        db.with_tree(Tree::verify_wavefront).unwrap().unwrap();
        if db.with_tree(Tree::reclaimed_old_blocks).unwrap() > 0 && stage >= 12 {
            break;
        }
        assert!(stage < 1000, "the wavefront never moved");
    }
    let wavefront = wavefront(&db).expect("the merge is in progress").expect("left -infinity");
    assert!(!wavefront.is_empty() && wavefront.as_slice() < key(1000).as_slice(), "{wavefront:?}");
    assert!(db.with_tree(Tree::reclaimed_old_blocks).unwrap() > 0, "m-delete reclaimed nothing");
    // Every key is found, behind the wavefront (new levels) and beyond it (old levels).
    for (k, v) in &oracle {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {k:?}");
    }
    assert_eq!(db.get(&key(5_000_001)).unwrap(), None);
    // Scans across the wavefront, whole and in pieces.
    assert_content(&db, &oracle);
    let from = KeyRange::new(wavefront.clone()..);
    let expect: Vec<_> = oracle.range(wavefront.clone()..).take(7).collect();
    let got = db.scan(&from, 7).unwrap();
    assert_eq!(got.iter().map(|(k, v)| (k, v)).collect::<Vec<_>>(), expect);
    // Modifications go to L_0^new on both sides of the wavefront.
    let behind = oracle.range(..wavefront.clone()).next_back().map(|(k, _)| k.clone()).unwrap();
    let beyond = oracle.range(wavefront.clone()..).nth(3).map(|(k, _)| k.clone()).unwrap();
    assert!(db.delete(&behind).unwrap());
    oracle.remove(&behind);
    db.put(&beyond, b"new").unwrap();
    oracle.insert(beyond.clone(), b"new".to_vec());
    db.put(&key(1_000_001), b"fresh").unwrap();
    oracle.insert(key(1_000_001).to_vec(), b"fresh".to_vec());
    assert_eq!(db.get(&behind).unwrap(), None);
    assert_eq!(db.get(&beyond).unwrap().as_deref(), Some(&b"new"[..]));
    assert_content(&db, &oracle);
    // Written out as a run of L_0^new while the merge is still held.
    db.flush().unwrap();
    assert!(db.with_tree(Tree::merge_in_progress).unwrap());
    assert_content(&db, &oracle);
    db.step_merge();
    assert_content(&db, &oracle);
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    assert_content(&db, &oracle);
}

/// Writers never wait for a merge up to `RUNS_PACE_FLOOR` runs: with the merge held for
/// good, they write many memtables' worth, which go to disk as runs of `L_0^new`.
/// The empty key is a user key, and `-infinity` is not: it is found, and scanned first, at
/// every stage of a merge (the wavefront starts below it and then passes it).
#[test]
fn the_empty_key_is_found_at_every_stage_of_a_merge() {
    let db = volatile();
    db.put(b"", b"empty").unwrap();
    let (db, mut oracle) = tree_with_a_held_merge(db, 600);
    oracle.insert(Vec::new(), b"empty".to_vec());
    for stage in 0..1000 {
        db.with_tree(Tree::verify_wavefront).unwrap().unwrap();
        assert_eq!(db.get(b"").unwrap().as_deref(), Some(&b"empty"[..]), "stage {stage}");
        let first = db.scan(&KeyRange::all(), 1).unwrap();
        assert_eq!(first, [(Vec::new(), b"empty".to_vec())], "stage {stage}");
        if stage % 50 == 0 {
            assert_content(&db, &oracle);
        }
        db.step_merge();
        if !db.with_tree(Tree::merge_in_progress).unwrap() {
            break;
        }
    }
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    assert!(db.delete(b"").unwrap());
    oracle.remove(&Vec::new());
    assert_content(&db, &oracle);
}

#[test]
fn writers_are_never_held_up_by_a_merge() {
    let (db, mut oracle) = tree_with_a_held_merge(volatile(), 600);
    let runs_before = db.with_tree(Tree::run_count).unwrap();
    assert!(runs_before + 6 < RUNS_PACE_FLOOR);
    let mut i = 0u64;
    while db.with_tree(Tree::run_count).unwrap() < runs_before + 6 {
        assert!(i < 20_000, "memtables were not written out as runs");
        db.put(&key(1_000_000 + i), b"v").unwrap();
        oracle.insert(key(1_000_000 + i).to_vec(), b"v".to_vec());
        i += 1;
    }
    assert!(db.with_tree(Tree::merge_in_progress).unwrap(), "the merge is still held");
    assert_content(&db, &oracle);
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    assert_content(&db, &oracle);
}

/// Beyond `RUNS_PACE_FLOOR` runs, runs are written only as fast as the merge progresses
/// (`engine/pacing.rs`): with the merge held, a writer ends up waiting and `L_0^new` stays
/// at the floor; released, the merge lets the writer finish.
#[test]
fn runs_beyond_the_floor_wait_for_the_merge() {
    let (db, mut oracle) = tree_with_a_held_merge(volatile(), 600);
    let db = Arc::new(db);
    let writes = 20_000u64;
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..writes {
                db.put(&key(1_000_000 + i), b"v").unwrap();
            }
        })
    };
    // The writer is held up: the allowance at the held merge's progress is reached and
    // stays the limit.
    let progress = db.with_tree(Tree::fc_progress).unwrap();
    let allowed = runs_allowed(progress);
    assert!(progress.is_some() && allowed < RUNS_PACE_FLOOR + RUNS_PACE_SPAN, "{progress:?}");
    let mut stable = 0;
    let mut polls = 0;
    while stable < 50 {
        polls += 1;
        assert!(polls < 20_000, "L_0^new never reached its allowance of {allowed} runs");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let runs = db.with_tree(Tree::run_count).unwrap();
        assert!(runs <= allowed, "{runs} runs with the merge held ({allowed} allowed)");
        assert!(!writer.is_finished(), "the writer was never held up");
        stable = if runs == allowed { stable + 1 } else { 0 };
    }
    assert!(db.with_tree(Tree::merge_in_progress).unwrap(), "the merge is still held");
    db.hold_merges(false);
    writer.join().unwrap();
    for i in 0..writes {
        oracle.insert(key(1_000_000 + i).to_vec(), b"v".to_vec());
    }
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    assert_content(&db, &oracle);
    let paced = db.stats().extra.iter().find(|(k, _)| *k == "runs_paced").map(|(_, v)| *v);
    assert!(paced.unwrap() > 0);
}

/// Block-wise movement frees old blocks during the merge (volatile tree), and nothing of the
/// old levels is left after it.
#[test]
fn old_blocks_are_freed_during_the_merge() {
    let storage = Arc::new(MemoryStorage::new());
    let db = FdTree::with_storage(storage.clone(), &tiny(), false).unwrap();
    let (db, _) = tree_with_a_held_merge(db, 2000);
    let mut max_reclaimed = 0;
    while db.with_tree(Tree::merge_in_progress).unwrap() {
        // (I7) between any two stages.
        db.with_tree(Tree::verify_wavefront).unwrap().unwrap();
        db.step_merge();
        max_reclaimed = max_reclaimed.max(db.with_tree(Tree::reclaimed_old_blocks).unwrap());
    }
    assert!(max_reclaimed > 10, "only {max_reclaimed} old blocks reclaimed during the merge");
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    let files = storage
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "lvl"))
        .count();
    let expected = db.with_tree(|t| t.level_blocks().len() + t.run_count()).unwrap();
    assert_eq!(files, expected);
}

/// Lookups during a merge read at most one segment per level and run they pass, and none
/// of those whose Bloom filter rules the key out.
#[test]
fn lookups_during_a_merge_read_one_segment_per_level() {
    let storage = Arc::new(MemoryStorage::new());
    let db = FdTree::with_storage(storage.clone(), &tiny(), false).unwrap();
    let (db, oracle) = tree_with_a_held_merge(db, 1500);
    for _ in 0..10 {
        db.step_merge();
    }
    let (behind, beyond) = db.with_tree(Tree::lookup_paths_levels).unwrap();
    assert!(beyond > 0, "the merge is in progress");
    let runs = db.with_tree(Tree::run_count).unwrap();
    let parts_max = (behind.max(beyond) + runs + 1) as u64; // + L_0^old's run
    let mut reads = 0;
    let mut lookups = 0;
    for (k, _) in oracle.iter().step_by(7) {
        let before = storage.io_stats();
        db.get(k).unwrap();
        let r = storage.io_stats().since(&before).reads();
        assert!(r <= parts_max, "{r} reads for one lookup ({parts_max} levels and runs)");
        reads += r;
        lookups += 1;
    }
    // Present keys: one read each, but for the filters' false positives.
    assert!(reads <= lookups + lookups / 5, "{reads} reads for {lookups} lookups");
    // Absent keys: (almost) no read at all.
    let before = storage.io_stats();
    for i in 0..500u64 {
        db.get(&key(10_000_001 + 2 * i)).unwrap();
    }
    let absent_reads = storage.io_stats().since(&before).reads();
    assert!(absent_reads <= 50, "{absent_reads} reads for 500 absent keys");
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
        segment_bytes: 1024,
        size_ratio: 4,
        merge_commit_bytes: 4 * 4096,
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
    fill(&db);
    let steady = allocated(&storage);
    hold_an_underflow_merge(&db);
    let with_run = allocated(&storage);
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
    // Slack: per level one unwritten tail and one head, the data level's write batch, and
    // the blocks awaiting a commit.
    let slack_blocks = 4 * (h + 2) + 8 + if persistent { 2 * 4 } else { 0 };
    assert!(
        peak <= with_run + slack_blocks * 4096,
        "peak {peak} bytes vs steady {steady} / {with_run} with the run (h = {h}, {stages} stages)"
    );
    db.verify().unwrap();
}

/// 20,000 puts of even keys, with every merge done.
fn fill(db: &FdTree) {
    for i in 0..20_000u64 {
        db.put(&key(i * 2), &i.to_le_bytes()).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_merges().unwrap();
}

/// Deletes 40% of [`fill`]'s keys: an underflow, so a full merge over every level, held
/// after each stage (it has started when this returns).
fn hold_an_underflow_merge(db: &FdTree) {
    db.hold_merges(true);
    let mut batch = lamina_core::WriteBatch::new();
    for i in (0..20_000u64).filter(|i| i % 5 < 2) {
        batch.delete(key(i * 2).to_vec());
    }
    db.write_batch(&batch).unwrap();
    db.flush().unwrap();
    db.wait_merge_held();
}

/// A persistent tree frees the old blocks a progress commit covers with one punch per run
/// of consecutive blocks of a file, not one per block: a punch is a synchronous discard on a
/// `discard`-mounted file system, and one per 32 KiB block took the merge thread 16 s of a
/// 10M-insert run's 28 s (`docs/results/scale.md`). Counted through the storage's I/O
/// statistics, which are deterministic.
#[test]
fn a_progress_commit_punches_each_run_of_reclaimed_blocks_at_once() {
    let block_bytes: u64 = 4096;
    let commit_blocks: u64 = 8;
    let options = FdTreeOptions {
        memory_budget_bytes: 16 << 10,
        block_bytes: block_bytes as u32,
        segment_bytes: 1024,
        size_ratio: 4,
        merge_commit_bytes: commit_blocks * block_bytes,
        durability: lamina_core::Durability::None,
        ..tiny()
    };
    let storage = Arc::new(MemoryStorage::new());
    let db = FdTree::with_storage(storage.clone(), &options, true).unwrap();
    fill(&db);
    hold_an_underflow_merge(&db);
    let sources = db.with_tree(|t| t.materialized_labels().len() + t.run_count()).unwrap() as u64;
    let before = storage.io_stats();
    let mut stages = 0;
    while db.with_tree(Tree::merge_in_progress).unwrap() {
        db.step_merge();
        stages += 1;
    }
    let during = storage.io_stats().since(&before);
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    let blocks_punched = during.bytes_punched / block_bytes;
    assert!(blocks_punched >= 4 * commit_blocks, "{blocks_punched} blocks punched");
    // Each commit punches at most one range per source; a commit comes once `commit_blocks`
    // are reclaimed, at a stage boundary.
    let commits = (blocks_punched / commit_blocks).min(stages);
    assert!(
        during.punches <= commits * sources,
        "{} punches for {blocks_punched} blocks ({commits} commits, {sources} sources)",
        during.punches
    );
}

/// The wavefront of the merge in progress (`None`: no merge; `Some(None)`: `-infinity`).
#[allow(clippy::option_option)] // the shape of `Tree::wavefront_key`, owned
fn wavefront(db: &FdTree) -> Option<Option<Vec<u8>>> {
    db.with_tree(|t| t.wavefront_key().map(|w| w.map(<[u8]>::to_vec))).unwrap()
}

/// The tree recovery rebuilds from `storage` alone (no merge thread).
fn recovered(storage: Arc<dyn Storage>, options: &FdTreeOptions) -> Tree {
    let params = options.params().unwrap();
    let store = lamina_fdtree::store::BlockStore::new(storage, &params);
    Tree::recover(params, store, true).unwrap().0
}

/// Reopens `storage`, lets the merge left in progress finish, and checks the tree and its
/// content.
fn reopen_and_finish_the_merge(
    storage: Arc<dyn Storage>,
    options: &FdTreeOptions,
    oracle: &BTreeMap<Vec<u8>, Vec<u8>>,
) {
    let db = FdTree::open(storage, options).unwrap();
    assert_content(&db, oracle);
    db.wait_for_merges().unwrap();
    assert!(!db.with_tree(Tree::merge_in_progress).unwrap());
    db.verify().unwrap();
    assert_content(&db, oracle);
    db.close().unwrap();
}

/// Remark A.6: a crash in the middle of a merge is followed by a resumed merge, not a redone
/// one: recovery rebuilds the wavefront, the old levels and runs from their first needed
/// block (the blocks freed before the crash are gone) and the new levels written so far;
/// then the merge completes and every acknowledged write is there.
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
    let options = FdTreeOptions { merge_commit_bytes: 512, ..tiny() };
    let storage = FaultyStorage::in_memory(FaultPlan::none());
    let db = FdTree::open(Arc::new(storage.clone()), &options).unwrap();
    let (db, oracle) = tree_with_a_held_merge(db, 1500);
    for _ in 0..20 {
        db.step_merge();
    }
    let wavefront = wavefront(&db).expect("the merge is in progress").expect("left -infinity");
    assert!(!wavefront.is_empty());
    storage.crash().unwrap();
    db.hold_merges(false);
    drop(db);
    let shared: Arc<dyn Storage> = Arc::new(storage.reopen_after_crash().unwrap());
    // Recovery alone (no merge thread): the merge is in progress at a committed wavefront.
    let tree = recovered(shared.clone(), &options);
    let resumed_at = tree.wavefront_key().expect("a merge to resume").map(<[u8]>::to_vec);
    let resumed_at = resumed_at.expect("a committed wavefront past -infinity");
    assert!(!resumed_at.is_empty() && resumed_at <= wavefront, "{resumed_at:?} vs {wavefront:?}");
    assert!(tree.reclaimed_old_blocks() > 0, "old blocks freed before the crash");
    drop(tree);
    reopen_and_finish_the_merge(shared, &FdTreeOptions { mode: reopen_as, ..options }, &oracle);
}

/// Closing in the middle of a merge does not run it to its end: merge-execute stops at the
/// next stage boundary with a progress record committed there (Remark A.6), and the
/// reopened tree resumes the merge from it and completes it with every write there.
#[test]
fn a_close_in_the_middle_of_a_merge_leaves_it_to_the_reopened_tree() {
    // No progress record of the merge's own: the one recovery finds is the close's.
    let options = FdTreeOptions { merge_commit_bytes: 1 << 40, ..tiny() };
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = FdTree::open(storage.clone(), &options).unwrap();
    let (db, mut oracle) = tree_with_a_held_merge(db, 1500);
    for _ in 0..20 {
        db.step_merge();
    }
    let wavefront = wavefront(&db).expect("the merge is in progress").expect("left -infinity");
    // Writes after the pause point, in the memtable at close.
    for i in 0..10u64 {
        db.put(&key(i * 2 + 1), b"odd").unwrap();
        oracle.insert(key(i * 2 + 1).to_vec(), b"odd".to_vec());
    }
    db.close().unwrap();
    let tree = recovered(storage.clone(), &options);
    let paused_at = tree.wavefront_key().expect("the merge left in progress by close");
    assert_eq!(paused_at, Some(wavefront.as_slice()), "paused where the merge was held");
    drop(tree);
    reopen_and_finish_the_merge(storage, &options, &oracle);
}

/// The index files in `storage`.
fn index_files(storage: &Arc<dyn Storage>) -> std::collections::BTreeSet<String> {
    storage
        .list()
        .unwrap()
        .into_iter()
        .filter(|name| std::path::Path::new(name).extension().is_some_and(|e| e == "idx"))
        .collect()
}

/// Blocks read by a recovery of `storage`, and the wavefront of the merge in progress it
/// recovers (`None`: at `-infinity`).
fn recovery_reads(storage: &Arc<dyn Storage>, options: &FdTreeOptions) -> (u64, Option<Vec<u8>>) {
    let before = storage.io_stats();
    let tree = recovered(storage.clone(), options);
    let blocks_read = storage.io_stats().since(&before).blocks_read;
    let wavefront = tree.wavefront_key().expect("a merge in progress");
    (blocks_read, wavefront.map(<[u8]>::to_vec))
}

/// A `close` that pauses a merge saves each new level's index of its written blocks, so the
/// reopened tree continues the levels without reading those blocks (at 50M keys, reading
/// them made an open after a close take 5-13 s). A saved index that is damaged or missing
/// is passed over and rebuilt from the blocks: the same merge resumes either way.
#[test]
fn a_paused_merge_resumes_without_reading_what_it_wrote() {
    let options = FdTreeOptions { merge_commit_bytes: 1 << 40, ..tiny() };
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = FdTree::open(storage.clone(), &options).unwrap();
    let (db, oracle) = tree_with_a_held_merge(db, 1500);
    for _ in 0..40 {
        db.step_merge();
    }
    let indexes_before = index_files(&storage);
    db.close().unwrap();
    let saved: Vec<String> = index_files(&storage).difference(&indexes_before).cloned().collect();
    assert!(!saved.is_empty(), "the pause saved no index");
    // The new levels' written blocks (the pause wrote every finished block, and no more).
    let written_blocks: u64 = saved
        .iter()
        .map(|idx| {
            let level = idx.replace(".idx", ".lvl");
            storage.open(&level, lamina_storage::OpenMode::Existing).unwrap().len().unwrap() / 512
        })
        .sum();
    assert!(written_blocks >= 8, "only {written_blocks} blocks written");

    let (fast_reads, fast_wavefront) = recovery_reads(&storage, &options);
    assert!(fast_wavefront.is_some(), "the wavefront left -infinity");
    // Damaged: passed over.
    let damaged = &saved[saved.len() - 1];
    let mut bytes = storage.read_all(damaged).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    let file = storage.open(damaged, lamina_storage::OpenMode::Existing).unwrap();
    file.write_all_at(0, &bytes).unwrap();
    drop(file);
    let (damaged_reads, damaged_wavefront) = recovery_reads(&storage, &options);
    assert_eq!(damaged_wavefront, fast_wavefront);
    // Missing: rebuilt.
    for name in &saved {
        storage.remove(name).unwrap();
    }
    let (slow_reads, slow_wavefront) = recovery_reads(&storage, &options);
    assert_eq!(slow_wavefront, fast_wavefront);
    assert!(
        fast_reads + written_blocks - saved.len() as u64 <= slow_reads,
        "recovery read {fast_reads} blocks with the saved indexes ({saved:?}), {slow_reads} without; \
         {written_blocks} were written"
    );
    assert!(fast_reads < damaged_reads, "the damaged index was used");
    reopen_and_finish_the_merge(storage.clone(), &options, &oracle);

    // Once more with the saved indexes in place: the reopened tree finds and finishes the
    // merge (and `verify` checks the levels it continued, filters and counts included).
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = FdTree::open(storage.clone(), &options).unwrap();
    let (db, oracle) = tree_with_a_held_merge(db, 1500);
    for _ in 0..40 {
        db.step_merge();
    }
    db.close().unwrap();
    reopen_and_finish_the_merge(storage, &options, &oracle);
}

/// `lamina verify` checks a store over an overlay that keeps writes in memory: a merge in
/// progress (one `close` paused, or a crash interrupted, then resumed by the open) is
/// checked between two stages and left there, not run to its end in that memory.
#[test]
fn a_merge_in_progress_is_verified_where_it_stands() {
    let (db, oracle) = tree_with_a_held_merge(volatile(), 1500);
    for _ in 0..5 {
        db.step_merge();
    }
    let held_at = wavefront(&db);
    db.verify_as_it_stands().unwrap();
    let after = wavefront(&db);
    assert!(after.is_some(), "the merge was run to its end");
    assert_eq!(after, held_at, "the merge moved on");
    assert_content(&db, &oracle);
    db.hold_merges(false);
    db.wait_for_merges().unwrap();
    db.verify().unwrap();
    assert_content(&db, &oracle);
}
