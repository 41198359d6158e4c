//! Ordered iteration: a range, a prefix, and both in reverse.
//!
//! `cargo run -p lamina --example range_scan`

use lamina::{Db, Options};

fn show(
    title: &str,
    iter: impl Iterator<Item = lamina::Result<lamina::Entry>>,
) -> lamina::Result<()> {
    print!("{title}:");
    for entry in iter {
        let (key, value) = entry?;
        print!(" {}={}", String::from_utf8_lossy(&key), String::from_utf8_lossy(&value));
    }
    println!();
    Ok(())
}

/// Runs the example.
pub fn main() -> lamina::Result<()> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = Db::open(dir.path(), Options::new())?;
    for (city, country) in
        [("city:lyon", "fr"), ("city:nice", "fr"), ("city:oslo", "no"), ("city:paris", "fr")]
    {
        db.put(city, country)?;
    }
    db.put("country:fr", "France")?;
    db.put("country:no", "Norway")?;

    // Any std range of byte-string-like keys: "a".."b", b"a"..=b"b", "a".., .., ...
    show("cities from m to p", db.range("city:m".."city:p"))?;
    show("everything, greatest key first", db.range(..).rev())?;
    // Every key with a prefix, and the same backwards (the last two cities).
    show("cities", db.prefix("city:"))?;
    show("last two cities", db.prefix("city:").rev().take(2))?;
    db.close()
}
