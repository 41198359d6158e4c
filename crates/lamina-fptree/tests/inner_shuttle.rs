//! Interleavings of the inner nodes' version-lock protocol with shuttle: `OlcInnerOn` runs on
//! shuttle's atomic as its version word, so every version read, validation, upgrade and
//! release (and every content load and swap, through `VersionWord::schedule_point`) is a
//! point where shuttle's seeded random and PCT schedulers switch threads. Small fanouts make
//! each write split or empty nodes, grow or collapse the root, or move a lower bound into an
//! ancestor.
//!
//! Not explored: crossbeam-epoch's internals (shuttle runs its threads on one OS thread, so
//! they share one epoch participant and retired contents are freed only when none is pinned:
//! sound, conservative), and weak-memory reorderings (shuttle is sequentially consistent;
//! the orderings are argued in `version.rs` and `node.rs`).

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use common::shuttle_word::{ShuttleWord, check};
use lamina_fptree::inner::{InnerIndex, LeafId, OlcInnerOn, Visit};
use shuttle::thread;

type Inner = OlcInnerOn<ShuttleWord>;

type State = BTreeMap<Vec<u8>, LeafId>;

fn state(leaves: &[(&str, LeafId)]) -> State {
    leaves.iter().map(|&(k, leaf)| (k.as_bytes().to_vec(), leaf)).collect()
}

/// A tree of the leaves "" (0), "d" (1), "f" (2) in one full bottom node, the root, at
/// fanout 3 (the bulk load fills nodes to 2 of 3: the third leaf comes by a split).
fn full_root() -> Inner {
    let inner = build(&state(&[("", 0), ("d", 1)]), 3);
    inner.insert_separator(b"f", 2);
    inner
}

fn build(state: &State, fanout: usize) -> Inner {
    Inner::build_with_fanout(state.iter().map(|(k, &l)| (k.as_slice().into(), l)).collect(), fanout)
}

/// The answer of `locate` in `state`.
fn answer(state: &State, key: &[u8]) -> (LeafId, Option<LeafId>) {
    let mut before = state.range::<[u8], _>((Bound::Unbounded, Bound::Included(key)));
    let (_, &leaf) = before.next_back().unwrap();
    (leaf, before.next_back().map(|(_, &l)| l))
}

fn located(inner: &Inner, key: &[u8]) -> (LeafId, Option<LeafId>) {
    inner.locate(key, |leaf, prev| Visit::Done((leaf, prev)), |_| {})
}

fn final_state(inner: &Inner) -> State {
    inner.verify();
    inner.leaves().into_iter().map(|(k, l)| (k.into_vec(), l)).collect()
}

/// A reader racing a writer's split (of the bottom node, the root, into two under a new root) sees the
/// state before or after, never a mix (a stale leaf or prev), and never goes back in time.
#[test]
fn a_reader_racing_a_split_sees_before_or_after() {
    let before = state(&[("", 0), ("d", 1), ("f", 2)]);
    let mut after = before.clone();
    after.insert(b"e".to_vec(), 9);
    check(move || {
        let inner = Arc::new(full_root());
        let writer = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || inner.insert_separator(b"e", 9))
        };
        let mut saw_after = false;
        for key in [&b"f"[..], b"e", b"ee", b"f", b"e", b"f"] {
            let got = located(&inner, key);
            if got == answer(&after, key) && got != answer(&before, key) {
                saw_after = true;
            } else {
                assert_eq!(got, answer(&before, key), "{key:?}: neither before nor after");
                assert!(!saw_after, "{key:?}: back to the state before the split");
            }
        }
        writer.join().unwrap();
        assert_eq!(final_state(&inner), after);
    });
}

