//! The SIGMOD 2011 contest mix with logging off (the paper's Figure 6 analog): `trie` vs
//! `mem` at 1 and 2 threads with 8, 1024 and 4096-byte values.
//!
//! `cargo bench -p lamina-trie --bench contest_mix` (optional env: `CONTEST_SECONDS`, per
//! run, default 2; `CONTEST_THREADS`, default "1,2"; `CONTEST_VALUES`, default
//! "8,1024,4096"; `CONTEST_ENGINES`, default "mem,trie", to profile one engine alone;
//! `CONTEST_PREFIX_BITS`, the trie's k', default 4). `mem` is the real
//! `lamina_mem::MemEngine::volatile()`. Mix per operation: 45% get, 40% put,
//! 5% delete, 5% compare-and-swap (a get then a CAS from the value read), 5% scan of 1 to
//! 10 pairs from a random key. Keys: 8-byte big-endian integers drawn uniformly from a
//! range populated beforehand (1M keys for 8-byte values; fewer for larger values so the
//! data stays near 256 MiB per engine on this shared machine).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lamina_core::{KeyRange, OrderedIndex};
use lamina_mem::MemEngine;
use lamina_trie::{TrieEngine, TrieOptions};

const DATA_BYTES_TARGET: u64 = 256 << 20;
const KEYS_MAX: u64 = 1_000_000;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn populate(db: &dyn OrderedIndex, keys: u64, value: &[u8]) {
    for k in 0..keys {
        db.put(&k.to_be_bytes(), value).unwrap();
    }
}

/// CPU time the calling thread has run, in nanoseconds (Linux `schedstat`; 0 elsewhere).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// Runs the mix on `threads` threads for `run`; returns operations per wall-clock second
/// and per CPU second (the latter is robust to other processes taking the cores).
fn run_mix(
    db: &dyn OrderedIndex,
    threads: u64,
    keys: u64,
    value_bytes: usize,
    run: Duration,
) -> (f64, f64) {
    let stop = AtomicBool::new(false);
    let ops_total = AtomicU64::new(0);
    let cpu_ns_total = AtomicU64::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (stop, ops_total, cpu_ns_total) = (&stop, &ops_total, &cpu_ns_total);
            s.spawn(move || {
                let cpu_start = thread_cpu_ns();
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((t + 1) * 0x1234_5678_9abc));
                let mut value = vec![0u8; value_bytes];
                let mut ops = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        let r = rng.next();
                        let key = (r % keys).to_be_bytes();
                        let dice = (r >> 40) % 100;
                        value[0] = r as u8;
                        match dice {
                            0..45 => {
                                std::hint::black_box(db.get(&key).unwrap());
                            }
                            45..85 => db.put(&key, &value).unwrap(),
                            85..90 => {
                                db.delete(&key).unwrap();
                            }
                            90..95 => {
                                let current = db.get(&key).unwrap();
                                let outcome =
                                    db.compare_and_swap(&key, current.as_deref(), Some(&value));
                                std::hint::black_box(outcome.unwrap());
                            }
                            _ => {
                                let limit = 1 + (r >> 20) as usize % 10;
                                let page = db.scan(&KeyRange::new(key.as_slice()..), limit);
                                std::hint::black_box(page.unwrap());
                            }
                        }
                        ops += 1;
                    }
                }
                ops_total.fetch_add(ops, Ordering::Relaxed);
                cpu_ns_total.fetch_add(thread_cpu_ns() - cpu_start, Ordering::Relaxed);
            });
        }
        std::thread::sleep(run);
        stop.store(true, Ordering::Relaxed);
    });
    let ops = ops_total.load(Ordering::Relaxed) as f64;
    let cpu_s = cpu_ns_total.load(Ordering::Relaxed) as f64 / 1e9;
    (ops / started.elapsed().as_secs_f64(), if cpu_s > 0.0 { ops / cpu_s } else { 0.0 })
}

fn main() {
    let seconds: f64 =
        std::env::var("CONTEST_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let threads: Vec<u64> = std::env::var("CONTEST_THREADS")
        .unwrap_or_else(|_| "1,2".into())
        .split(',')
        .map(|t| t.trim().parse().expect("thread counts"))
        .collect();
    let run = Duration::from_secs_f64(seconds);
    let engines_env = std::env::var("CONTEST_ENGINES").unwrap_or_else(|_| "mem,trie".into());
    let engines: Vec<&str> = engines_env.split(',').map(str::trim).collect();
    let prefix_bits: u32 =
        std::env::var("CONTEST_PREFIX_BITS").ok().map_or(4, |b| b.parse().expect("prefix bits"));
    println!(
        "| value bytes | keys | threads | mem Mops/s | trie Mops/s | trie / mem \
         | mem Mops/CPU-s | trie Mops/CPU-s | trie / mem per CPU-s |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let value_sizes: Vec<usize> = std::env::var("CONTEST_VALUES")
        .unwrap_or_else(|_| "8,1024,4096".into())
        .split(',')
        .map(|v| v.trim().parse().expect("value sizes"))
        .collect();
    for value_bytes in value_sizes {
        let keys = (DATA_BYTES_TARGET / (value_bytes as u64 + 8)).min(KEYS_MAX);
        let value = vec![0x5au8; value_bytes];
        for &t in &threads {
            let mut mem_ops = (f64::NAN, f64::NAN);
            if engines.contains(&"mem") {
                let mem = MemEngine::volatile();
                populate(&mem, keys, &value);
                mem_ops = run_mix(&mem, t, keys, value_bytes, run);
            }
            let mut trie_ops = (f64::NAN, f64::NAN);
            if engines.contains(&"trie") {
                let trie =
                    TrieEngine::volatile(TrieOptions::default().prefix_bits(prefix_bits)).unwrap();
                populate(&trie, keys, &value);
                trie_ops = run_mix(&trie, t, keys, value_bytes, run);
            }
            println!(
                "| {value_bytes} | {keys} | {t} | {:.3} | {:.3} | {:.2} | {:.3} | {:.3} | {:.2} |",
                mem_ops.0 / 1e6,
                trie_ops.0 / 1e6,
                trie_ops.0 / mem_ops.0,
                mem_ops.1 / 1e6,
                trie_ops.1 / 1e6,
                trie_ops.1 / mem_ops.1,
            );
        }
    }
}
