//! kill -9 under load (issue 18: "kill -9 under load loses nothing acknowledged"): a child
//! process (this test binary, re-run) writes from two threads with `Durability::Sync`, a small
//! `U` and small memory (buffers empty, nodes split) and a small `checkpoint_log_bytes`
//! (checkpoints run in the background while it writes), and reports each write once it is
//! acknowledged; the parent kills it with SIGKILL at a varying point, reopens the directory
//! and checks every acknowledged write and the tree's invariants, three rounds over the same
//! directory, for `latree` and `latree-btree`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use lamina_core::{Durability, OpenIntent, OrderedIndex};
use lamina_latree::engine::CHECKPOINT_LOG_BYTES_MIN;
use lamina_latree::{LaTreeEngine, LaTreeEngineOptions};
use lamina_storage::DeviceProfile;

const CHILD_ENV: &str = "LAMINA_LATREE_KILL9_DIR";
const ROUND_ENV: &str = "LAMINA_LATREE_KILL9_ROUND";
const BUFFERED_ENV: &str = "LAMINA_LATREE_KILL9_BUFFERED";

fn options(buffered: bool, intent: OpenIntent) -> LaTreeEngineOptions {
    let mut options = LaTreeEngineOptions::for_device(DeviceProfile::ssd_msp7525());
    options.tree.buffered = buffered;
    options.tree.buffer_entries_max = 128;
    options.tree.memory_bytes = 256 << 10;
    options.durability = Durability::Sync;
    options.intent = intent;
    options.checkpoint_log_bytes = CHECKPOINT_LOG_BYTES_MIN * 8;
    options
}

fn value(key: &str) -> Vec<u8> {
    let mut v = key.as_bytes().repeat(4);
    v.truncate(100);
    v
}

/// The child: writes until killed, printing `ack <key>` after each acknowledged put.
fn child(dir: &str, round: u32, buffered: bool) {
    let intent = if round == 0 { OpenIntent::CreateIfMissing } else { OpenIntent::MustExist };
    let db = LaTreeEngine::open_dir(dir, &options(buffered, intent)).unwrap();
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

fn run(buffered: bool, test_name: &str) {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        let round = std::env::var(ROUND_ENV).unwrap().parse().unwrap();
        let child_buffered = std::env::var(BUFFERED_ENV).unwrap() == "1";
        if child_buffered == buffered {
            child(&dir, round, buffered);
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut acked = Vec::new();
    for round in 0..3u32 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", test_name, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .env(ROUND_ENV, round.to_string())
            .env(BUFFERED_ENV, if buffered { "1" } else { "0" })
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
        let db =
            LaTreeEngine::open_dir(dir.path(), &options(buffered, OpenIntent::MustExist)).unwrap();
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
    let db = LaTreeEngine::open_dir(dir.path(), &options(buffered, OpenIntent::MustExist)).unwrap();
    let stats = db.verify().unwrap();
    assert!(stats.root_level >= 1, "the load must have split the root ({stats:?})");
    assert!(stats.leaf_entries + stats.buffer_entries >= acked.len() as u64, "{stats:?}");
    db.close().unwrap();
}

#[test]
fn kill_9_under_load_loses_nothing_acknowledged_latree() {
    run(true, "kill_9_under_load_loses_nothing_acknowledged_latree");
}

#[test]
fn kill_9_under_load_loses_nothing_acknowledged_latree_btree() {
    run(false, "kill_9_under_load_loses_nothing_acknowledged_latree_btree");
}
