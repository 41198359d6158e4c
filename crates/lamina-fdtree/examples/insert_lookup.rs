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
    let rounds: u64 = std::env::var("LOOKUP_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(1);
    let t = Instant::now();
    let mut found = 0;
    for _ in 0..rounds {
        for i in (0..n).step_by(2) {
            found += usize::from(db.get(&key(i)).unwrap().is_some());
        }
    }
    let lookup_s = t.elapsed().as_secs_f64() / rounds as f64;
    println!(
        "{n} inserts: {:.0}/s; settle {settle_s:.2}s; {} lookups ({found} found): {:.0}/s \
         ({:.2} us); labels {:?}, blocks {:?}, runs {}",
        n as f64 / insert_s,
        n / 2,
        (n / 2) as f64 / lookup_s,
        lookup_s * 1e6 / (n / 2) as f64,
        shape.0,
        shape.1,
        shape.2
    );
    let s = db.stats();
    println!("io {:?}", s.io);
    db.close().unwrap();
}
