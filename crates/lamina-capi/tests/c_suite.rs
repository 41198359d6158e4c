//! Builds `tests/c/test_lamina.c` with the system C compiler against the `liblamina.so` this
//! `cargo test` built, exactly as a user would (`-I include -L <dir> -llamina`), runs it with
//! `LD_LIBRARY_PATH`, and requires its "N passed, 0 failed" line. Also links the same
//! program against `liblamina.a`, and checks that the shared library exports only
//! `lamina_*` symbols.
//!
//! Cargo does not build a `cdylib`/`staticlib`-only library for integration tests (nothing
//! links it), and the library cannot also be an `rlib` (see Cargo.toml). So before the C
//! program is compiled, this test runs `cargo build -p lamina-capi --lib` with the profile,
//! target directory and target triple it was itself built with (read off this binary's path,
//! `<target-dir>[/<triple>]/<profile-dir>/deps/c_suite-<hash>`). That is a no-op when the
//! library is fresh, and it guarantees the C suite never runs against a stale library.

#[path = "support/signatures.rs"]
#[allow(dead_code)] // the Rust-side half is used by tests/header_signatures.rs
mod signatures;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const CRATE_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// `<target-dir>[/<triple>]/<profile-dir>`, where cargo writes `liblamina.so` and
/// `liblamina.a`, after building them there (once per process).
fn library_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_library).clone()
}

fn build_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary sits in <profile-dir>/deps");
    let profile_dir = deps.parent().expect("deps sits in <profile-dir>").to_path_buf();
    let above = profile_dir.parent().expect("<profile-dir> sits in the target dir");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(other) => other,
        None => panic!("unexpected test binary location {}", exe.display()),
    };
    // Cargo tags the root of a target dir; without the tag, `above` is `<target-dir>/<triple>`.
    let (target_dir, triple) = if above.join("CACHEDIR.TAG").exists() {
        (above, None)
    } else {
        (above.parent().expect("a target dir"), above.file_name())
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--package", "lamina-capi", "--lib", "--profile", profile])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(CRATE_DIR);
    if let Some(triple) = triple {
        build.arg("--target").arg(triple);
    }
    run(&mut build);
    for name in ["liblamina.so", "liblamina.a"] {
        let path = profile_dir.join(name);
        assert!(path.is_file(), "{} is missing after {build:?}", path.display());
    }
    profile_dir
}

/// The C compiler: `$CC` if set, else `cc`.
fn c_compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_owned())
}

fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let show = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    assert!(
        output.status.success(),
        "{command:?} failed with {}\nstdout:\n{}\nstderr:\n{}",
        output.status,
        show(&output.stdout),
        show(&output.stderr)
    );
    output
}

/// Compiles the C suite; `link` are the arguments that name the library.
fn compile(out: &Path, link: &[&std::ffi::OsStr]) {
    let source = Path::new(CRATE_DIR).join("tests/c/test_lamina.c");
    let include = Path::new(CRATE_DIR).join("include");
    run(Command::new(c_compiler())
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg("-I")
        .arg(&include)
        .arg(&source)
        .args(link)
        .arg("-lpthread")
        .arg("-o")
        .arg(out));
}

/// Runs the compiled suite and returns the number of checks that passed.
fn run_suite(program: &Path, library_dir: &Path) -> u64 {
    let scratch = tempfile::tempdir().unwrap();
    let output = run(Command::new(program).arg(scratch.path()).env("LD_LIBRARY_PATH", library_dir));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary = stdout.lines().last().unwrap_or_default();
    let (passed, failed) = summary
        .strip_suffix(" failed")
        .and_then(|s| s.split_once(" passed, "))
        .unwrap_or_else(|| panic!("no 'N passed, M failed' line in:\n{stdout}"));
    assert_eq!(failed, "0", "{summary}\n{}", String::from_utf8_lossy(&output.stderr));
    let passed: u64 = passed.parse().unwrap();
    assert!(passed > 200, "the suite ran only {passed} checks: {summary}");
    passed
}

#[test]
fn c_suite_passes_against_the_shared_library() {
    let dir = library_dir();
    let build = tempfile::tempdir().unwrap();
    let program = build.path().join("test_lamina");
    compile(&program, &["-L".as_ref(), dir.as_os_str(), "-llamina".as_ref()]);
    // The program must resolve liblamina.so dynamically, as a user's would.
    let needed = run(Command::new(&program)
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .env("LD_LIBRARY_PATH", &dir));
    let libs = String::from_utf8_lossy(&needed.stdout);
    assert!(libs.contains("liblamina.so"), "not dynamically linked:\n{libs}");
    run_suite(&program, &dir);
}

#[test]
fn c_suite_passes_against_the_static_library() {
    let dir = library_dir();
    let build = tempfile::tempdir().unwrap();
    let program = build.path().join("test_lamina_static");
    let archive = dir.join("liblamina.a");
    // What `cargo rustc -- --print native-static-libs` lists for Linux.
    let system = ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"];
    let mut link: Vec<&std::ffi::OsStr> = vec![archive.as_os_str()];
    link.extend(system.iter().map(std::ffi::OsStr::new));
    compile(&program, &link);
    run_suite(&program, Path::new("/nonexistent"));
}

