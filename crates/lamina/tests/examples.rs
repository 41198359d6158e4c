//! The examples in `examples/` run and check themselves (their asserts) here, so they stay
//! true; CI also builds them with `cargo clippy --all-targets`.

#[path = "../examples/quick_start.rs"]
mod quick_start;

#[path = "../examples/range_scan.rs"]
mod range_scan;

#[path = "../examples/threads_batches_cas.rs"]
mod threads_batches_cas;

#[test]
fn quick_start_runs() {
    quick_start::main().unwrap();
}

#[test]
fn range_scan_runs() {
    range_scan::main().unwrap();
}

#[test]
fn threads_batches_cas_runs() {
    threads_batches_cas::main().unwrap();
}
