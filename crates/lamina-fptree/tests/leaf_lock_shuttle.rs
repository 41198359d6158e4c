//! Interleavings of the leaf lock (`lamina_fptree::leaf_lock`, section 4.4 with optimistic
//! locking in place of HTM) under shuttle: the protocol's own functions run on shuttle's
//! atomic, and a leaf is modeled by its version word and a record of two words that a writer
//! stores one after the other (a slot's pointer words, or an inline key and value). Every
//! atomic access is a point where shuttle may switch threads.
//!
//! Checked: writers exclude each other (a read-modify-write of two words under the lock loses
//! no update); an optimistic read that validates never saw a half-written record; a read
//! that started while a writer held the leaf, or overlapped a write, is refused. A reader
//! that skips the validation is caught (the model finds the torn read). Not checked:
//! weak-memory reorderings (shuttle is sequentially consistent; `leaf_lock.rs` argues the
//! orderings), and the leaf's persistence (the crash tests do).

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::shuttle_word::{ShuttleWord, check};
use lamina_fptree::inner::VersionWord;
use lamina_fptree::leaf_lock::{read_optimistic, try_lock, unlock};
use shuttle::sync::atomic::AtomicU64;
use shuttle::thread;

/// A leaf: its version word and one record of two words, `(n, 2 n)` when whole.
struct Leaf {
    version: ShuttleWord,
    first: AtomicU64,
    second: AtomicU64,
}

impl Leaf {
    fn new() -> Arc<Self> {
        Arc::new(Leaf {
            version: ShuttleWord::new(0),
            first: AtomicU64::new(0),
            second: AtomicU64::new(0),
        })
    }

    /// A writer: takes the lock (retrying while it is held), rewrites the record from what
    /// it holds (a read-modify-write), releases.
    fn bump(&self) {
        while !try_lock(&self.version) {
            thread::yield_now();
        }
        let n = self.first.load(Ordering::SeqCst);
        self.first.store(n + 1, Ordering::SeqCst);
        self.second.store(2 * (n + 1), Ordering::SeqCst);
        unlock(&self.version);
    }

    fn read(&self) -> (u64, u64) {
        (self.first.load(Ordering::SeqCst), self.second.load(Ordering::SeqCst))
    }
}

#[test]
fn writers_exclude_each_other_and_validated_reads_are_whole() {
    check(|| {
        let leaf = Leaf::new();
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let leaf = Arc::clone(&leaf);
                thread::spawn(move || {
                    for _ in 0..2 {
                        leaf.bump();
                    }
                })
            })
            .collect();
        let reader = {
            let leaf = Arc::clone(&leaf);
            thread::spawn(move || {
                let mut last_version = 0;
                for _ in 0..4 {
                    if let Some(((first, second), version)) =
                        read_optimistic(&leaf.version, || leaf.read())
                    {
                        assert_eq!(second, 2 * first, "a validated read saw a torn record");
                        assert!(version.is_multiple_of(2));
                        assert_eq!(version, 2 * first, "the version counts the writes");
                        assert!(version >= last_version, "versions only move on");
                        last_version = version;
                    }
                }
            })
        };
        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        assert_eq!(leaf.read(), (4, 8), "no update lost");
        assert_eq!(leaf.version.load(Ordering::SeqCst), 8, "free, after four writes");
    });
}

#[test]
fn a_read_of_a_held_or_changing_leaf_is_refused() {
    // Deterministic edges, one thread (shuttle's atomics need a shuttle execution).
    shuttle::check_random(
        || {
            let leaf = Leaf::new();
            assert!(try_lock(&leaf.version));
            assert!(!try_lock(&leaf.version), "a held lock is not taken twice");
            assert!(read_optimistic(&leaf.version, || leaf.read()).is_none(), "held: refused");
            unlock(&leaf.version);
            // A write between the two version reads.
            let changed = read_optimistic(&leaf.version, || leaf.bump());
            assert!(changed.is_none(), "changed during the read: refused");
            assert_eq!(read_optimistic(&leaf.version, || leaf.read()), Some(((1, 2), 4)));
        },
        1,
    );
}

#[test]
#[should_panic(expected = "torn")]
fn a_reader_that_skips_the_validation_is_caught() {
    check(|| {
        let leaf = Leaf::new();
        let writer = {
            let leaf = Arc::clone(&leaf);
            thread::spawn(move || leaf.bump())
        };
        // Checks the version before the read but not after: a write can land in between.
        if leaf.version.load(Ordering::SeqCst).is_multiple_of(2) {
            let (first, second) = leaf.read();
            assert_eq!(second, 2 * first, "a torn record");
        }
        writer.join().unwrap();
    });
}
