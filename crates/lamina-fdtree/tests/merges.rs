//! One test per merge case of section 2.3 (overflow into the next level, multi-level merge
//! with skipped levels, full merge growing the tree, shadowing-heavy merge shrinking it,
//! underflow-triggered merge), each checking `verify()` after every merge and the content
//! against a `BTreeMap` oracle; plus the lookup bounds, the segment cache, corruption and
//! reopening. The merges are FD+XM's (synchronous, section 3), so every merge is observed
//! right after the write that caused it; FD+FC's are in `fc_merges.rs`.
//!
//! Ported from the v1 tests, adapted to v2 (issue 22):
//! - `L_0`'s memtable is written out as a run before a merge can take it (`flush.rs`); a
//!   merge takes all runs. New: `merges_take_runs_and_small_runs_compact_into_one` (eight
//!   small runs make a merge due, `merge::RUNS_MERGE`, and a full merge whose data fits
//!   `kappa_0` leaves it as `L_0`'s only run).
//! - Puts are blind: an insert shadows the older entries of its key, which merges drop
//!   (`MergeReport::shadowed` replaces v1's `cancellations`), and the counters are upper
//!   bounds (Remark A.1's U-hat). `updates_keep_counters_exact` became
//!   `updates_keep_counters_upper_bounds`.
//! - Lookups read at most one segment per level and run, and none where the Bloom filter
//!   rules the key out (v1: one block per level):
//!   `lookups_read_at_most_one_segment_per_level_and_run`, and the new
//!   `absent_keys_cost_no_reads_with_bloom_filters`.
//! - The segment cache replaced the block cache:
//!   `repeated_lookups_are_served_by_the_segment_cache`.
//! - Reopening checks run and index files too (`fd-*.idx`), and segment-size changes are
//!   refused like the other layout options.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{Error, KeyRange, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions, MergeReport, Tree, Trigger};
use lamina_storage::{MemoryStorage, OpenMode, Storage};

/// 512-byte blocks of one segment, 8-byte keys and values, `kappa_0` = 4 blocks (about 17
/// entries each), memtables of about 11 entries.
fn tiny(gamma: u32) -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 2048,
        block_bytes: 512,
        segment_bytes: 512,
        size_ratio: gamma,
        key_bytes_max: 8,
        value_bytes_max: 8,
        verify_each_merge: true,
        cache_bytes: 0,
        mode: FcMode::Xm,
        ..FdTreeOptions::default()
    }
}

struct Driver {
    db: FdTree,
    oracle: BTreeMap<Vec<u8>, Vec<u8>>,
    reports: Vec<MergeReport>,
    merges: u64,
}

impl Driver {
    fn new(options: &FdTreeOptions) -> Self {
        Driver {
            db: FdTree::volatile(options).unwrap(),
            oracle: BTreeMap::new(),
            reports: Vec::new(),
            merges: 0,
        }
    }

    fn put(&mut self, k: u64, v: u64) {
        let (k, v) = (k.to_be_bytes().to_vec(), v.to_le_bytes().to_vec());
        self.db.put(&k, &v).unwrap();
        self.oracle.insert(k, v);
        self.observe();
    }

    fn delete(&mut self, k: u64) {
        let k = k.to_be_bytes().to_vec();
        let existed = self.db.delete(&k).unwrap();
        assert_eq!(existed, self.oracle.remove(&k).is_some());
        self.observe();
    }

    /// Writes the memtable out as a run and runs the merges that makes due.
    fn flush(&mut self) {
        self.db.flush().unwrap();
        self.observe();
    }

    fn observe(&mut self) {
        let (n, report) = self
            .db
            .with_tree(|t| {
                let c = t.merge_counts();
                (c.overflow + c.underflow, t.last_merge().cloned())
            })
            .unwrap();
        if n != self.merges {
            self.merges = n;
            // verify() already ran after the merge (verify_each_merge).
            self.reports.push(report.unwrap());
        }
    }

