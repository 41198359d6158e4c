//! One test per merge case of section 2.3 (overflow into the next level, multi-level merge
//! with skipped levels, full merge growing the tree, cancellation-heavy merge shrinking it,
//! underflow-triggered merge), each checking `verify()` after every merge and the content
//! against a `BTreeMap` oracle; plus the one-block-per-level lookup bound and corruption.

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{Error, KeyRange, OrderedIndex};
use lamina_fdtree::{FdTree, FdTreeOptions, MergeReport, Trigger};
use lamina_storage::{MemoryStorage, OpenMode, Storage};

/// 512-byte blocks, 8-byte keys and values, `kappa_0` = 1 block (about 29 entries).
fn tiny(gamma: u32) -> FdTreeOptions {
    FdTreeOptions {
        memory_budget_bytes: 512,
        block_bytes: 512,
        size_ratio: gamma,
        key_bytes_max: 8,
        value_bytes_max: 8,
        verify_each_merge: true,
        // Section 2's merges, synchronous (FD+XM); FD+FC's are in `fc_merges.rs`.
        mode: lamina_fdtree::FcMode::Xm,
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
        self.db.with_tree(lamina_fdtree::Tree::height).unwrap()
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
    let first = &d.reports[0];
    assert_eq!((first.trigger, first.m, first.full), (Trigger::Overflow, 1, true));
    assert_eq!((first.height_before, first.height_after), (1, 2));
    // Keep going until an overflow merge that leaves the bottom level alone.
    while !d.reports.iter().any(|r| !r.full) {
        d.put(i * 7919 % 100_003, i);
        i += 1;
    }
    let partial = d.reports.iter().find(|r| !r.full).unwrap();
    assert!(partial.m < partial.height_before - 1);
    d.check_content();
}

#[test]
fn multi_level_merges_skip_levels() {
    let mut d = Driver::new(&tiny(2));
    for (n, k) in shuffled(1500, 7).into_iter().enumerate() {
        d.put(k, n as u64);
    }
    assert!(d.height() >= 5, "height {}", d.height());
    assert!(d.reports.iter().any(|r| !r.full && r.m >= 2), "no multi-level partial merge");
    assert!(d.reports.iter().any(|r| r.z > 0), "merge-finalize never skipped a level");
    let skipped = d.db.with_tree(|t| t.merge_counts().levels_skipped).unwrap();
    assert!(skipped > 0);
    d.check_content();
}

#[test]
fn full_merges_grow_the_tree() {
    let mut d = Driver::new(&tiny(3));
    for k in 0..2000 {
        d.put(k * 3, k);
    }
    let grew: Vec<_> =
        d.reports.iter().filter(|r| r.full && r.height_after > r.height_before).collect();
    assert!(grew.len() >= 3, "{} growing merges", grew.len());
    for r in &grew {
        assert_eq!(r.m, r.height_before, "eq. 2: m = h when U(h-1) > kappa_(h-1)");
    }
    d.check_content();
}

#[test]
fn cancellation_heavy_merges_shrink_the_tree() {
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
    assert!(shrinking.iter().all(|r| r.cancellations > 0));
    assert!(d.height() < tall, "height {} not below {tall}", d.height());
    d.check_content();
    // Delete the rest: the tree collapses to L_0 only, and the counters are exact.
    for k in 0..2000 {
        d.delete(k);
    }
    d.check_content();
    let c = d.db.with_tree(lamina_fdtree::Tree::counters).unwrap();
    assert_eq!(c.live_keys(), 0);
}

#[test]
fn underflow_triggers_a_full_merge() {
    let mut d = Driver::new(&tiny(4));
    for k in 0..1500 {
        d.put(k, k);
    }
    let before = d.reports.len();
    // Deleting keys of the bottom level adds delete entries until N_nabla > N_delta / 3.
    let mut k = 0;
    while !d.reports[before..].iter().any(|r| r.trigger == Trigger::Underflow) {
        d.delete(k);
        k += 2;
    }
    let r = d.reports[before..].iter().find(|r| r.trigger == Trigger::Underflow).unwrap();
    assert!(r.full && r.m == r.height_before - 1);
    // Every delete entry cancelled its insert: N_nabla drops to zero right after.
    assert!(k > 1500 / 4 * 2 / 2, "underflow fired after only {} deletes", k / 2);
    d.check_content();
}

#[test]
fn updates_keep_counters_exact() {
    let mut d = Driver::new(&tiny(3));
    for round in 0..6 {
        for k in 0..300 {
            d.put(k, k * 10 + round);
        }
    }
    let c = d.db.with_tree(lamina_fdtree::Tree::counters).unwrap();
    assert_eq!(c.live_keys(), 300);
    d.check_content();
}

#[test]
fn lookups_read_at_most_one_block_per_materialized_level() {
    let storage = Arc::new(MemoryStorage::new());
    // No block cache: every block a lookup visits is a storage read.
    let options = FdTreeOptions { verify_each_merge: false, cache_bytes: 0, ..tiny(2) };
    let db = FdTree::with_storage(storage.clone(), &options, false).unwrap();
    for k in shuffled(4000, 5) {
        db.put(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    for k in shuffled(1000, 9).into_iter().take(300) {
        db.delete(&(k * 4).to_be_bytes()).unwrap();
    }
    let disk_levels = db.with_tree(|t| t.materialized_labels().len() - 1).unwrap();
    assert!(disk_levels >= 3, "{disk_levels} disk levels");
    db.verify().unwrap();
    let mut deepest = 0;
    for k in (0..5000u64).step_by(3) {
        let before = storage.io_stats();
        let got = db.get(&k.to_be_bytes()).unwrap();
        let reads = storage.io_stats().since(&before).reads();
        assert!(reads <= disk_levels as u64, "lookup of {k} read {reads} blocks");
        deepest = deepest.max(reads);
        let deleted = k % 4 == 0 && shuffled(1000, 9)[..300].contains(&(k / 4));
        let expected = (k < 4000 && !deleted).then(|| k.to_le_bytes().to_vec());
        assert_eq!(got, expected, "key {k}");
    }
    assert_eq!(deepest, disk_levels as u64, "some lookup must reach the bottom");
}

#[test]
fn repeated_lookups_are_served_by_the_block_cache() {
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
    let before = storage.io_stats();
    for &k in &keys {
        assert_eq!(db.get(&k.to_be_bytes()).unwrap(), Some(k.to_le_bytes().to_vec()));
    }
    assert_eq!(storage.io_stats().since(&before).reads(), 0);
    let hits = db.with_tree(|t| t.cache_stats().map(|s| s.hits)).unwrap();
    assert!(hits.unwrap() >= keys.len() as u64, "{hits:?}");
}

#[test]
fn corrupt_blocks_are_reported_not_served() {
    let storage = Arc::new(MemoryStorage::new());
    let db = FdTree::with_storage(storage.clone(), &tiny(3), false).unwrap();
    for k in 0..500u64 {
        db.put(&k.to_be_bytes(), &k.to_le_bytes()).unwrap();
    }
    let name = storage.list().unwrap().into_iter().find(|n| n.starts_with("fd-")).unwrap();
    let file = storage.open(&name, OpenMode::Existing).unwrap();
    let mut byte = [0u8; 1];
    file.read_exact_at(40, &mut byte).unwrap();
    file.write_all_at(40, &[byte[0] ^ 0x40]).unwrap();
    let mut saw = false;
    for k in 0..500u64 {
        match db.get(&k.to_be_bytes()) {
            Ok(v) => assert_eq!(v, Some(k.to_le_bytes().to_vec())),
            Err(Error::Corruption { file, .. }) => {
                assert!(file.to_string_lossy().contains(&name));
                saw = true;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    assert!(saw, "no lookup went through the corrupt block");
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
        db.delete(&k.to_be_bytes()).unwrap();
    }
    let labels = db.with_tree(lamina_fdtree::Tree::materialized_labels).unwrap();
    db.close().unwrap();
    let db = FdTree::open(storage.clone(), &options).unwrap();
    db.verify().unwrap();
    assert_eq!(db.with_tree(lamina_fdtree::Tree::materialized_labels).unwrap(), labels);
    let level_files = storage
        .list()
        .unwrap()
        .into_iter()
        .filter(|n| std::path::Path::new(n).extension().is_some_and(|e| e == "lvl"))
        .count();
    assert_eq!(level_files, labels.len() - 1, "replaced level files were not reclaimed");
    for k in 0..800u64 {
        let expect = (k % 3 != 0).then(|| k.to_le_bytes().to_vec());
        assert_eq!(db.get(&k.to_be_bytes()).unwrap(), expect);
    }
    // Options that change the layout are refused.
    db.close().unwrap();
    let other = FdTreeOptions { size_ratio: 2, ..options };
    assert!(matches!(FdTree::open(storage, &other), Err(Error::Incompatible { .. })));
}

#[test]
fn limits_below_the_api_are_enforced() {
    let db = FdTree::volatile(&tiny(3)).unwrap();
    assert!(db.put(b"123456789", b"v").unwrap_err().is_invalid_argument());
    assert!(db.put(b"k", b"123456789").unwrap_err().is_invalid_argument());
    assert_eq!(db.get(b"k").unwrap(), None);
}