/// Two writers on different parts of the tree (one splitting on the left, one emptying and
/// removing nodes on the right) and a reader: the final state has both changes, and every
/// answer the reader got is one of a state some prefix of each writer's operations gives.
#[test]
fn two_writers_on_different_parts_and_a_reader() {
    let start = state(&[("", 0), ("b", 1), ("d", 2), ("f", 3), ("h", 4), ("j", 5)]);
    let left: [(&[u8], LeafId); 2] = [(b"c", 10), (b"a", 11)];
    let right: [(&[u8], LeafId); 2] = [(b"j", 5), (b"h", 4)];
    // Every state reachable by a prefix of each writer's operations.
    let mut states = Vec::new();
    for l in 0..=left.len() {
        for r in 0..=right.len() {
            let mut s = start.clone();
            for &(k, leaf) in &left[..l] {
                s.insert(k.to_vec(), leaf);
            }
            for &(k, _) in &right[..r] {
                s.remove(k);
            }
            states.push(s);
        }
    }
    let keys: [&[u8]; 4] = [b"c", b"i", b"a", b"k"];
    let valid: Vec<BTreeSet<(LeafId, Option<LeafId>)>> =
        keys.iter().map(|k| states.iter().map(|s| answer(s, k)).collect()).collect();
    let end = states.last().unwrap().clone();
    check(move || {
        let inner = Arc::new(build(&start, 3));
        let a = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || left.iter().for_each(|&(k, l)| inner.insert_separator(k, l)))
        };
        let b = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || right.iter().for_each(|&(k, l)| inner.remove_leaf(k, l)))
        };
        for (key, valid) in keys.iter().zip(&valid).cycle().take(3 * keys.len()) {
            let got = located(&inner, key);
            assert!(valid.contains(&got), "{key:?}: {got:?} not in {valid:?}");
        }
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(final_state(&inner), end);
    });
}

/// Removing the first leaf of a bottom node that is not the first (its lower bound moves into
/// an ancestor, the nodes between are locked) while a reader locates in the removed range,
/// whose leaf and prev come from the left subtree afterwards.
#[test]
fn a_first_child_removal_races_a_reader() {
    // Fanout 3 builds bottom nodes of 2: ["", "b"] ["d", "f"] ["h", "j"].
    let before = state(&[("", 0), ("b", 1), ("d", 2), ("f", 3), ("h", 4), ("j", 5)]);
    let mut after = before.clone();
    after.remove(&b"d"[..]);
    after.remove(&b"h"[..]);
    let mut middle = before.clone();
    middle.remove(&b"d"[..]);
    check(move || {
        let inner = Arc::new(build(&before, 3));
        let writer = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || {
                inner.remove_leaf(b"d", 2);
                inner.remove_leaf(b"h", 4);
            })
        };
        let states = [&before, &middle, &after];
        for key in [&b"e"[..], b"f", b"i"].into_iter().cycle().take(9) {
            let got = located(&inner, key);
            assert!(states.iter().any(|s| answer(s, key) == got), "{key:?}: {got:?}");
        }
        writer.join().unwrap();
        assert_eq!(final_state(&inner), after);
    });
}

/// Two writers on disjoint leaves of one bottom node (a split of "d", the removal of "b"),
/// so their upgrades of that node conflict: neither change is lost, and a reader sees one of
/// the four states.
#[test]
fn two_writers_on_one_node_lose_nothing() {
    let start = state(&[("", 0), ("b", 1), ("d", 2)]);
    let mut split = start.clone();
    split.insert(b"e".to_vec(), 9);
    let mut removed = start.clone();
    removed.remove(&b"b"[..]);
    let mut both = split.clone();
    both.remove(&b"b"[..]);
    check(move || {
        // Fanout 4 bulk-loads the three leaves into one node, the root.
        let inner = Arc::new(build(&start, 4));
        let a = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || inner.insert_separator(b"e", 9))
        };
        let b = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || inner.remove_leaf(b"b", 1))
        };
        for key in [&b"c"[..], b"e", b"c", b"e"] {
            let got = located(&inner, key);
            let states = [&start, &split, &removed, &both];
            assert!(states.iter().any(|s| answer(s, key) == got), "{key:?}: {got:?}");
        }
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(final_state(&inner), both);
    });
}