    fn check_content(&self) {
        let all = self.db.scan(&KeyRange::all(), 1 << 20).unwrap();
        let expected: Vec<_> = self.oracle.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(all, expected);
        for (k, v) in self.oracle.iter().step_by(7) {
            assert_eq!(self.db.get(k).unwrap().as_ref(), Some(v));
        }
        self.db.verify().unwrap();
    }

    fn height(&self) -> usize {
        self.db.with_tree(Tree::height).unwrap()
    }
}

/// A deterministic permutation of 0..n.
fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

#[test]
fn overflow_merge_into_the_next_level() {
    let mut d = Driver::new(&tiny(4));
    let mut i = 0;
    while d.reports.is_empty() {
        d.put(i, i);
        i += 1;
    }
    // L_0's runs outgrew kappa_0 (distinct keys: nothing shadowed): the first merge is a full
    // merge of L_0 alone into a new L_1 that is too large to stay in L_0.
    let first = &d.reports[0];
    assert_eq!((first.trigger, first.m, first.full), (Trigger::Overflow, 1, true), "{first:?}");
    assert_eq!((first.height_before, first.height_after), (1, 2), "{first:?}");
    assert_eq!(first.shadowed, 0);
    assert_eq!(d.db.with_tree(Tree::run_count).unwrap(), 0, "a merge takes every run");
    // Keep going until an overflow merge that leaves the bottom level alone.
    while !d.reports.iter().any(|r| !r.full) {
        d.put(i * 7919 % 100_003, i);
        i += 1;
    }
    let partial = d.reports.iter().find(|r| !r.full).unwrap();
    assert!(partial.m < partial.height_before - 1, "{partial:?}");
    assert_eq!(partial.trigger, Trigger::Overflow);
    d.check_content();
}

#[test]
fn multi_level_merges_skip_levels() {
    let mut d = Driver::new(&tiny(2));
    for (n, k) in shuffled(3000, 7).into_iter().enumerate() {
        d.put(k, n as u64);
    }
    assert!(d.height() >= 5, "height {}", d.height());
    assert!(d.reports.iter().any(|r| !r.full && r.m >= 2), "no multi-level partial merge");
    assert!(d.reports.iter().any(|r| r.z > 0), "merge-finalize never skipped a level");
    let skipped = d.db.with_tree(|t| t.merge_counts().levels_skipped).unwrap();
    assert!(skipped > 0);
    // Skipped levels are not materialized: some label below the bottom is missing.
    let labels = d.db.with_tree(Tree::materialized_labels).unwrap();
    assert!(labels.len() < d.height(), "no skipped level in {labels:?}");
    d.check_content();
}

#[test]
fn full_merges_grow_the_tree() {
    let mut d = Driver::new(&tiny(4));
    for k in 0..4000 {
        d.put(k * 3, k);
    }
    let grew: Vec<_> =
        d.reports.iter().filter(|r| r.full && r.height_after > r.height_before).collect();
    assert!(grew.len() >= 3, "{} growing merges", grew.len());
    for r in &grew {
        assert!(r.m >= r.height_before, "eq. 2: m >= h when U(h-1) > kappa_(h-1): {r:?}");
        assert!(r.height_after <= r.m + 1, "{r:?}");
    }
    d.check_content();
}

#[test]
fn shadowing_heavy_merges_shrink_the_tree() {
    let mut d = Driver::new(&tiny(2));
    for k in shuffled(2000, 3) {
        d.put(k, k);
    }
    let tall = d.height();
    let before = d.reports.len();
    for k in shuffled(2000, 11).into_iter().take(1950) {
        d.delete(k);
    }
    let after = &d.reports[before..];
    let shrinking: Vec<_> =
        after.iter().filter(|r| r.full && r.height_after < r.height_before).collect();
    assert!(!shrinking.is_empty(), "no merge shrank the tree");
    assert!(shrinking.iter().all(|r| r.shadowed > 0), "{shrinking:?}");
    assert!(d.height() < tall, "height {} not below {tall}", d.height());
    d.check_content();
    // Delete the rest, write the deletes out: the full merge they trigger drops everything,
    // the tree collapses to L_0 with nothing in it, and the counters are exact again.
    for k in 0..2000 {
        d.delete(k);
    }
    d.flush();
    d.check_content();
    assert!(d.oracle.is_empty());
    let c = d.db.with_tree(Tree::counters).unwrap();
    assert_eq!((c.inserts, c.deletes), (0, 0), "{c:?}");
    assert_eq!(d.height(), 1);
}

