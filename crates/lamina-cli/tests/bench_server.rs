//! `lamina bench --server` end to end against `lamina serve`: a clean small load, a load
//! whose gets cannot match (another seed) failing with the wrong replies counted, and a
//! server that is not there failing in one line.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn lamina(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lamina")).args(args).output().expect("run lamina")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A `lamina serve` child, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &std::path::Path) -> Server {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_lamina"))
        .args(["serve", "--dir"])
        .arg(dir)
        .args(["--engine", "trie", "--durability", "none", "--log", "warn", "--listen", &addr])
        .stdin(Stdio::null())
        .spawn()
        .expect("start lamina serve");
    let mut server = Server { child, addr };
    let deadline = Instant::now() + Duration::from_mins(1);
    while TcpStream::connect(&server.addr).is_err() {
        assert!(server.child.try_wait().unwrap().is_none(), "lamina serve exited early");
        assert!(Instant::now() < deadline, "lamina serve did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    server
}

#[test]
fn a_load_against_lamina_serve_checks_every_reply() {
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("db"));
    let json = dir.path().join("load.json");
    let small = [
        "--keys",
        "400",
        "--ops",
        "600",
        "--connections",
        "3",
        "--pipeline",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ];
    let mut args = vec!["bench", "--server", &server.addr];
    args.extend(small);
    let out = lamina(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema"], "lamina-bench-memcached");
    let phases = report["phases"].as_array().unwrap();
    let counts: Vec<(&str, u64)> = phases
        .iter()
        .map(|p| (p["phase"].as_str().unwrap(), p["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(counts, [("set", 400), ("get", 600), ("mixed", 600)]);
    for phase in phases {
        let errors = &phase["errors"];
        assert_eq!(
            errors["get_misses"].as_u64().unwrap() + errors["get_wrong"].as_u64().unwrap(),
            0
        );
    }
    let stdout = text(&out.stdout);
    assert!(stdout.contains("mixed  all"), "{stdout}");

    // Another seed expects other values (and flags) under the same keys: every get is wrong.
    args.extend(["--phases", "get", "--seed", "9"]);
    let out = lamina(&args);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("600 wrong replies"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["phases"][0]["errors"]["get_wrong"], 600, "the report is still written");
}

#[test]
fn no_server_is_one_line_and_status_2() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    let out = lamina(&["bench", "--server", &addr, "--keys", "10", "--ops", "10"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("connecting to the memcached server at {addr}")), "{stderr}");
    let out = lamina(&["bench", "--connections", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("add --server HOST:PORT"));
}
