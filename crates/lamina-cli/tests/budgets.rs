//! `--disk-budget-bytes` and `--memory-limit-bytes` reach the database (the names the
//! library's `NoSpace` errors advise), and an engine that cannot enforce one refuses it.

use std::process::Command;

fn lamina(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lamina")).args(args).output().expect("run lamina")
}

#[test]
fn budget_flags_reach_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    let ok = lamina(&[
        "--dir",
        db,
        "--engine",
        "trie",
        "--disk-budget-bytes",
        "1073741824",
        "--memory-limit-bytes",
        "1073741824",
        "put",
        "k",
        "v",
    ]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    // A memory limit below the minimum is refused, naming the option.
    let low = lamina(&["--dir", db, "--memory-limit-bytes", "4096", "put", "k", "w"]);
    assert!(!low.status.success());
    assert!(String::from_utf8_lossy(&low.stderr).contains("--memory-limit-bytes"));
    // The default engine (fdtree) enforces a disk budget too, but not a memory limit (its
    // memory is bounded by its memory budget and cache).
    let other = dir.path().join("other");
    let other = other.to_str().unwrap();
    let ok = lamina(&["--dir", other, "--disk-budget-bytes", "1073741824", "put", "k", "v"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let refused = lamina(&["--dir", other, "--memory-limit-bytes", "1073741824", "put", "k", "v"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("memory_limit_bytes"));
}
