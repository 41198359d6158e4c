//! Interleaving tests of the publish / re-validate / retire protocol with shuttle
//! (`cargo test -p lamina-trie --features shuttle --test shuttle`).
//!
//! With the `shuttle` feature the tree's atomics, node locks, yields and the batch mutex
//! are shuttle's, so every slot load, slot swap and lock operation is a scheduling point
//! and shuttle's randomized (and PCT) schedulers explore interleavings of the real code on
//! small trees. What this does not explore is crossbeam-epoch's own internals: shuttle runs
//! all its threads on one OS thread, which shares one epoch participant, so deferred frees
//! run only when no shuttle thread is pinned (sound but conservative). The reclamation
//! rule we own — a content node is retired once, by the writer that swapped it out under
//! the node lock — is what these tests exercise; the epoch algorithm itself is
//! crossbeam-epoch's, tested there.

use std::sync::Arc;

use lamina_core::{CasOutcome, KeyRange, OrderedIndex, WriteBatch};
use lamina_trie::{TrieEngine, TrieOptions};
use shuttle::scheduler::{PctScheduler, RandomScheduler};
use shuttle::{Config, Runner, thread};

const ITERATIONS: usize = 2000;
/// Shuttle's default 60 KiB thread stacks are too small for a debug build of the engine
/// (its statistics counters alone are a few KiB of cache-padded cells).
const STACK_BYTES: usize = 1 << 20;

fn config() -> Config {
    let mut config = Config::new();
    config.stack_size = STACK_BYTES;
    config
}

fn check_random(test: fn()) {
    Runner::new(RandomScheduler::new(ITERATIONS), config()).run(test);
}

fn check_pct(test: fn()) {
    Runner::new(PctScheduler::new(3, ITERATIONS), config()).run(test);
}

fn binary_tree() -> Arc<TrieEngine> {
    // k' = 1: the deepest trees, so the keys below diverge many levels down and every
    // insert of a second key builds a long expansion chain.
    Arc::new(TrieEngine::volatile(TrieOptions::default().prefix_bits(1)).unwrap())
}

/// Two writers insert keys that collide with an existing key's slot (both expand it),
/// while a reader reads the existing key: it must never disappear, and nothing is lost.
fn racing_expansions() {
    let db = binary_tree();
    db.put(b"\x40\x00", b"old").unwrap();
    let writers: Vec<_> = [&b"\x40\x01"[..], b"\x40"]
        .into_iter()
        .map(|key| {
            let db = Arc::clone(&db);
            thread::spawn(move || db.put(key, b"new").unwrap())
        })
        .collect();
    let reader = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            for _ in 0..3 {
                assert_eq!(db.get(b"\x40\x00").unwrap().as_deref(), Some(&b"old"[..]));
                let all = db.scan(&KeyRange::all(), 10).unwrap();
                assert!(all.iter().any(|(k, _)| k == b"\x40\x00"), "scan lost a stable key");
                assert!(all.windows(2).all(|w| w[0].0 < w[1].0));
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    reader.join().unwrap();
    let keys: Vec<Vec<u8>> =
        db.scan(&KeyRange::all(), 10).unwrap().into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys, [b"\x40".to_vec(), b"\x40\x00".to_vec(), b"\x40\x01".to_vec()]);
}

/// Two CAS incrementers on one key while a third writer expands the key's slot (moving the
/// counter's content node down mid-race) and then deletes its own key: no increment lost.
fn cas_across_expansion() {
    let db = binary_tree();
    db.put(b"\x10", &0u64.to_be_bytes()).unwrap();
    let incrementers: Vec<_> = (0..2)
        .map(|_| {
            let db = Arc::clone(&db);
            thread::spawn(move || {
                for _ in 0..2 {
                    loop {
                        let current = db.get(b"\x10").unwrap().unwrap();
                        let n = u64::from_be_bytes(current[..].try_into().unwrap());
                        let next = (n + 1).to_be_bytes();
                        if db.compare_and_swap(b"\x10", Some(&current), Some(&next)).unwrap()
                            == CasOutcome::Swapped
                        {
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    let expander = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            db.put(b"\x10\x00", b"x").unwrap();
            assert!(db.delete(b"\x10\x00").unwrap());
        })
    };
    for t in incrementers {
        t.join().unwrap();
    }
    expander.join().unwrap();
    assert_eq!(db.get(b"\x10").unwrap(), Some(4u64.to_be_bytes().to_vec()));
    assert_eq!(db.get(b"\x10\x00").unwrap(), None);
}

/// Overwrites and deletes of one key race with gets: a get returns one of the values
/// written (never a freed or torn one), and delete reports existence exactly once.
fn overwrite_delete_get() {
    let db = binary_tree();
    db.put(b"k", b"v0").unwrap();
    let writer = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            db.put(b"k", b"v1").unwrap();
            db.put(b"k", b"v2").unwrap();
        })
    };
    let deleter = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            u8::from(db.delete(b"k").unwrap()) + u8::from(db.delete(b"k").unwrap())
        })
    };
    let reader = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            for _ in 0..3 {
                if let Some(v) = db.get(b"k").unwrap() {
                    assert!([&b"v0"[..], b"v1", b"v2"].contains(&v.as_slice()), "{v:?}");
                }
            }
        })
    };
    writer.join().unwrap();
    let deleted = deleter.join().unwrap();
    reader.join().unwrap();
    assert!((1..=2).contains(&deleted), "one delete at least found the key");
    let last = db.get(b"k").unwrap();
    assert!(
        last.is_none()
            || last.as_deref() == Some(&b"v2"[..])
            || last.as_deref() == Some(&b"v1"[..])
    );
}

/// A reader never sees half a batch (y is written before x in every batch): neither two
/// gets (y, then x) nor one scan (which reads x, then y, in one optimistic read).
fn batch_atomic_to_readers() {
    let db = binary_tree();
    let batch = |g: u8| {
        let mut b = WriteBatch::new();
        b.put(b"y".to_vec(), vec![g]).put(b"x".to_vec(), vec![g]);
        b
    };
    db.write_batch(&batch(0)).unwrap();
    let writer = {
        let db = Arc::clone(&db);
        thread::spawn(move || {
            for g in 1..=2 {
                db.write_batch(&batch(g)).unwrap();
            }
        })
    };
    for _ in 0..3 {
        let y = db.get(b"y").unwrap().unwrap();
        let x = db.get(b"x").unwrap().unwrap();
        assert!(x >= y, "saw half a batch: y = {y:?} then x = {x:?}");
        let both = db.scan(&KeyRange::all(), 2).unwrap();
        assert_eq!(both.len(), 2);
        assert_eq!(both[0].1, both[1].1, "a scan saw half a batch: {both:?}");
    }
    writer.join().unwrap();
}

#[test]
fn shuttle_racing_expansions() {
    check_random(racing_expansions);
    check_pct(racing_expansions);
}

#[test]
fn shuttle_cas_across_expansion() {
    check_random(cas_across_expansion);
    check_pct(cas_across_expansion);
}

#[test]
fn shuttle_overwrite_delete_get() {
    check_random(overwrite_delete_get);
}

#[test]
fn shuttle_batch_atomic_to_readers() {
    check_random(batch_atomic_to_readers);
    check_pct(batch_atomic_to_readers);
}
