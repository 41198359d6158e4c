//! Many threads on one database: each writes atomic batches, and all increment one shared
//! counter with compare-and-swap retries, so no increment is lost.
//!
//! `cargo run -p lamina --example threads_batches_cas`

use lamina::{Db, Options, WriteBatch};

const THREADS: u64 = 4;
const BATCHES_PER_THREAD: u64 = 50;
const KEYS_PER_BATCH: u64 = 10;

fn increment(db: &Db, key: &str) -> lamina::Result<u64> {
    loop {
        let current = db.get(key)?;
        let count = current.as_deref().map_or(0, |v| u64::from_be_bytes(v.try_into().unwrap()));
        let next = (count + 1).to_be_bytes();
        if db.compare_and_swap(key, current.as_deref(), Some(&next))?.is_swapped() {
            return Ok(count + 1);
        }
        // Another thread won the race: read again and retry.
    }
}

/// Runs the example.
pub fn main() -> lamina::Result<()> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = Db::open(dir.path(), Options::new())?;
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let db = &db; // Db is Send + Sync: share it by reference (or Arc).
            scope.spawn(move || -> lamina::Result<()> {
                for batch_index in 0..BATCHES_PER_THREAD {
                    let mut batch = WriteBatch::new();
                    for i in 0..KEYS_PER_BATCH {
                        batch.put(format!("t{thread}/b{batch_index:03}/{i}"), "value");
                    }
                    db.write_batch(&batch)?; // all of it or none, to readers and after a crash
                    increment(db, "counter")?;
                }
                Ok(())
            });
        }
    });
    let counter = db.get("counter")?.expect("the counter exists");
    let count = u64::from_be_bytes(counter.try_into().unwrap());
    assert_eq!(count, THREADS * BATCHES_PER_THREAD, "no increment lost");
    let written = db.prefix("t").count() as u64;
    assert_eq!(written, THREADS * BATCHES_PER_THREAD * KEYS_PER_BATCH);
    println!("{THREADS} threads: {written} keys in batches, counter = {count}");
    db.close()
}
