//! `lamina bench` end to end: a small comparison, its output files, the record/replay
//! round trip, and one-line errors with a non-zero exit for bad flags.

use std::process::{Command, Output};

fn lamina(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lamina")).args(args).output().expect("run lamina")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn small_run_writes_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out/report.json");
    let csv = dir.path().join("timeline.csv");
    let plots = dir.path().join("plots");
    let out = lamina(&[
        "bench",
        "--engines",
        "mem",
        "--workload",
        "contest",
        "--threads",
        "2",
        "--ops",
        "3000",
        "--preload",
        "1000",
        "--json",
        json.to_str().unwrap(),
        "--csv-timeline",
        csv.to_str().unwrap(),
        "--plot",
        plots.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("micros/op") && stdout.contains("comparison"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], "lamina-bench");
    assert_eq!(report["runs"][0]["measured_ops"], 3000);
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("engine,round,series,x,y\n"));
    for chart in ["latency_over_time", "latency_cdf", "throughput_over_time", "comparison"] {
        for ext in ["png", "svg"] {
            let path = plots.join(format!("{chart}.{ext}"));
            assert!(std::fs::metadata(&path).unwrap().len() > 1000, "{}", path.display());
        }
    }
}

#[test]
fn recorded_trace_replays_with_dir_layout() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("w.trace");
    let out = lamina(&[
        "bench",
        "--workload",
        "gr",
        "--preload",
        "500",
        "--ops",
        "2000",
        "--record",
        trace.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data = dir.path().join("data");
    let out = lamina(&[
        "--dir",
        data.to_str().unwrap(),
        "bench",
        "--workload",
        "replay",
        "--trace",
        trace.to_str().unwrap(),
        "--warmup",
        "0",
        "--ops",
        "2000",
        "--json",
        dir.path().join("r.json").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report["runs"][0]["preload_ops"], 500);
    assert_eq!(report["runs"][0]["measured_ops"], 2000);
    // The engine's files are in DIR/E, reopenable with `lamina --dir DIR/E`.
    let out =
        lamina(&["--dir", data.join("mem").to_str().unwrap(), "scan", "--limit", "1", "--hex"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn bad_flags_fail_with_one_line() {
    for args in [
        &["bench", "--ops", "10", "--duration", "1"][..],
        &["bench", "--engines", "nope"],
        &["bench", "--durability", "sync", "--engines", "mem"],
        &["bench", "--experiment", "contest"],
        &["bench", "--workload", "replay", "--trace", "/nonexistent/trace"],
    ] {
        let out = lamina(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = text(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("lamina: error: "), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
