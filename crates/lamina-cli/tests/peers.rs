//! The peer engines through the CLI: listed and runnable with feature `peers`, refused with an
//! error naming the feature without it.

use std::process::{Command, Output};

fn lamina(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lamina")).args(args).output().expect("run lamina")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[cfg(not(feature = "peers"))]
#[test]
fn a_peer_without_the_feature_names_it() {
    let out = lamina(&["bench", "--engines", "mem,leveldb", "--ops", "10"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("`peers` feature") && stderr.contains("leveldb"), "{stderr}");
    let listed = text(&lamina(&["engines"]).stdout);
    assert!(!listed.contains("rocksdb"), "{listed}");
}

#[cfg(feature = "peers")]
#[test]
fn peers_are_listed_and_run() {
    let listed = text(&lamina(&["engines"]).stdout);
    for name in ["rocksdb", "leveldb-tuned", "lmdb", "bdb", "wiredtiger-btree", "wiredtiger-lsm"] {
        assert!(listed.lines().any(|l| l.starts_with(&format!("{name}\t"))), "{listed}");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = lamina(&[
        "bench",
        "--dir",
        dir.path().to_str().unwrap(),
        "--engines",
        "mem,rocksdb,leveldb,lmdb,bdb,wiredtiger-btree",
        "--ops",
        "500",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("wiredtiger-btree"), "{stdout}");
}

#[cfg(feature = "peers")]
#[test]
fn scale_ratios_are_to_the_best_peer() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = lamina(&[
        "bench",
        "--quiet",
        "--experiment",
        "scale",
        "--ops",
        "2000",
        "--engines",
        "mem,leveldb-tuned,lmdb",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let scale = &report["scale"];
    let best = scale["best_peers"]["insert_ops_s"]["engine"].as_str().unwrap();
    assert!(["leveldb-tuned", "lmdb"].contains(&best), "{scale}");
    for row in scale["engines"].as_array().unwrap() {
        assert_eq!(row["keys_verified"], 1000, "{row}");
        let ratio = row["lookup"]["throughput_x_best_peer"].as_f64().unwrap();
        assert!(ratio > 0.0, "{row}");
        if row["peer"].as_bool().unwrap() {
            assert!(ratio <= 1.0 + 1e-9, "no peer beats the best peer: {row}");
        }
    }
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("Best peers: inserts/s"), "{md}");
}