#[test]
fn underflow_triggers_a_full_merge() {
    let mut d = Driver::new(&tiny(4));
    for k in 0..1500 {
        d.put(k, k);
    }
    d.flush();
    let before = d.reports.len();
    let inserts = d.db.with_tree(|t| t.counters().inserts).unwrap();
    // Deleting keys adds delete entries (the delete looks the key up: only keys that exist
    // get one) until N_nabla > N_delta / 3 over the runs and levels.
    let mut k = 0;
    while !d.reports[before..].iter().any(|r| r.trigger == Trigger::Underflow) {
        d.delete(k);
        k += 2;
        assert!(k < 3000, "no underflow merge");
    }
    let r = d.reports[before..].iter().find(|r| r.trigger == Trigger::Underflow).unwrap();
    assert!(r.full && r.m == r.height_before - 1, "{r:?}");
    assert!(r.shadowed > 0, "{r:?}");
    // (I6) is checked on what merges read, so it fires only after a third of the inserts
    // have delete entries written out as runs.
    assert!(k / 2 > inserts / 3, "underflow fired after only {} deletes", k / 2);
    // The full merge dropped every delete entry that reached it.
    let c = d.db.with_tree(Tree::counters).unwrap();
    assert!(3 * c.deletes <= c.inserts, "{c:?}");
    d.check_content();
}

/// Blind puts: overwrites add insert entries without looking up the old ones, so the
/// counters are upper bounds (Remark A.1's U-hat); merges drop the shadowed entries, so the
/// bound stays within one entry per key per level, run and memtable.
#[test]
fn updates_keep_counters_upper_bounds() {
    let mut d = Driver::new(&tiny(3));
    for round in 0..6 {
        for k in 0..300 {
            d.put(k, k * 10 + round);
        }
        let (c, parts) = d
            .db
            .with_tree(|t| (t.counters(), t.materialized_labels().len() - 1 + t.run_count() + 2))
            .unwrap();
        assert!(c.live_keys() >= 300, "round {round}: {c:?} below the 300 live keys");
        assert!(c.inserts <= 300 * parts as u64, "round {round}: {c:?} over {parts} parts");
    }
    assert!(d.reports.iter().any(|r| r.shadowed > 0), "no merge dropped an overwritten entry");
    d.check_content();
}

/// (I6) after a partial merge: a partial merge drops the inserts that the deletes above them
/// shadow but keeps the deletes (they must still cancel what lies below the merge), so
/// `N_nabla / N_delta` can exceed 1/3 right after it, with `L_0` holding no run. The tree must
/// then merge (section 2.2: an underflow-triggered merge), or `verify()`, which runs after every
/// merge here, reports the violation.
///
/// Failed before the fix: after the partial merge `m = 5` (h = 7, 220 entries shadowed) `verify()` says
/// "(I6) N_nabla 975 > N_delta 2764 / 3" because `Tree::merge_due` returns `None` whenever `L_0`
/// has no run (`merge/mod.rs`: `if self.merge_in_progress() || self.top.runs.is_empty()`), so
/// the underflow waits for the next memtable to be written out.
#[test]

fn an_underflow_left_by_a_partial_merge_is_merged_at_once() {
    let mut d = Driver::new(&tiny(2));
    for k in shuffled(3000, 3) {
        d.put(k, k);
    }
    for k in shuffled(3000, 11).into_iter().take(2950) {
        d.delete(k);
    }
    d.check_content();
}

