//! Compares the concurrency modes on one workload: one writer inserts N random keys while
//! one reader looks up keys already inserted; every operation is timed. Reports mean, p99
//! and worst insert and lookup latency, merges, and the peak bytes on storage (`IoStats::
//! live_bytes_peak`) against the final size. Memory backend, volatile, 4 KiB blocks,
//! `gamma` 24, `L_0` 256 KiB (the paper's defaults scaled, as in `insert_lookup`).
//!
//! `cargo run --release -p lamina-fdtree --example modes -- 300000 [cache_bytes]` (the block
//! cache is off by default here: on the memory backend a storage read is a copy, cheaper
//! than the cache's bookkeeping).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use lamina_core::{Durability, OrderedIndex};
use lamina_fdtree::{FcMode, FdTree, FdTreeOptions};
use lamina_storage::MemoryStorage;

fn key(i: u64) -> [u8; 8] {
    (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555).to_be_bytes()
}

/// Mean, p99 and max of latencies in microseconds.
fn summary(mut us: Vec<f64>) -> String {
    if us.is_empty() {
        return "none".into();
    }
    us.sort_by(f64::total_cmp);
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    let p99 = us[(us.len() * 99 / 100).min(us.len() - 1)];
    let max = us[us.len() - 1];
    format!("n {:>7}  mean {mean:>8.1} us  p99 {p99:>8.1} us  max {max:>10.1} us", us.len())
}

fn run(mode: FcMode, n: u64, cache_bytes: usize) -> lamina_core::Result<()> {
    let options = FdTreeOptions {
        memory_budget_bytes: 256 << 10,
        block_bytes: 4096,
        size_ratio: 24,
        key_bytes_max: 16,
        value_bytes_max: 128,
        durability: Durability::None,
        mode,
        cache_bytes,
        ..FdTreeOptions::default()
    };
    let db = match FdTree::with_storage(Arc::new(MemoryStorage::new()), &options, false) {
        Ok(db) => Arc::new(db),
        Err(e) => {
            println!("{mode:?}: {e}");
            return Ok(());
        }
    };
    let inserted = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (db, inserted, done) = (db.clone(), inserted.clone(), done.clone());
        std::thread::spawn(move || -> lamina_core::Result<Vec<f64>> {
            let mut lat = Vec::new();
            let mut x = 7u64;
            while !done.load(Ordering::Relaxed) {
                let upto = inserted.load(Ordering::Acquire);
                if upto == 0 {
                    std::thread::yield_now();
                    continue;
                }
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let k = key((x >> 11) % upto);
                let t = Instant::now();
                let found = db.get(&k)?;
                lat.push(t.elapsed().as_secs_f64() * 1e6);
                assert!(found.is_some(), "an inserted key is missing");
            }
            Ok(lat)
        })
    };
    let value = [7u8; 128];
    let mut insert_us = Vec::with_capacity(n as usize);
    let start = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        db.put(&key(i), &value)?;
        insert_us.push(t.elapsed().as_secs_f64() * 1e6);
        inserted.store(i + 1, Ordering::Release);
    }
    let insert_s = start.elapsed().as_secs_f64();
    db.wait_for_merges()?;
    done.store(true, Ordering::Relaxed);
    let lookup_us = reader.join().expect("reader thread")?;
    let stats = db.stats();
    let extra = |name: &str| stats.extra.iter().find(|(k, _)| *k == name).map_or(0, |e| e.1);
    println!("{mode:?}: {n} inserts in {insert_s:.2} s ({:.0}/s)", n as f64 / insert_s);
    println!("  insert {}", summary(insert_us));
    println!("  lookup {}", summary(lookup_us));
    println!(
        "  merges {} (full {}), height {}; storage: final {} KiB, peak {} KiB ({:.2}x)",
        extra("merges_overflow"),
        extra("merges_full"),
        extra("height"),
        stats.io.live_bytes >> 10,
        stats.io.live_bytes_peak >> 10,
        stats.io.live_bytes_peak as f64 / stats.io.live_bytes.max(1) as f64
    );
    db.close()
}

fn main() -> lamina_core::Result<()> {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300_000);
    let cache_bytes: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(0);
    for mode in [FcMode::Xm, FcMode::Ds, FcMode::Fc] {
        run(mode, n, cache_bytes)?;
    }
    Ok(())
}
