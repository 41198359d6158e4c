//! The short torture run CI does for every engine: a few kill -9 cycles each through the
//! `lamina-torture` binary (`scripts/torture ENGINE CYCLES` runs the long one).

use std::process::Command;

use lamina::EngineKind;

/// Cycles per engine in CI (each: start, write for 0.3-0.9 s, SIGKILL, verify, reopen, check).
const CYCLES: u64 = 3;

#[test]
fn every_engine_survives_kill_9_with_nothing_acknowledged_lost() {
    let mut failures = Vec::new();
    for &engine in EngineKind::ALL {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        let out = Command::new(env!("CARGO_BIN_EXE_lamina-torture"))
            .args(["--engine", engine.name(), "--cycles", &CYCLES.to_string()])
            .args(["--seed", "7", "--kill-ms", "300-900"])
            .arg("--dir")
            .arg(&store)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.success() {
            assert!(stdout.contains(&format!("{CYCLES} cycles")), "{stdout}");
            println!("{}", stdout.trim());
        } else {
            failures.push(format!("{engine}: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