/// (I3) on `L_0` when no merge is due. `verify()` sizes `L_0` as its runs and its fences
/// (`verify.rs`, `check_sizes`), but a merge becomes due only when the runs alone exceed
/// `kappa_0` (`Tree::merge_due`, `Params::top_capacity_bytes`): with `gamma = 3`, after 4000
/// puts the tree rests with six runs and `L_1`'s fences, and `verify()` says
/// "(I3) B(L_0) = 5 > kappa = 4" (first at the 221st put) although no merge is due. One of
/// the two is wrong (the fences have their own reserve of `L_0`'s memory, `options.rs`).
#[test]

fn a_tree_with_no_merge_due_passes_verify() {
    let mut d = Driver::new(&tiny(3));
    for k in 0..4000 {
        d.put(k * 3, k);
        if k % 20 == 0 {
            assert!(d.db.with_tree(Tree::merge_due).unwrap().is_none());
            d.db.verify().unwrap_or_else(|e| panic!("after {} puts: {e}", k + 1));
        }
    }
    d.check_content();
}

/// `L_0`'s memtable becomes a run before a merge can take it; a merge takes all runs. Small
/// runs (written early, e.g. to bound the log) make a merge due once there are
/// `RUNS_MERGE` of them, and a full merge whose result fits `kappa_0` leaves it in `L_0` as
/// its only run (merge-finalize, `z` = the data level).
#[test]
fn merges_take_runs_and_small_runs_compact_into_one() {
    let options = FdTreeOptions { memory_budget_bytes: 64 << 10, ..tiny(4) };
    let mut d = Driver::new(&options);
    for k in 0..40 {
        d.put(k, k);
    }
    assert_eq!(d.db.with_tree(Tree::run_count).unwrap(), 0, "the memtable is not full");
    assert!(d.reports.is_empty());
    for round in 0..lamina_fdtree::merge::RUNS_MERGE as u64 {
        if round > 0 {
            d.put(round * 1000, round);
            d.put(3, round); // shadows the runs' older entries of key 3
        }
        d.flush();
        if d.reports.is_empty() {
            assert_eq!(d.db.with_tree(Tree::run_count).unwrap(), round as usize + 1);
        }
    }
    assert_eq!(d.reports.len(), 1, "{:?}", d.reports);
    let r = &d.reports[0];
    assert_eq!((r.trigger, r.m, r.full), (Trigger::Overflow, 1, true), "{r:?}");
    assert_eq!((r.height_before, r.height_after, r.z), (1, 1, 1), "{r:?}");
    assert_eq!(r.shadowed, lamina_fdtree::merge::RUNS_MERGE as u64 - 1, "{r:?}");
    assert_eq!(d.db.with_tree(Tree::run_count).unwrap(), 1);
    d.check_content();
}

fn count_reads(storage: &MemoryStorage, f: impl FnOnce()) -> lamina_core::IoStats {
    let before = storage.io_stats();
    f();
    storage.io_stats().since(&before)
}

