//! Point lookups at scale: `trie` alone, volatile, N uniformly scattered 8-byte keys with
//! 128-byte values (the `scale` experiment's shape), then rounds of random lookups of
//! inserted keys, one thread.
//!
//! `cargo bench -p lamina-trie --bench lookups_at_scale` (optional env: `LOOKUP_KEYS`,
//! default 10,000,000; `LOOKUPS`, per round, default 1,000,000; `LOOKUP_ROUNDS`, default 5;
//! `LOOKUP_VALUE_BYTES`, default 128).
//!
//! Reports lookups per wall-clock second and per CPU-second of the looking-up thread (from
//! `/proc/thread-self/schedstat`), the latter robust to other processes taking the cores,
//! for each round and the median. A benchmark, not a test: nothing is asserted on time.

use std::time::Instant;

use lamina_core::OrderedIndex;
use lamina_trie::{TrieEngine, TrieOptions};

/// SplitMix64's output function: a bijection of u64, so every key is distinct.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn key(i: u64) -> [u8; 8] {
    mix(i.wrapping_add(0x5ca1e)).to_be_bytes()
}

/// CPU time the calling thread has run, in nanoseconds (Linux `schedstat`; 0 elsewhere).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let keys = env_u64("LOOKUP_KEYS", 10_000_000).max(1);
    let lookups = env_u64("LOOKUPS", 1_000_000).max(1);
    let rounds = env_u64("LOOKUP_ROUNDS", 5).max(1);
    let value_bytes = usize::try_from(env_u64("LOOKUP_VALUE_BYTES", 128)).expect("value size");
    let db = TrieEngine::volatile(TrieOptions::default()).expect("open");
    let value = vec![0x5au8; value_bytes];
    let started = Instant::now();
    for i in 0..keys {
        db.put(&key(i), &value).expect("put");
    }
    let fill_s = started.elapsed().as_secs_f64();
    println!(
        "trie: {keys} keys of 8 bytes, {value_bytes}-byte values, filled in {fill_s:.1} s; \
         memory {:.0} B/record",
        db.stats().memory_bytes as f64 / keys as f64
    );
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    let mut state = 0x1234_5678_9abc_def0u64;
    for round in 0..rounds {
        let (wall_start, cpu_start) = (Instant::now(), thread_cpu_ns());
        let mut found = 0u64;
        for _ in 0..lookups {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let i = mix(state) % keys;
            found += u64::from(db.get(&key(i)).expect("get").is_some());
        }
        let wall_s = wall_start.elapsed().as_secs_f64();
        let cpu_s = (thread_cpu_ns() - cpu_start) as f64 / 1e9;
        assert_eq!(found, lookups, "every looked-up key was inserted");
        wall.push(lookups as f64 / wall_s);
        if cpu_s > 0.0 {
            cpu.push(lookups as f64 / cpu_s);
        }
        println!(
            "round {round}: {:.0} lookups/s wall, {:.0} lookups/CPU-s",
            lookups as f64 / wall_s,
            lookups as f64 / cpu_s.max(f64::MIN_POSITIVE)
        );
    }
    println!(
        "median: {:.0} lookups/s wall, {:.0} lookups/CPU-s",
        median(&mut wall),
        if cpu.is_empty() { 0.0 } else { median(&mut cpu) }
    );
}
