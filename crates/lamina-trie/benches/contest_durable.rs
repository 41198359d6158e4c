//! The SIGMOD 2011 contest run with durability: 32 client threads, the contest mix, every
//! write durable (`Durability::Sync`) before it is acknowledged, the trie over the coalesced
//! cyclic log in real files.
//!
//! `cargo bench -p lamina-trie --bench contest_durable` (optional env: `CONTEST_SECONDS`,
//! default 5; `CONTEST_THREADS`, default 32; `CONTEST_KEYS`, default 100000;
//! `CONTEST_VALUE_BYTES`, default 8; `CONTEST_DIR`, default the system temp dir).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lamina_core::{KeyRange, OrderedIndex, WriteBatch};
use lamina_storage::{FileOptions, FileStorage};
use lamina_trie::{TrieEngine, TrieOptions};

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn main() {
    let seconds: f64 = env("CONTEST_SECONDS", 5.0);
    let threads: u64 = env("CONTEST_THREADS", 32);
    let keys: u64 = env("CONTEST_KEYS", 100_000);
    let value_bytes: usize = env("CONTEST_VALUE_BYTES", 8);
    let base = std::env::var("CONTEST_DIR").map_or_else(|_| std::env::temp_dir(), Into::into);
    let dir = base.join(format!("lamina-trie-contest-{}", std::process::id()));
    let storage = Arc::new(FileStorage::open_dir(&dir, FileOptions::default()).unwrap());
    // The log ring grows with the data (no budget).
    let options = TrieOptions::default();
    let db = TrieEngine::open(storage, options.clone()).unwrap();
    let value = vec![0x5au8; value_bytes];
    for chunk in (0..keys).collect::<Vec<_>>().chunks(10_000) {
        let mut batch = WriteBatch::new();
        for k in chunk {
            batch.put(k.to_be_bytes().to_vec(), value.clone());
        }
        db.write_batch(&batch).unwrap();
    }
    let syncs_before = db.stats().io.syncs;
    let stop = AtomicBool::new(false);
    let (ops_total, writes_total) = (AtomicU64::new(0), AtomicU64::new(0));
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (db, stop, ops_total, writes_total) = (&db, &stop, &ops_total, &writes_total);
            let value = value.clone();
            s.spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15 ^ ((t + 1) * 0x1234_5678_9abc);
                let (mut ops, mut writes) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = (x % keys).to_be_bytes();
                    match (x >> 40) % 100 {
                        0..45 => drop(std::hint::black_box(db.get(&key).unwrap())),
                        45..85 => {
                            db.put(&key, &value).unwrap();
                            writes += 1;
                        }
                        85..90 => {
                            db.delete(&key).unwrap();
                            writes += 1;
                        }
                        90..95 => {
                            let current = db.get(&key).unwrap();
                            let outcome =
                                db.compare_and_swap(&key, current.as_deref(), Some(&value));
                            std::hint::black_box(outcome.unwrap());
                            writes += 1;
                        }
                        _ => {
                            let limit = 1 + (x >> 20) as usize % 10;
                            let page = db.scan(&KeyRange::new(key.as_slice()..), limit);
                            std::hint::black_box(page.unwrap());
                        }
                    }
                    ops += 1;
                }
                ops_total.fetch_add(ops, Ordering::Relaxed);
                writes_total.fetch_add(writes, Ordering::Relaxed);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = started.elapsed().as_secs_f64();
    let stats = db.stats();
    let syncs = stats.io.syncs - syncs_before;
    let ops = ops_total.load(Ordering::Relaxed);
    let writes = writes_total.load(Ordering::Relaxed);
    println!(
        "| threads | keys | value bytes | requests/s | durable writes/s | syncs/s | writes per sync |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| {threads} | {keys} | {value_bytes} | {:.0} | {:.0} | {:.0} | {:.1} |",
        ops as f64 / elapsed,
        writes as f64 / elapsed,
        syncs as f64 / elapsed,
        writes as f64 / syncs.max(1) as f64
    );
    println!("stats {:?}", stats.extra);
    db.close().unwrap();
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
