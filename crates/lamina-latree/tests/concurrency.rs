//! The engine's concurrency scheme (`engine/inner.rs`): writers, point readers and scanners
//! at once on a persistent tree with a small `U`, little memory and frequent background
//! checkpoints, so buffers are emptied, nodes split and checkpoints committed all the time.
//! A lookup never misses an acknowledged entry (however it is moving between buffers), a
//! scan returns every key present throughout it, and the final state is exact. Also with
//! tiny partitions, so reclamations (section 4.3) run among them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use lamina_core::{Durability, KeyRange, OrderedIndex};
use lamina_latree::engine::CHECKPOINT_LOG_BYTES_MIN;
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::{DeviceProfile, MemoryStorage, Storage};

const WRITERS: usize = 3;
const KEYS_PER_WRITER: usize = 1500;

fn key(writer: usize, i: usize) -> Vec<u8> {
    // Writers interleave in key order, so their keys share leaves and buffers.
    format!("k{:06}-{writer}", (i * 7919) % 1_000_000).into_bytes()
}

/// `small_partitions`: the smallest partition floor, so section 4.3's reclamation runs every
/// time garbage exceeds live data, with lookups and scans in flight.
fn run(buffered: bool, small_partitions: bool) {
    let mut options = LaTreeEngineOptions::for_device(DeviceProfile::nand_toshiba());
    options.tree.buffered = buffered;
    if small_partitions {
        options.tree.partition_bytes = lamina_latree::tree::PARTITION_BYTES_MIN;
    }
    options.tree.buffer_entries_max = 32;
    options.tree.memory_bytes = 128 << 10;
    options.durability = Durability::Buffered { max_delay: std::time::Duration::from_millis(5) };
    options.checkpoint_log_bytes = CHECKPOINT_LOG_BYTES_MIN * 4;
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let db = LaTreeEngine::open(storage.clone(), &options).unwrap();
    let published: Vec<AtomicUsize> = (0..WRITERS).map(|_| AtomicUsize::new(0)).collect();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for w in 0..WRITERS {
            let (db, published) = (&db, &published);
            s.spawn(move || {
                for i in 0..KEYS_PER_WRITER {
                    db.put(&key(w, i), &i.to_le_bytes()).unwrap();
                    if i % 5 == 4 {
                        // Churn in the buffers: a short-lived key next to ours, put and
                        // deleted again (the readers never look at it).
                        let mut churn = key(w, i);
                        churn.push(b'x');
                        db.put(&churn, b"churn").unwrap();
                        assert!(db.delete(&churn).unwrap());
                    }
                    published[w].store(i + 1, Ordering::Release);
                }
            });
        }
        for r in 0..2 {
            let (db, published, done) = (&db, &published, &done);
            s.spawn(move || {
                let mut x = 12_345 + r as u64;
                while !done.load(Ordering::Acquire) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let w = (x % WRITERS as u64) as usize;
                    let count = published[w].load(Ordering::Acquire);
                    if count == 0 {
                        continue;
                    }
                    // An acknowledged put that is never overwritten or deleted.
                    let i = (x >> 8) as usize % count;
                    let got = db.get(&key(w, i)).unwrap();
                    assert_eq!(got, Some(i.to_le_bytes().to_vec()), "writer {w} key {i} missed");
                }
            });
        }
        {
            let (db, published, done) = (&db, &published, &done);
            s.spawn(move || {
                while !done.load(Ordering::Acquire) {
                    let before: Vec<usize> =
                        published.iter().map(|p| p.load(Ordering::Acquire)).collect();
                    let all = db.scan(&KeyRange::all(), 1 << 20).unwrap();
                    assert!(all.windows(2).all(|p| p[0].0 < p[1].0), "scan out of order");
                    // Keys acknowledged before the scan began are present throughout it.
                    for (w, &count) in before.iter().enumerate() {
                        for i in 0..count {
                            let k = key(w, i);
                            assert!(
                                all.binary_search_by(|(key, _)| key.cmp(&k)).is_ok(),
                                "scan missed {w}/{i}"
                            );
                        }
                    }
                }
            });
        }
        while published.iter().any(|p| p.load(Ordering::Acquire) < KEYS_PER_WRITER) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        done.store(true, Ordering::Release);
    });
    let stats = db.verify().unwrap();
    let all = lamina_core::testkit::dump(&db);
    assert_eq!(all.len(), WRITERS * KEYS_PER_WRITER, "{stats:?}");
    for w in 0..WRITERS {
        for i in 0..KEYS_PER_WRITER {
            assert_eq!(all.get(&key(w, i)), Some(&i.to_le_bytes().to_vec()));
        }
    }
    let extra = |name: &str| db.stats().extra.iter().find(|(n, _)| *n == name).unwrap().1;
    assert!(extra("checkpoints") >= 3, "background checkpoints ran");
    if buffered {
        assert!(extra("emptyings") > 10, "buffers were emptied");
    }
    if small_partitions {
        eprintln!("{:?}", db.stats().extra);
        assert!(extra("reclamations") >= 3, "partitions were reclaimed");
        assert!(extra("reclaim_bytes_erased") > 0, "old partitions were erased");
    }
    db.close().unwrap();
    let db = LaTreeEngine::open(storage, &options).unwrap();
    assert_eq!(lamina_core::testkit::dump(&db), all);
    db.close().unwrap();
}

#[test]
fn readers_writers_scanners_and_checkpoints_latree() {
    run(true, false);
}

#[test]
fn readers_writers_scanners_and_checkpoints_latree_btree() {
    run(false, false);
}

#[test]
fn readers_writers_scanners_and_checkpoints_with_reclamations() {
    run(true, true);
    run(false, true);
}
