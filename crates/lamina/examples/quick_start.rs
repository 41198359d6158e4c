//! A durable quick start with the default engine: open, write, read, compare-and-swap,
//! close, reopen and find everything again.
//!
//! `cargo run -p lamina --example quick_start` (in a temporary directory: pass your own
//! path to `Db::open` in an application).

use lamina::{Db, Options};

/// Runs the example.
pub fn main() -> lamina::Result<()> {
    let temp = tempfile::tempdir().expect("a temporary directory");
    let dir = temp.path().join("quick-start.db"); // created if missing

    // Options::new(): the default engine (the FD+tree) with Durability::Sync, so each
    // acknowledged write survives a crash or power loss.
    let db = Db::open(&dir, Options::new())?;
    db.put("user:1", "ada")?;
    db.put("user:2", "grace")?;
    assert_eq!(db.get("user:1")?.as_deref(), Some(&b"ada"[..]));
    // Compare-and-swap: only replaces the value it expects.
    assert!(db.compare_and_swap("user:2", Some(b"grace"), Some(b"hopper"))?.is_swapped());
    assert!(!db.compare_and_swap("user:2", Some(b"grace"), None)?.is_swapped());
    assert!(db.delete("user:1")?);
    db.close()?;
    drop(db); // releases the directory's lock

    let db = Db::open(&dir, Options::new())?;
    assert_eq!(db.get("user:1")?, None);
    assert_eq!(db.get("user:2")?.as_deref(), Some(&b"hopper"[..]));
    println!("{}: {} engine, stats {:?}", dir.display(), db.engine(), db.stats().keys);
    db.close()
}