/// Without filters (every level on the path is read): at most one segment per materialized
/// level and per run, each read no longer than a segment (a quarter of a block here), and
/// a lookup of a key at the bottom reads every level.
#[test]
fn lookups_read_at_most_one_segment_per_level_and_run() {
    let storage = Arc::new(MemoryStorage::new());
    let options = FdTreeOptions {
        verify_each_merge: false,
        block_bytes: 2048,
        memory_budget_bytes: 4 * 2048,
        bloom_bits_per_key: 0,
        ..tiny(2)
    };
    let db = FdTree::with_storage(storage.clone(), &options, false).unwrap();
    let deleted: std::collections::BTreeSet<u64> =
        shuffled(1500, 9).into_iter().take(400).collect();
    for k in shuffled(6000, 5) {
        db.put(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    for &k in &deleted {
        assert!(db.delete(&(k * 4).to_be_bytes()).unwrap());
    }
    db.verify().unwrap();
    let (disk_levels, runs) =
        db.with_tree(|t| (t.materialized_labels().len() - 1, t.run_count())).unwrap();
    assert!(disk_levels >= 2, "{disk_levels} disk levels");
    let parts = (disk_levels + runs) as u64;
    let mut deepest = 0;
    for k in (0..7000u64).step_by(3) {
        let mut got = None;
        let io = count_reads(&storage, || got = Some(db.get(&k.to_be_bytes()).unwrap()));
        assert!(io.reads() <= parts, "lookup of {k} read {} segments", io.reads());
        assert!(io.bytes_read <= io.reads() * 512, "lookup of {k} read {io:?}");
        deepest = deepest.max(io.reads());
        let gone = k % 4 == 0 && deleted.contains(&(k / 4));
        let expected = (k < 6000 && !gone).then(|| k.to_le_bytes().to_vec());
        assert_eq!(got.unwrap(), expected, "key {k}");
    }
    assert!(deepest >= disk_levels as u64, "no lookup reached the bottom ({deepest} reads)");
}

/// With Bloom filters (the default, 10 bits per key), a lookup of a present key reads about
/// one segment (false positives aside), and one of an absent key reads almost nothing.
#[test]
fn absent_keys_cost_no_reads_with_bloom_filters() {
    let storage = Arc::new(MemoryStorage::new());
    let options = FdTreeOptions { verify_each_merge: false, ..tiny(2) };
    let db = FdTree::with_storage(storage.clone(), &options, false).unwrap();
    for k in shuffled(4000, 5) {
        db.put(&(2 * k).to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    let disk_levels = db.with_tree(|t| t.materialized_labels().len() - 1).unwrap();
    assert!(disk_levels >= 3, "{disk_levels} disk levels");
    let present = count_reads(&storage, || {
        for k in 0..1000u64 {
            assert_eq!(db.get(&(2 * k).to_be_bytes()).unwrap(), Some(k.to_le_bytes().to_vec()));
        }
    });
    assert!(present.reads() <= 1000 + 150, "{} reads for 1000 present keys", present.reads());
    let absent = count_reads(&storage, || {
        for k in 0..1000u64 {
            assert_eq!(db.get(&(2 * k + 1).to_be_bytes()).unwrap(), None);
        }
    });
    assert!(absent.reads() <= 100, "{} reads for 1000 absent keys", absent.reads());
}

#[test]
fn repeated_lookups_are_served_by_the_segment_cache() {
    let storage = Arc::new(MemoryStorage::new());
    let options = FdTreeOptions { verify_each_merge: false, cache_bytes: 1 << 20, ..tiny(2) };
    let db = FdTree::with_storage(storage.clone(), &options, false).unwrap();
    for k in shuffled(2000, 5) {
        db.put(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    let keys: Vec<u64> = (0..2000u64).step_by(7).collect();
    for &k in &keys {
        assert_eq!(db.get(&k.to_be_bytes()).unwrap(), Some(k.to_le_bytes().to_vec()));
    }
    // The tree is far smaller than the cache: the second pass reads nothing from storage.
    let io = count_reads(&storage, || {
        for &k in &keys {
            assert_eq!(db.get(&k.to_be_bytes()).unwrap(), Some(k.to_le_bytes().to_vec()));
        }
    });
    assert_eq!(io.reads(), 0);
    let hits = db.with_tree(|t| t.cache_stats().map(|s| s.hits)).unwrap();
    assert!(hits.unwrap() >= keys.len() as u64, "{hits:?}");
}

#[test]
fn corrupt_segments_are_reported_not_served() {
    let storage = Arc::new(MemoryStorage::new());
    let db = FdTree::with_storage(storage.clone(), &tiny(3), false).unwrap();
    for k in 0..500u64 {
        db.put(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    // The largest level file (the bottom level, which holds data; fence-only levels are
    // never read by lookups, their fences are in memory): flip a byte in its first segment.
    let name = storage
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "lvl"))
        .max_by_key(|n| storage.open(n, OpenMode::Existing).unwrap().len().unwrap())
        .unwrap();
    let file = storage.open(&name, OpenMode::Existing).unwrap();
    let mut byte = [0u8; 1];
    file.read_exact_at(40, &mut byte).unwrap();
    file.write_all_at(40, &[byte[0] ^ 0x40]).unwrap();
    let mut saw = false;
    for k in 0..500u64 {
        match db.get(&k.to_be_bytes()) {
            Ok(v) => assert_eq!(v, Some(k.to_le_bytes().to_vec())),
            Err(Error::Corruption { file, .. }) => {
                assert!(file.to_string_lossy().contains(&name), "{file:?}");
                saw = true;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(saw, "no lookup went through the corrupt segment");
    let scanned = db.scan(&KeyRange::all(), 1 << 20);
    assert!(matches!(scanned, Err(Error::Corruption { .. })), "{scanned:?}");
    assert!(db.verify().is_err());
}

#[test]
fn close_and_reopen_keep_the_structure_and_reclaim_space() {
    let storage = Arc::new(MemoryStorage::new());
    let options = tiny(3);
    let db = FdTree::open(storage.clone(), &options).unwrap();
    for k in 0..800u64 {
        db.put(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    for k in (0..800u64).step_by(3) {
        assert!(db.delete(&k.to_be_bytes()).unwrap());
    }
    // Written out, with the merges that makes due (here an underflow), so that close has
    // nothing left to write and reopening merges nothing.
    db.flush().unwrap();
    let labels = db.with_tree(Tree::materialized_labels).unwrap();
    assert!(labels.len() >= 3, "{labels:?}");
    db.close().unwrap();
    let db = FdTree::open(storage.clone(), &options).unwrap();
    db.verify().unwrap();
    assert_eq!(db.with_tree(Tree::materialized_labels).unwrap(), labels);
    let files = storage.list().unwrap();
    let count = |suffix: &str| files.iter().filter(|n| n.ends_with(suffix)).count();
    let parts = db.with_tree(|t| t.materialized_labels().len() - 1 + t.run_count()).unwrap();
    assert_eq!(count(".lvl"), parts, "replaced level files were not reclaimed: {files:?}");
    assert_eq!(count(".idx"), parts, "one index per level and run: {files:?}");
    assert_eq!(count(".fen"), 1, "one fences file: {files:?}");
    assert_eq!(count(".mrg"), 0, "no merge in progress: {files:?}");
    for k in 0..800u64 {
        let expect = (k % 3 != 0).then(|| k.to_le_bytes().to_vec());
        assert_eq!(db.get(&k.to_be_bytes()).unwrap(), expect);
    }
    db.close().unwrap();
    // Options that change the layout are refused, and the refusal changes nothing.
    for other in [
        FdTreeOptions { size_ratio: 2, ..options.clone() },
        FdTreeOptions { block_bytes: 1024, segment_bytes: 512, ..options.clone() },
        FdTreeOptions { block_bytes: 1024, segment_bytes: 1024, ..options.clone() },
        FdTreeOptions { memory_budget_bytes: 4096, ..options.clone() },
        FdTreeOptions { key_bytes_max: 9, ..options.clone() },
    ] {
        let e = FdTree::open(storage.clone(), &other).unwrap_err();
        assert!(matches!(e, Error::Incompatible { .. }), "{other:?}: {e}");
    }
    assert_eq!(storage.list().unwrap().len(), files.len());
    let db = FdTree::open(storage, &options).unwrap();
    db.verify().unwrap();
    assert_eq!(db.scan(&KeyRange::all(), 1 << 20).unwrap().len(), 800 - 267);
}

#[test]
fn limits_below_the_api_are_enforced() {
    let db = FdTree::volatile(&tiny(3)).unwrap();
    assert!(db.put(b"123456789", b"v").unwrap_err().is_invalid_argument());
    assert!(db.put(b"k", b"123456789").unwrap_err().is_invalid_argument());
    assert!(db.delete(b"123456789").unwrap_err().is_invalid_argument());
    assert!(db.get(b"123456789").unwrap_err().is_invalid_argument());
    assert_eq!(db.get(b"k").unwrap(), None);
}
