//! Inserts N random 8-byte keys with 128-byte values into a persistent tree in a temporary
//! directory (`Durability::None`), waits for the merges, then looks up N/2 of them: prints
//! the rates and the tree's shape. Not a benchmark (use `lamina bench`); a quick probe for
//! profiling: `cargo run --release -p lamina-fdtree --example insert_lookup -- 2000000`.

use std::time::Instant;

use lamina_core::OrderedIndex;
use lamina_fdtree::{FdTree, FdTreeOptions};

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let budget: u64 = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(32 << 20);
    let cache: usize = std::env::args().nth(3).and_then(|a| a.parse().ok()).unwrap_or(0);
    // DIR=path: the tree lives there and is kept (LOOKUP_ONLY=1 then reopens it and only
    // looks keys up: builds compared on one tree of one shape).
    let temp = tempfile::tempdir().unwrap();
    let dir_path = std::env::var_os("DIR").map_or_else(|| temp.path().to_owned(), Into::into);
    let lookup_only = std::env::var("LOOKUP_ONLY").is_ok_and(|v| v == "1");
    let options = FdTreeOptions {
        memory_budget_bytes: budget,
        cache_bytes: cache,
        durability: lamina_core::Durability::None,
        segment_bytes: std::env::var("SEGMENT_BYTES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(4096),
        ..FdTreeOptions::default()
    };
    let db = FdTree::open_dir(&dir_path, &options).unwrap();
    let key = |i: u64| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes();
    let value = [7u8; 128];
    let t = Instant::now();
    for i in (0..n).filter(|_| !lookup_only) {
        db.put(&key(i), &value).unwrap();
    }
    let insert_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    // SETTLE=0: look keys up at once, beside the merges the inserts left running (what the
    // `scale` experiment's lookup phase sees).
    if std::env::var("SETTLE").map_or(true, |s| s != "0") {
        db.flush().unwrap();
        db.wait_for_merges().unwrap();
    }
    let settle_s = t.elapsed().as_secs_f64();
    let shape =
        db.with_tree(|t| (t.materialized_labels(), t.level_blocks(), t.run_count())).unwrap();
    // LOOKUPS=k: only the first k of the n/2 lookups (for callgrind).
    let lookups: usize =
        std::env::var("LOOKUPS").ok().and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
    let rounds: u64 = std::env::var("LOOKUP_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let progress = std::env::var("PROGRESS").is_ok_and(|v| v == "1");
    let mapped_before = db.with_tree(lamina_fdtree::Tree::mapped_reads).unwrap();
    let t = Instant::now();
    let mut found = 0;
    for _ in 0..rounds {
        let mut lap = Instant::now();
        let mut slowest_us = 0.0f64;
        for (j, i) in (0..n).step_by(2).take(lookups).enumerate() {
            let one = progress.then(Instant::now);
            found += usize::from(db.get(&key(i)).unwrap().is_some());
            // PROGRESS=1: the rate of every 200,000 lookups, the slowest and the runs.
            if let Some(one) = one {
                slowest_us = slowest_us.max(one.elapsed().as_secs_f64() * 1e6);
                if j % 200_000 == 199_999 {
                    let runs = db.with_tree(lamina_fdtree::Tree::run_count).unwrap();
                    let us = lap.elapsed().as_secs_f64() * 1e6 / 200_000.0;
                    eprintln!(
                        "  lookups {}: {us:.2} us each, max {slowest_us:.0}, runs {runs}",
                        j + 1
                    );
                    lap = Instant::now();
                    slowest_us = 0.0;
                }
            }
        }
    }
    let lookup_s = t.elapsed().as_secs_f64() / rounds as f64;
    let looked_up = (n / 2).min(lookups as u64);
    println!(
        "{n} inserts: {:.0}/s; settle {settle_s:.2}s; {} lookups ({found} found): {:.0}/s \
         ({:.2} us); labels {:?}, blocks {:?}, runs {}",
        n as f64 / insert_s,
        looked_up,
        looked_up as f64 / lookup_s,
        lookup_s * 1e6 / looked_up as f64,
        shape.0,
        shape.1,
        shape.2
    );
    let mapped = db.with_tree(lamina_fdtree::Tree::mapped_reads).unwrap() - mapped_before;
    println!(
        "segments read in place per lookup: {:.3}",
        mapped as f64 / (rounds * looked_up) as f64
    );
    let s = db.stats();
    println!("io {:?}", s.io);
    db.close().unwrap();
}