/// The first fenced block of `language` in `markdown`.
fn fenced_block<'a>(markdown: &'a str, language: &str) -> &'a str {
    let open = format!("```{language}\n");
    let start = markdown.find(&open).unwrap_or_else(|| panic!("no {open:?} block")) + open.len();
    let len = markdown[start..].find("```").expect("an unterminated block");
    &markdown[start..start + len]
}

#[test]
fn the_example_in_the_docs_compiles_runs_and_prints_what_the_docs_say() {
    let dir = library_dir();
    let doc_path = Path::new(CRATE_DIR).join("../../docs/c-api.md");
    let doc = std::fs::read_to_string(&doc_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", doc_path.display()));
    let build = tempfile::tempdir().unwrap();
    let source = build.path().join("example.c");
    std::fs::write(&source, fenced_block(&doc, "c")).unwrap();
    let program = build.path().join("example");
    run(Command::new(c_compiler())
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(Path::new(CRATE_DIR).join("include"))
        .arg(&source)
        .arg("-L")
        .arg(&dir)
        .arg("-llamina")
        .arg("-o")
        .arg(&program));
    let scratch = tempfile::tempdir().unwrap();
    let output = run(Command::new(&program)
        .arg(scratch.path().join("example-db"))
        .env("LD_LIBRARY_PATH", &dir));
    assert_eq!(String::from_utf8_lossy(&output.stdout), fenced_block(&doc, "text"));
}

#[test]
fn the_shared_library_exports_only_lamina_symbols() {
    let dir = library_dir();
    let so = dir.join("liblamina.so");
    let output = match Command::new("nm").args(["-D", "--defined-only"]).arg(&so).output() {
        Ok(output) if output.status.success() => output,
        other => {
            eprintln!("skipping: `nm -D --defined-only` is not available here ({other:?})");
            return;
        }
    };
    let listing = String::from_utf8_lossy(&output.stdout);
    let symbols: Vec<&str> =
        listing.lines().filter_map(|line| line.split_whitespace().last()).collect();
    let foreign: Vec<&&str> = symbols.iter().filter(|s| !s.starts_with("lamina_")).collect();
    assert!(foreign.is_empty(), "non-lamina symbols exported: {foreign:?}");
    // Every function of the header, and nothing the header does not declare.
    let header = std::fs::read_to_string(Path::new(CRATE_DIR).join("include/lamina.h")).unwrap();
    let mut declared = functions_declared(&header);
    declared.sort_unstable();
    declared.dedup();
    let mut exported = symbols.clone();
    exported.sort_unstable();
    assert_eq!(exported, declared, "exported symbols and header declarations differ");
}

#[test]
fn every_declared_function_links_with_its_declared_type() {
    let dir = library_dir();
    let header = std::fs::read_to_string(Path::new(CRATE_DIR).join("include/lamina.h")).unwrap();
    let declared = signatures::header_functions(&header);
    assert!(declared.len() >= 20, "only {} prototypes found", declared.len());
    // One typed function pointer per prototype, initialized with the function's address:
    // -Werror turns a type the parse got wrong into an error, and the link fails for a
    // function the library does not define.
    let mut c = String::from("#include <stdio.h>\n#include \"lamina.h\"\n\nint main(void) {\n");
    c.push_str("    int taken = 0;\n");
    for (name, (types, _)) in &declared {
        let params = if types.len() == 1 { "void".to_owned() } else { types[1..].join(", ") };
        writeln!(c, "    {{ {} (*f)({params}) = {name}; taken += f != NULL; }}", types[0]).unwrap();
    }
    c.push_str("    printf(\"%d\\n\", taken);\n    return 0;\n}\n");
    let build = tempfile::tempdir().unwrap();
    let source = build.path().join("signatures.c");
    std::fs::write(&source, &c).unwrap();
    let program = build.path().join("signatures");
    run(Command::new(c_compiler())
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .arg("-I")
        .arg(Path::new(CRATE_DIR).join("include"))
        .arg(&source)
        .arg("-L")
        .arg(&dir)
        .arg("-llamina")
        .arg("-o")
        .arg(&program));
    let output = run(Command::new(&program).env("LD_LIBRARY_PATH", &dir));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), declared.len().to_string());
}

/// Names `lamina_*` immediately followed by `(` in the header: its functions (and mentions of
/// them in comments, which name the same functions).
fn functions_declared(header: &str) -> Vec<&str> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut names = Vec::new();
    let mut rest = header;
    while let Some(at) = rest.find("lamina_") {
        let preceded_by_ident = rest[..at].chars().next_back().is_some_and(is_ident);
        let tail = &rest[at..];
        let len = tail.find(|c: char| !is_ident(c)).unwrap_or(tail.len());
        if !preceded_by_ident && tail[len..].starts_with('(') {
            names.push(&tail[..len]);
        }
        rest = &tail[len..];
    }
    names
}
