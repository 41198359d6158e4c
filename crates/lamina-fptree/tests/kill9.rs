//! kill -9 under load (issue 19: "kill -9 under load with the file-backed region loses nothing
//! acknowledged"): a child process (this test binary, re-run) writes from two threads into a
//! region file and reports each put once it returned; the parent kills it with SIGKILL at a
//! varying point, reopens the file, and checks every acknowledged write, the absence of any
//! persistent leak and the rebuilt inner nodes, three rounds over the same file. (On a
//! page-cache file a killed process loses no store it made, so this checks recovery from the
//! state at an arbitrary instant of concurrent operations; lost and torn persists are covered
//! by `crash_recovery.rs`.)

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use lamina_core::{Durability, OpenIntent, OrderedIndex};
use lamina_fptree::{FpTreeEngine, FpTreeEngineOptions};
use lamina_storage::pmem::MmapRegion;

const CHILD_ENV: &str = "LAMINA_FPTREE_KILL9_FILE";
const ROUND_ENV: &str = "LAMINA_FPTREE_KILL9_ROUND";
const TEST_NAME: &str = "kill_9_under_load_loses_nothing_acknowledged";

fn options(intent: OpenIntent) -> FpTreeEngineOptions {
    FpTreeEngineOptions {
        region_bytes: 64 << 20,
        durability: Durability::None,
        intent,
        ..FpTreeEngineOptions::default()
    }
}

fn value(key: &str) -> Vec<u8> {
    let mut v = key.as_bytes().repeat(4);
    v.truncate(70);
    v
}

fn open(path: &Path, intent: OpenIntent) -> FpTreeEngine<MmapRegion> {
    FpTreeEngine::open_file(path, &options(intent)).unwrap()
}

/// The child: writes (and deletes every fifth key it wrote) until killed, printing `ack <key>`
/// after each acknowledged put of a key it keeps.
fn child(path: &Path, round: u32) {
    let intent = if round == 0 { OpenIntent::CreateIfMissing } else { OpenIntent::MustExist };
    let db = open(path, intent);
    let out = std::sync::Mutex::new(std::io::stdout());
    std::thread::scope(|s| {
        for t in 0..2 {
            let (db, out) = (&db, &out);
            s.spawn(move || {
                for i in 0u64.. {
                    let key = format!(
                        "r{round}-t{t}-{:08}",
                        i.wrapping_mul(2_654_435_761) % 1_000_000_007
                    );
                    db.put(key.as_bytes(), &value(&key)).unwrap();
                    if i % 5 == 4 {
                        assert!(db.delete(key.as_bytes()).unwrap());
                        continue;
                    }
                    let mut out = out.lock().unwrap();
                    writeln!(out, "ack {key}").unwrap();
                    out.flush().unwrap();
                }
            });
        }
    });
}

#[test]
fn kill_9_under_load_loses_nothing_acknowledged() {
    if let Ok(path) = std::env::var(CHILD_ENV) {
        child(Path::new(&path), std::env::var(ROUND_ENV).unwrap().parse().unwrap());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fptree.pmem");
    let mut acked = Vec::new();
    for round in 0..3u32 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .env(ROUND_ENV, round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let target = 1500 + 700 * round as usize;
        let mut seen = 0;
        for line in stdout.lines() {
            let line = line.unwrap();
            if let Some(key) = line.strip_prefix("ack ") {
                acked.push(key.to_string());
                seen += 1;
                if seen == target {
                    child.kill().unwrap(); // SIGKILL
                    break;
                }
            }
        }
        child.wait().unwrap();
        assert_eq!(seen, target, "round {round}: the child stopped before being killed");
        let db = open(&path, OpenIntent::MustExist);
        for key in &acked {
            assert_eq!(
                db.get(key.as_bytes()).unwrap(),
                Some(value(key)),
                "round {round}: acknowledged key {key} lost"
            );
        }
        common::check_tree(db.tree()).unwrap();
        db.close().unwrap();
    }
    let db = open(&path, OpenIntent::MustExist);
    assert!(db.tree().stats().leaves > 10, "{:?}", db.tree().stats());
    db.close().unwrap();
}