/// A writer empties the right of a three-level tree (removals that cascade up, then a root
/// collapse that also takes the one-child node under the new root, off the removal's path)
/// while another splits on the left, under that node, and a reader locates everywhere.
#[test]
fn a_root_collapse_through_a_chain_races_a_split_and_a_reader() {
    // Fanout 3 bulk-loads [B0 ["", b], B1 [d, f]] [B2 [h, j]] under the root.
    let start = state(&[("", 0), ("b", 1), ("d", 2), ("f", 3), ("h", 4), ("j", 5)]);
    let removals: [(&[u8], LeafId); 4] = [(b"d", 2), (b"f", 3), (b"j", 5), (b"h", 4)];
    let inserts: [(&[u8], LeafId); 2] = [(b"a", 10), (b"c", 11)];
    let mut states = Vec::new();
    for r in 0..=removals.len() {
        for i in 0..=inserts.len() {
            let mut s = start.clone();
            for &(k, _) in &removals[..r] {
                s.remove(k);
            }
            for &(k, leaf) in &inserts[..i] {
                s.insert(k.to_vec(), leaf);
            }
            states.push(s);
        }
    }
    let keys: [&[u8]; 4] = [b"c", b"e", b"i", b"a"];
    let valid: Vec<BTreeSet<(LeafId, Option<LeafId>)>> =
        keys.iter().map(|k| states.iter().map(|s| answer(s, k)).collect()).collect();
    let end = states.last().unwrap().clone();
    check(move || {
        let inner = Arc::new(build(&start, 3));
        let remover = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || removals.iter().for_each(|&(k, l)| inner.remove_leaf(k, l)))
        };
        let splitter = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || inserts.iter().for_each(|&(k, l)| inner.insert_separator(k, l)))
        };
        for (key, valid) in keys.iter().zip(&valid).cycle().take(2 * keys.len()) {
            let got = located(&inner, key);
            assert!(valid.contains(&got), "{key:?}: {got:?} not in {valid:?}");
        }
        remover.join().unwrap();
        splitter.join().unwrap();
        assert_eq!(final_state(&inner), end);
    });
}

/// Undos over all runs of the model below: the validation after `visit` must fail in some.
static UNDOS: AtomicU64 = AtomicU64::new(0);

/// `visit` takes leaf "locks" (counts) inside the optimistic section; a failed validation
/// gives them back through `undo`: after every locate exactly its leaf is held, never one
/// the traversal did not end on, and the counts balance.
#[test]
fn visit_effects_are_undone_when_validation_fails() {
    let before = state(&[("", 0), ("d", 1), ("f", 2)]);
    let mut after = before.clone();
    after.insert(b"e".to_vec(), 9);
    check(move || {
        let inner = Arc::new(full_root());
        let held: Arc<Vec<shuttle::sync::atomic::AtomicU64>> =
            Arc::new((0..10).map(|_| shuttle::sync::atomic::AtomicU64::new(0)).collect());
        let writer = {
            let inner = Arc::clone(&inner);
            thread::spawn(move || inner.insert_separator(b"e", 9))
        };
        for key in [&b"e"[..], b"f"] {
            let leaf = inner.locate(
                key,
                |leaf, _| {
                    held[leaf as usize].fetch_add(1, Ordering::SeqCst);
                    Visit::Done(leaf)
                },
                |leaf| {
                    UNDOS.fetch_add(1, Ordering::Relaxed);
                    held[leaf as usize].fetch_sub(1, Ordering::SeqCst);
                },
            );
            assert!(leaf == answer(&before, key).0 || leaf == answer(&after, key).0);
            for (i, count) in held.iter().enumerate() {
                let expected = u64::from(i as LeafId == leaf);
                assert_eq!(count.load(Ordering::SeqCst), expected, "leaf {i}");
            }
            held[leaf as usize].fetch_sub(1, Ordering::SeqCst);
        }
        writer.join().unwrap();
    });
    assert!(UNDOS.load(Ordering::Relaxed) > 0, "no schedule failed the validation after visit");
}
