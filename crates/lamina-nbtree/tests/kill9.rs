//! kill -9 under load (issue 16: "kill -9 under load loses nothing acknowledged"): a child
//! process (this test binary, re-run) writes from two threads with `Durability::Sync` and a
//! small sigma, so flushes, splits and commits are in progress when it dies, and reports
//! each write once it is acknowledged; the parent kills it with SIGKILL at a varying point,
//! reopens the directory and checks every acknowledged write, three rounds over the same
//! directory.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use lamina_core::{Durability, OpenIntent, OrderedIndex};
use lamina_nbtree::options::SIGMA_BYTES_MIN;
use lamina_nbtree::{Deamortization, NbTree, NbTreeOptions};

const CHILD_ENV: &str = "LAMINA_NBTREE_KILL9_DIR";
const ROUND_ENV: &str = "LAMINA_NBTREE_KILL9_ROUND";
const TEST_NAME: &str = "kill_9_under_load_loses_nothing_acknowledged";

fn options(intent: OpenIntent) -> NbTreeOptions {
    NbTreeOptions {
        sigma_bytes: SIGMA_BYTES_MIN * 2,
        page_bytes: 1024,
        durability: Durability::Sync,
        deamortization: Deamortization::Background,
        intent,
        ..NbTreeOptions::default()
    }
}

fn value(key: &str) -> Vec<u8> {
    let mut v = key.as_bytes().repeat(4);
    v.truncate(100);
    v
}

/// The child: writes until killed, printing `ack <key>` after each acknowledged put.
fn child(dir: &str, round: u32) {
    let intent = if round == 0 { OpenIntent::CreateIfMissing } else { OpenIntent::MustExist };
    let db = NbTree::open_dir(dir, &options(intent)).unwrap();
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
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        let round = std::env::var(ROUND_ENV).unwrap().parse().unwrap();
        child(&dir, round);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut acked = Vec::new();
    for round in 0..3u32 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
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
        let db = NbTree::open_dir(dir.path(), &options(OpenIntent::MustExist)).unwrap();
        for key in &acked {
            assert_eq!(
                db.get(key.as_bytes()).unwrap(),
                Some(value(key)),
                "round {round}: acknowledged key {key} lost"
            );
        }
        db.verify().unwrap();
        db.close().unwrap();
    }
    let db = NbTree::open_dir(dir.path(), &options(OpenIntent::MustExist)).unwrap();
    let flushes = db.stats().extra.iter().find(|(n, _)| *n == "s_tree_height").unwrap().1;
    assert!(flushes >= 2, "the load must have flushed the root (s-tree height {flushes})");
}
