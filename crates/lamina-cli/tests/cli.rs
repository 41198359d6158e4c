//! The `lamina` binary end to end: data commands across processes, and every error path
//! exits non-zero with one line and changes nothing.

use std::path::Path;
use std::process::{Command, Output};

fn lamina(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lamina"))
        .arg("--dir")
        .arg(dir)
        .args(args)
        .output()
        .expect("run lamina")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

#[test]
fn put_get_delete_scan_across_processes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (k, v) in [("b", "2"), ("a", "1"), ("c", "3")] {
        let out = lamina(&db, &["put", k, v]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = lamina(&db, &["get", "a"]);
    assert_eq!(stdout(&out), "1\n");
    let out = lamina(&db, &["scan"]);
    assert_eq!(stdout(&out), "a\t1\nb\t2\nc\t3\n");
    let out = lamina(&db, &["scan", "--from", "b", "--limit", "1"]);
    assert_eq!(stdout(&out), "b\t2\n");
    let out = lamina(&db, &["scan", "--to", "b"]);
    assert_eq!(stdout(&out), "a\t1\n");
    assert!(lamina(&db, &["delete", "b"]).status.success());
    let out = lamina(&db, &["delete", "b"]);
    assert_eq!(out.status.code(), Some(1));
    let out = lamina(&db, &["get", "b"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not found"));
}

#[test]
fn oversized_key_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    assert!(lamina(&db, &["put", "k", "v"]).status.success());
    let long_key = "x".repeat(1025);
    let out = lamina(&db, &["put", &long_key, "v"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("1024-byte limit"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line, no backtrace: {err}");
    let out = lamina(&db, &["get", &long_key]);
    assert_eq!(out.status.code(), Some(2));
    for bound in ["--from", "--to"] {
        let out = lamina(&db, &["scan", bound, &long_key]);
        assert!(!out.status.success(), "scan {bound} with a 1025-byte key must be refused");
        assert!(stderr(&out).contains("1024-byte limit"), "{}", stderr(&out));
        assert_eq!(stdout(&out), "");
    }
    assert_eq!(stdout(&lamina(&db, &["scan"])), "k\tv\n");
    let big_value = "v".repeat(4097);
    let out = lamina(&db, &["put", "k", &big_value]);
    assert!(stderr(&out).contains("4096-byte limit"));
    assert_eq!(stdout(&lamina(&db, &["scan"])), "k\tv\n");
}

#[test]
fn a_refused_first_put_creates_no_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = lamina(&db, &["put", &"x".repeat(1025), "v"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!db.exists());
}

#[test]
fn hex_mode_handles_binary_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    assert!(lamina(&db, &["--hex", "put", "00ff", "0a0b"]).status.success());
    assert_eq!(stdout(&lamina(&db, &["--hex", "get", "00ff"])), "0a0b\n");
    assert_eq!(stdout(&lamina(&db, &["scan"])), "\\x00\\xff\t\\x0a\\x0b\n");
    let out = lamina(&db, &["--hex", "get", "xyz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("hexadecimal"));
}

#[test]
fn errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = lamina(&dir.path().join("db"), &["--engine", "nope", "put", "k", "v"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown engine `nope`"));
    // A directory that is not a lamina database.
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let out = lamina(dir.path(), &["get", "k"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a lamina database"), "{}", stderr(&out));
    // A missing database is not created by a read.
    let out = lamina(&dir.path().join("missing"), &["get", "k"]);
    assert!(stderr(&out).contains("no database at"));
    assert!(!dir.path().join("missing").exists());
    // No --dir.
    let out = Command::new(env!("CARGO_BIN_EXE_lamina")).args(["get", "k"]).output().unwrap();
    assert!(stderr(&out).contains("--dir"));
}

#[test]
fn engines_lists_every_engine_and_the_default() {
    let out = Command::new(env!("CARGO_BIN_EXE_lamina")).arg("engines").output().unwrap();
    assert!(out.status.success());
    let listed = stdout(&out);
    let first = listed.lines().next().unwrap();
    assert!(first.starts_with("fdtree (default)\t"), "{listed}");
    assert!(first.contains("`fdtree-fc`"), "the mode's name is given: {listed}");
    assert!(listed.contains("\nfdtree-xm\t") && listed.contains("\nmem\t"), "{listed}");
    assert!(listed.contains("\nnbtree\tNB-tree"), "{listed}");
    // `fdtree` and `fdtree-fc` name the same engine for the data commands too.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let engine = |name: &str, args: &[&str]| {
        let mut all = vec!["--engine", name];
        all.extend_from_slice(args);
        lamina(&db, &all)
    };
    assert!(engine("fdtree", &["put", "k", "v"]).status.success());
    let out = engine("fdtree-fc", &["get", "k"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "v\n");
}

#[test]
fn nbtree_is_selectable_and_recorded_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let out = lamina(&db, &["--engine", "nbtree", "put", "k", "v"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(lamina::Db::engine_of(&db).unwrap(), Some(lamina::EngineKind::Nbtree));
    // The database is nbtree's: another engine is refused, naming both.
    let out = lamina(&db, &["--engine", "trie", "get", "k"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("holds a `nbtree` database"), "{}", stderr(&out));
}

#[test]
fn nbtree_keeps_data_from_one_command_to_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    for (k, v) in [("b", "2"), ("a", "1"), ("c", "3")] {
        let out = lamina(&db, &["--engine", "nbtree", "put", k, v]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert!(lamina(&db, &["delete", "c"]).status.success());
    let out = lamina(&db, &["get", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "1\n");
    let out = lamina(&db, &["scan"]);
    assert_eq!(stdout(&out), "a\t1\nb\t2\n");
}
