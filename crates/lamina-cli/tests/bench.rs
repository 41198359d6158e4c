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

fn run_experiment(args: &[&str]) -> (tempfile::TempDir, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let mut all = vec!["bench", "--quiet", "--out", out_dir.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = lamina(&all);
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(report["schema"], "lamina-bench-experiment");
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    (dir, report, md)
}

#[test]
fn nbtree_insert_reports_steps_and_query_sizes() {
    let (dir, report, md) =
        run_experiment(&["--experiment", "nbtree-insert", "--ops", "400", "--engines", "mem"]);
    let steps = &report["insert_steps"];
    assert_eq!(steps["step_ops"], 40);
    assert_eq!(steps["records_end"].as_array().unwrap().len(), 10);
    assert_eq!(steps["engines"][0]["mean_us"].as_array().unwrap().len(), 10);
    let phases: Vec<&str> =
        report["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(phases, ["insert", "query-100", "query-200", "query-400"]);
    let xs: Vec<f64> = report["series"][0]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["x"].as_f64().unwrap())
        .collect();
    assert_eq!(xs, [100.0, 200.0, 400.0]);
    assert!(md.contains("Insert time vs data size") && md.contains("| 400 |"), "{md}");
    let plots = dir.path().join("out/plots");
    for chart in ["insert_mean_vs_size", "insert_max_vs_size", "query_mean", "query_max"] {
        assert!(plots.join(format!("{chart}.png")).exists(), "{chart}");
    }
    assert!(dir.path().join("out/insert/timeline.csv").exists());
}

#[test]
fn fdfc_vs_btree_and_contest_run_small() {
    let (dir, report, md) = run_experiment(&[
        "--experiment",
        "fdfc-vs-btree",
        "--ops",
        "300",
        "--preload",
        "200",
        "--threads",
        "2",
        "--engines",
        "mem",
    ]);
    assert_eq!(report["phases"].as_array().unwrap().len(), 5);
    assert_eq!(report["series"][0]["points"].as_array().unwrap().len(), 5);
    assert!(md.contains("| 0.2 |"), "{md}");
    assert!(dir.path().join("out/plots/lookup_ratio_throughput.png").exists());
    let (dir, report, _) = run_experiment(&[
        "--experiment",
        "contest",
        "--ops",
        "200",
        "--preload",
        "300",
        "--engines",
        "mem",
    ]);
    let params = &report["phases"][0]["report"]["params"];
    assert_eq!(
        (params["threads"].as_u64(), params["durability"].as_str()),
        (Some(32), Some("sync"))
    );
    assert!(dir.path().join("out/plots/contest/comparison.png").exists());
}

#[test]
fn fdfc_figure6_runs_small_with_the_open_system_and_disk_columns() {
    let (dir, report, md) = run_experiment(&[
        "--experiment",
        "fdfc-figure6",
        "--ops",
        "300",
        "--preload",
        "500",
        "--engines",
        "fdtree-xm,fdtree-ds",
    ]);
    assert_eq!(report["phases"].as_array().unwrap().len(), 5);
    let params = &report["phases"][0]["report"]["params"];
    assert_eq!(params["memory_budget_bytes"].as_u64(), Some(256 << 10), "{params}");
    let series = report["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    let points = series[0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 5);
    assert!(points[0]["insert"]["max_us"].as_f64().unwrap() > 0.0, "{}", points[0]);
    assert!(points[0]["lookup"].is_null(), "W_l = 0 has no lookups");
    assert!(points[4]["insert"].is_null() && points[4]["lookup"]["count"].as_u64() > Some(0));
    assert!(points[2]["disk_peak_bytes"].as_u64() >= points[2]["disk_median_bytes"].as_u64());
    assert!(md.contains("FD+FC Figure 6") && md.contains("| 0.5 | fdtree-ds |"), "{md}");
    for chart in ["insert_max", "lookup_max", "disk_peak_over_steady", "throughput"] {
        assert!(dir.path().join(format!("out/plots/figure6_{chart}.png")).exists(), "{chart}");
    }
}

#[test]
fn nbtree_insert_runs_the_nbtree_with_its_fanout() {
    let (_dir, report, md) = run_experiment(&[
        "--experiment",
        "nbtree-insert",
        "--ops",
        "400",
        "--engines",
        "nbtree",
        "--nbtree-fanout",
        "4",
    ]);
    assert!(report["failed"].as_array().unwrap().is_empty(), "{report}");
    let insert = &report["phases"][0]["report"];
    assert_eq!(insert["params"]["engines"][0], "nbtree");
    assert_eq!(insert["params"]["nbtree_fanout"], 4);
    assert_eq!(insert["runs"][0]["measured_ops"], 400);
    assert_eq!(report["insert_steps"]["engines"][0]["engine"], "nbtree");
    assert!(md.contains("| records | nbtree mean µs | nbtree max µs |"), "{md}");
}

#[test]
fn scale_runs_small_on_one_store_per_engine_with_the_fdtree_alias() {
    let (dir, report, md) =
        run_experiment(&["--experiment", "scale", "--ops", "2000", "--engines", "mem,fdtree"]);
    let rows = report["scale"]["engines"].as_array().unwrap();
    let engines: Vec<&str> = rows.iter().map(|r| r["engine"].as_str().unwrap()).collect();
    assert_eq!(engines, ["mem", "fdtree-fc"], "`fdtree` is reported as fdtree-fc");
    for row in rows {
        assert!(row["failed"].is_null(), "{row}");
        assert!(row["insert"]["throughput_ops_s"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["lookup"]["p9999_us"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["insert_2t"]["max_us"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["reopen_s"].as_f64().unwrap() > 0.0, "{row}");
        assert_eq!(row["keys_verified"], 1000, "{row}");
        assert!(row["insert"]["throughput_x_best_peer"].is_null(), "no peer in this run");
    }
    assert_eq!(report["scale"]["record_bytes"], 136);
    assert_eq!(report["scale"]["concurrent_threads"], 2);
    let phases: Vec<&str> =
        report["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(phases, ["insert", "lookup", "insert-2t"]);
    let insert = &report["phases"][0]["report"];
    assert_eq!(insert["params"]["cache_bytes"], 64 << 20);
    assert_eq!(insert["params"]["memory_budget_bytes"], 32 << 20);
    assert_eq!(insert["params"]["durability"], "none");
    assert_eq!(insert["runs"][0]["timeline"]["bucket_max_us"].as_array().unwrap().len(), 100);
    assert_eq!(report["phases"][2]["report"]["params"]["threads"], 2);
    assert_eq!(report["insert_steps"]["records_end"].as_array().unwrap().len(), 100);
    assert!(md.contains("x best peer") && md.contains("| fdtree-fc |"), "{md}");
    assert!(report["failed"].as_array().unwrap().is_empty());
    for chart in ["insert_max_vs_size", "insert/throughput_over_time", "lookup/latency_cdf"] {
        assert!(dir.path().join(format!("out/plots/{chart}.png")).exists(), "{chart}");
    }
    let help = text(&lamina(&["bench", "--help"]).stdout);
    assert!(help.contains("  scale\n") && help.contains("timed\n      reopen"), "{help}");
    assert!(help.contains("exits with\nstatus 2"), "{help}");
}

#[test]
fn a_failing_engine_is_reported_and_the_command_exits_non_zero() {
    // FD+XM limited to 16-byte keys refuses the workload's 32-byte keys: a request error.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = lamina(&[
        "bench",
        "--quiet",
        "--engines",
        "fdtree-xm",
        "--workload",
        "insert",
        "--key-bytes",
        "32",
        "--fdtree-key-bytes-max",
        "16",
        "--ops",
        "100",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let last = stderr.trim_end().lines().last().unwrap();
    assert!(last.starts_with("lamina: error: 1 engine failed (fdtree-xm)"), "{stderr}");
    assert!(stderr.contains("over the 16-byte limit"), "{stderr}");
    assert!(text(&out.stdout).contains("fdtree-xm FAILED in round 1 (run)"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["failed"][0]["step"], "run");
    assert!(report["summary"].as_array().unwrap().is_empty());
}

#[test]
fn bad_flags_fail_with_one_line() {
    for args in [
        &["bench", "--ops", "10", "--duration", "1"][..],
        &["bench", "--engines", "nope"],
        &["bench", "--device", "ssd-msp7525", "--engines", "mem"],
        &["bench", "--device", "floppy", "--engines", "fdtree"],
        &["bench", "--experiment", "contest"],
        &["bench", "--engines", "fdtree,fdtree-fc"],
        &["bench", "--engines", "mem", "--nbtree-fanout", "4"],
        &["bench", "--engines", "nbtree", "--nbtree-fanout", "2"],
        &["bench", "--experiment", "scale", "--out", "/tmp/x", "--threads", "3"],
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
