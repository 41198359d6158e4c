//! Real threads on `OlcInner`, used as the leaf layer will use it (Algorithms 1, 2 and 5):
//! writers split and remove leaves in their own key regions, taking emulated leaf locks in
//! `visit` (a busy lock: `Visit::Restart`; a failed validation: `undo` releases), while
//! readers locate keys everywhere. An oracle of separators is updated under the leaf locks,
//! so whoever holds a leaf's lock knows its exact range: every located leaf is checked
//! against it (readers: the leaf; writers: the leaf and the one before).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use lamina_fptree::inner::{InnerIndex, LeafId, OlcInner, Visit};

const WRITERS: u8 = 2;
const READERS: usize = 2;
const OPERATIONS_PER_WRITER: usize = 10_000;
const LEAVES_MAX: usize = 1 + WRITERS as usize * (OPERATIONS_PER_WRITER + 1);

/// xorshift64*: deterministic per thread, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A key in `region`: the region byte and one to three more.
    fn key(&mut self, region: u8) -> Vec<u8> {
        let len = 1 + self.below(3) as usize;
        std::iter::once(region).chain((0..len).map(|_| b'a' + self.below(6) as u8)).collect()
    }
}

struct World {
    inner: OlcInner,
    locks: Vec<AtomicBool>,
    oracle: Mutex<BTreeMap<Vec<u8>, LeafId>>,
    next_leaf: AtomicU64,
    done: AtomicBool,
}

impl World {
    fn try_lock(&self, leaf: LeafId) -> bool {
        !self.locks[leaf as usize].swap(true, Ordering::Acquire)
    }

    fn unlock(&self, leaf: LeafId) {
        assert!(self.locks[leaf as usize].swap(false, Ordering::Release), "leaf {leaf} not held");
    }

    /// The leaf the oracle says covers `key`, and the one before.
    fn oracle(&self, key: &[u8]) -> (LeafId, Option<LeafId>) {
        let oracle = self.oracle.lock().unwrap();
        let mut before = oracle.range::<[u8], _>((Bound::Unbounded, Bound::Included(key)));
        let (_, &leaf) = before.next_back().unwrap();
        (leaf, before.next_back().map(|(_, &l)| l))
    }

    /// Algorithm 1's traversal: lock the leaf covering `key` (restart while it is busy).
    fn lock_leaf(&self, key: &[u8]) -> (LeafId, Option<LeafId>) {
        self.inner.locate(
            key,
            |leaf, prev| {
                if self.try_lock(leaf) { Visit::Done((leaf, prev)) } else { Visit::Restart }
            },
            |(leaf, _)| self.unlock(leaf),
        )
    }

    /// Algorithm 5's traversal for a leaf removal: lock the leaf and the one before.
    fn lock_leaf_and_prev(&self, key: &[u8]) -> (LeafId, LeafId) {
        self.inner.locate(
            key,
            |leaf, prev| {
                let prev = prev.expect("a removed leaf is never the first");
                if !self.try_lock(leaf) {
                    return Visit::Restart;
                }
                if !self.try_lock(prev) {
                    self.unlock(leaf);
                    return Visit::Restart;
                }
                Visit::Done((leaf, prev))
            },
            |(leaf, prev)| {
                self.unlock(leaf);
                self.unlock(prev);
            },
        )
    }

    fn writer(&self, region: u8) {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(region));
        // This region's separators (its first, `[region]`, is never removed).
        let mut mine: BTreeMap<Vec<u8>, LeafId> = BTreeMap::new();
        mine.insert(vec![region], u64::from(region));
        for _ in 0..OPERATIONS_PER_WRITER {
            if mine.len() < 2 || rng.below(3) > 0 {
                let key = rng.key(region);
                if mine.contains_key(&key) {
                    continue;
                }
                let (leaf, _) = self.lock_leaf(&key);
                let expected = *mine.range(..=key.clone()).next_back().unwrap().1;
                assert_eq!(leaf, expected, "the split leaf for {key:?}");
                assert_eq!(self.oracle(&key).0, leaf);
                let right = self.next_leaf.fetch_add(1, Ordering::Relaxed);
                assert!(self.try_lock(right));
                self.inner.insert_separator(&key, right);
                self.oracle.lock().unwrap().insert(key.clone(), right);
                mine.insert(key, right);
                self.unlock(right);
                self.unlock(leaf);
            } else {
                let index = 1 + rng.below(mine.len() as u64 - 1) as usize;
                let (key, &victim) = mine.iter().nth(index).unwrap();
                let key = key.clone();
                let expected_prev = *mine.iter().nth(index - 1).unwrap().1;
                let (leaf, prev) = self.lock_leaf_and_prev(&key);
                assert_eq!((leaf, prev), (victim, expected_prev), "removal of {key:?}");
                assert_eq!(self.oracle(&key), (leaf, Some(prev)));
                self.inner.remove_leaf(&key, leaf);
                self.oracle.lock().unwrap().remove(&key);
                mine.remove(&key);
                // The removed leaf stays locked: it is gone, and ids are not reused.
                self.unlock(prev);
            }
        }
    }

    fn reader(&self, seed: u64) -> u64 {
        let mut rng = Rng(seed);
        let mut locates = 0;
        while !self.done.load(Ordering::Relaxed) {
            let region = 1 + rng.below(u64::from(WRITERS) + 1) as u8;
            let key = rng.key(region);
            let (leaf, prev) = self.lock_leaf(&key);
            // Holding the leaf's lock, its range is stable and the oracle up to date.
            assert_eq!(self.oracle(&key).0, leaf, "located {key:?}");
            assert_eq!(prev.is_none(), leaf == 0, "only the first leaf has none before");
            self.unlock(leaf);
            locates += 1;
        }
        locates
    }
}

#[test]
fn writers_split_and_remove_disjoint_leaves_while_readers_locate() {
    // Leaf 0 covers everything below region 1; leaf r is region r's first.
    let mut initial = vec![(Box::<[u8]>::default(), 0)];
    initial.extend((1..=WRITERS).map(|r| (vec![r].into_boxed_slice(), LeafId::from(r))));
    let world = World {
        oracle: Mutex::new(initial.iter().map(|(k, l)| (k.to_vec(), *l)).collect()),
        inner: OlcInner::build_with_fanout(initial, 4),
        locks: (0..LEAVES_MAX).map(|_| AtomicBool::new(false)).collect(),
        next_leaf: AtomicU64::new(u64::from(WRITERS) + 1),
        done: AtomicBool::new(false),
    };
    let world = &world;
    let locates: u64 = std::thread::scope(|scope| {
        let readers: Vec<_> =
            (0..READERS).map(|i| scope.spawn(move || world.reader(7 + i as u64))).collect();
        let writers: Vec<_> = (1..=WRITERS).map(|r| scope.spawn(move || world.writer(r))).collect();
        for writer in writers {
            writer.join().unwrap();
        }
        world.done.store(true, Ordering::Relaxed);
        readers.into_iter().map(|r| r.join().unwrap()).sum()
    });
    world.inner.verify();
    let leaves: BTreeMap<Vec<u8>, LeafId> =
        world.inner.leaves().into_iter().map(|(k, l)| (k.into_vec(), l)).collect();
    assert_eq!(leaves, *world.oracle.lock().unwrap());
    assert!(world.inner.leaf_count() > 1);
    let restarts = world.inner.restarts();
    eprintln!("{locates} reader locates, {restarts:?}");
}
