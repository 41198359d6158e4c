//! Readers, writers and merges together, per concurrency mode (FD+XM: merges inside
//! writers; FD+DS: merges in the background thread while readers and writers go on): writers
//! own disjoint keys and write increasing versions; readers check that no value ever goes
//! back, that a key a writer has finished with holds exactly its last value (the oracle), and
//! that scans stay ordered, while tiny levels make merges constant. The final content is
//! checked exactly.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lamina_core::{KeyRange, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};

const WRITERS: u64 = 3;
const KEYS_PER_WRITER: u64 = 150;
const ROUNDS: u32 = 4;

fn key(w: u64, i: u64) -> [u8; 8] {
    (w * 1_000_000 + i).to_be_bytes()
}

#[test]
fn readers_writers_and_merges_xm() {
    readers_writers_and_merges(FcMode::Xm);
}

#[test]
fn readers_writers_and_merges_ds() {
    readers_writers_and_merges(FcMode::Ds);
}

#[test]
fn readers_writers_and_merges_fc() {
    readers_writers_and_merges(FcMode::Fc);
}

fn readers_writers_and_merges(mode: FcMode) {
    let options = FdTreeOptions {
        mode,
        verify_each_merge: true,
        memory_budget_bytes: 512,
        block_bytes: 512,
        segment_bytes: 512,
        size_ratio: 2,
        key_bytes_max: 8,
        value_bytes_max: 8,
        ..FdTreeOptions::default()
    };
    let db = Arc::new(FdTree::volatile(&options).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (db, done) = (db.clone(), done.clone());
            std::thread::spawn(move || {
                let mut seen: HashMap<[u8; 8], u32> = HashMap::new();
                let mut x = 12345u64 + r;
                let mut checks = 0u64;
                while !done.load(Ordering::Relaxed) || checks < 100 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let k = key(x % WRITERS, (x >> 20) % KEYS_PER_WRITER);
                    if let Some(v) = db.get(&k).unwrap() {
                        let version = u32::from_le_bytes(v[..4].try_into().unwrap());
                        let last = seen.entry(k).or_insert(0);
                        assert!(version >= *last, "value of {k:?} went back");
                        *last = version;
                    }
                    if checks.is_multiple_of(50) {
                        let page = db.scan(&KeyRange::all(), 200).unwrap();
                        assert!(page.windows(2).all(|w| w[0].0 < w[1].0), "scan out of order");
                    }
                    checks += 1;
                }
            })
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                for round in 1..=ROUNDS {
                    for i in 0..KEYS_PER_WRITER {
                        db.put(&key(w, i), &round.to_le_bytes()).unwrap();
                    }
                    // Delete a different third of the keys each round except the last.
                    if round < ROUNDS {
                        for i in (0..KEYS_PER_WRITER).filter(|i| i % 3 == u64::from(round % 3)) {
                            assert!(db.delete(&key(w, i)).unwrap());
                        }
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    db.verify().unwrap();
    let all = db.scan(&KeyRange::all(), 1 << 20).unwrap();
    for w in 0..WRITERS {
        for i in 0..KEYS_PER_WRITER {
            assert_eq!(db.get(&key(w, i)).unwrap(), Some(ROUNDS.to_le_bytes().to_vec()));
        }
    }
    assert_eq!(all.len() as u64, WRITERS * KEYS_PER_WRITER);
    assert!(all.iter().all(|(_, v)| v == &ROUNDS.to_le_bytes()));
    // Merges ran throughout (background merges take every run written meanwhile, so they
    // are fewer than the runs).
    let m = db.with_tree(lamina_fdtree::Tree::merge_counts).unwrap();
    assert!(m.overflow >= 3 && m.runs_written > 20, "{m:?}");
}

#[test]
fn long_merges_with_readers_and_writers_xm() {
    long_merges_with_readers_and_writers(FcMode::Xm);
}

#[test]
fn long_merges_with_readers_and_writers_ds() {
    long_merges_with_readers_and_writers(FcMode::Ds);
}

#[test]
fn long_merges_with_readers_and_writers_fc() {
    long_merges_with_readers_and_writers(FcMode::Fc);
}

/// A scan from `k` is ordered and holds every preloaded key (below `keys`) it reaches; keys
/// at or past `keys` are the writers' fresh ones.
fn check_scan(db: &FdTree, k: u64, keys: u64) {
    let range =
        KeyRange { start: std::ops::Bound::Included(k.to_be_bytes().to_vec()), ..KeyRange::all() };
    let page = db.scan(&range, 50).unwrap();
    assert!(page.windows(2).all(|w| w[0].0 < w[1].0), "scan out of order");
    let preloaded = page
        .iter()
        .take_while(|(key, _)| u64::from_be_bytes(key[..8].try_into().unwrap()) < keys)
        .count();
    assert_eq!(preloaded as u64, 50.min(keys - k), "scan lost keys");
}

/// A preloaded tree of a few levels, so that the merges that reach the bottom are long;
/// writers overwrite disjoint slices with increasing versions while readers check that every
/// key is always present, that versions never go back, and that scans are ordered. At the
/// end every key holds its writer's last version (the oracle) and a full merge ran during the
/// concurrent phase.
fn long_merges_with_readers_and_writers(mode: FcMode) {
    const KEYS: u64 = 12_000;
    const WRITERS: u64 = 2;
    const ROUNDS: u32 = 8;
    const BATCHES_MAX: u32 = 20;
    const FRESH_PER_BATCH: u64 = 4000;
    let options = FdTreeOptions {
        mode,
        memory_budget_bytes: 8 << 10,
        block_bytes: 4096,
        size_ratio: 4,
        key_bytes_max: 8,
        value_bytes_max: 8,
        ..FdTreeOptions::default()
    };
    let db = Arc::new(FdTree::volatile(&options).unwrap());
    for chunk in (0..KEYS).collect::<Vec<_>>().chunks(400) {
        let mut batch = lamina_core::WriteBatch::new();
        for &i in chunk {
            batch.put(i.to_be_bytes().to_vec(), 0u32.to_le_bytes().to_vec());
        }
        db.write_batch(&batch).unwrap();
    }
    db.wait_for_merges().unwrap();
    let full_before = db.with_tree(|t| t.merge_counts().full).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2u64)
        .map(|r| {
            let (db, done) = (db.clone(), done.clone());
            std::thread::spawn(move || {
                let mut seen: HashMap<u64, u32> = HashMap::new();
                let mut x = 99u64 + r;
                let mut checks = 0u64;
                while !done.load(Ordering::Relaxed) || checks < 200 {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let k = (x >> 17) % KEYS;
                    let v = db.get(&k.to_be_bytes()).unwrap().expect("a preloaded key vanished");
                    let version = u32::from_le_bytes(v[..4].try_into().unwrap());
                    let last = seen.entry(k).or_insert(0);
                    assert!(version >= *last, "value of {k} went back");
                    *last = version;
                    if checks.is_multiple_of(100) {
                        check_scan(&db, k, KEYS);
                    }
                    checks += 1;
                }
            })
        })
        .collect();
    // Writers run ROUNDS rounds; when the scheduler paced the merger so that no full merge
    // ran (or was started and then finished by `wait_for_merges`), they run ROUNDS more, up
    // to BATCHES_MAX times, so the assertion below does not depend on timing.
    let mut last_round = 0u32;
    for _ in 0..BATCHES_MAX {
        let first_round = last_round + 1;
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let db = db.clone();
                std::thread::spawn(move || {
                    for round in first_round..first_round + ROUNDS {
                        for k in (w..KEYS).step_by(WRITERS as usize * 3) {
                            db.put(&k.to_be_bytes(), &round.to_le_bytes()).unwrap();
                        }
                    }
                    // Fresh keys grow the tree, so merges reach the bottom level whatever
                    // the overwrites cancel above it.
                    let fresh = KEYS
                        + u64::from(first_round) * FRESH_PER_BATCH
                        + w * FRESH_PER_BATCH / WRITERS;
                    for k in fresh..fresh + FRESH_PER_BATCH / WRITERS {
                        db.put(&k.to_be_bytes(), &0u32.to_le_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        last_round += ROUNDS;
        db.wait_for_merges().unwrap();
        if db.with_tree(|t| t.merge_counts().full).unwrap() > full_before {
            break;
        }
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    db.verify().unwrap();
    for k in 0..KEYS {
        let expected = if k % (WRITERS * 3) < WRITERS { last_round } else { 0 };
        let v = db.get(&k.to_be_bytes()).unwrap().unwrap();
        assert_eq!(v, expected.to_le_bytes(), "key {k}");
    }
    let full_after = db.with_tree(|t| t.merge_counts().full).unwrap();
    assert!(full_after > full_before, "no full merge ran during the concurrent phase");
}
