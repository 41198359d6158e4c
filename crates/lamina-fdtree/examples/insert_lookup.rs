//! A quick single-threaded measurement: N random inserts (8-byte keys, 128-byte values), then
//! N/10 random lookups, on the memory backend (volatile) or a directory (Durability::None).
//!
//! `cargo run --release -p lamina-fdtree --example insert_lookup -- 1000000 [dir]`

use std::sync::Arc;
use std::time::Instant;

use lamina_core::{Durability, OrderedIndex};
use lamina_fdtree::{FdTree, FdTreeOptions};
use lamina_storage::MemoryStorage;

fn main() -> lamina_core::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let dir = args.next();
    let options = FdTreeOptions {
        memory_budget_bytes: 256 << 10,
        block_bytes: 4096,
        size_ratio: 24,
        key_bytes_max: 16,
        value_bytes_max: 128,
        durability: Durability::None,
        ..FdTreeOptions::default()
    };
    let db = match &dir {
        Some(d) => FdTree::open_dir(d, &options)?,
        None => FdTree::with_storage(Arc::new(MemoryStorage::new()), &options, false)?,
    };
    let key = |i: u64| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555).to_be_bytes();
    let value = [7u8; 128];
    let start = Instant::now();
    for i in 0..n {
        db.put(&key(i), &value)?;
    }
    let insert_s = start.elapsed().as_secs_f64();
    let io_after_insert = db.stats().io;
    let start = Instant::now();
    let lookups = n / 10;
    for i in 0..lookups {
        let k = key(i.wrapping_mul(7919) % n);
        assert!(db.get(&k)?.is_some());
    }
    let lookup_s = start.elapsed().as_secs_f64();
    let stats = db.stats();
    let io = stats.io.since(&io_after_insert);
    println!("inserts: {n} in {insert_s:.2} s = {:.0}/s", n as f64 / insert_s);
    println!("lookups: {lookups} in {lookup_s:.2} s = {:.0}/s", lookups as f64 / lookup_s);
    println!("block reads per lookup: {:.2}", io.reads() as f64 / lookups as f64);
    println!(
        "write amplification: {:.2}; blocks written during inserts: {}",
        stats.write_amplification(),
        io_after_insert.blocks_written
    );
    println!("{:?}", stats.extra);
    db.close()
}
