//! Durable append throughput of the group-commit log versus writer threads and batch size
//! (the analog of Figure 8 of the SIGMOD 2011 contest paper), against the limit this machine
//! sets: raw sequential writes of the same chunks, each followed by `fdatasync`.
//!
//! `cargo bench -p lamina-storage --bench log_append` (set `LAMINA_BENCH_DIR` to choose the
//! directory; default: a temporary directory). Each point alternates `LAMINA_BENCH_ROUNDS`
//! (default 10) log runs and raw runs of `LAMINA_BENCH_SECS` (default 0.3) seconds each, and
//! compares totals, because this machine's `fdatasync` rate drifts by 10x within seconds.
//! The last column, the fraction of the time the flusher spent in write+sync, is the
//! drift-free measure: the log's rate as a fraction of raw write+sync of the same chunks at
//! the device speed of that very moment.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lamina_core::{Durability, WriteBatch};
use lamina_storage::log::{LogOp, LogOptions, SegmentLog, SegmentLogOptions};
use lamina_storage::{FileOptions, FileStorage, Storage};

const VALUE_BYTES: usize = 100;

struct Point {
    threads: usize,
    batch: usize,
    records_per_s: f64,
    records_per_sync: f64,
    syncs_per_s: f64,
    raw_records_per_s: f64,
    busy_records_per_s: f64,
    device_busy: f64,
}

fn key(thread: usize, i: u64) -> Vec<u8> {
    format!("t{thread:02}k{i:012}").into_bytes()
}

/// Returns records appended, fdatasyncs, seconds, chunk bytes per fdatasync, and the
/// fraction of the time the flusher spent writing and syncing.
fn run_log(
    dir: &std::path::Path,
    threads: usize,
    batch: usize,
    secs: f64,
) -> (f64, f64, f64, usize, f64) {
    let _ = std::fs::remove_dir_all(dir);
    let storage: Arc<dyn Storage> =
        Arc::new(FileStorage::open_dir(dir, FileOptions::default()).expect("bench directory"));
    let options = SegmentLogOptions {
        log: LogOptions { durability: Durability::Sync, ..LogOptions::default() },
        segment_bytes: 1 << 30,
    };
    let log = SegmentLog::open(storage, options, |_| {}).expect("open log");
    let stop = AtomicBool::new(false);
    let records = AtomicU64::new(0);
    let value = vec![0x5au8; VALUE_BYTES];
    let start = Instant::now();
    let before = log.stats();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (log, stop, records, value) = (&log, &stop, &records, &value);
            s.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if batch == 1 {
                        log.append(LogOp::Put { key: &key(t, i), value }).expect("append");
                    } else {
                        let mut wb = WriteBatch::new();
                        for j in 0..batch as u64 {
                            wb.put(key(t, i * 1000 + j), value.clone());
                        }
                        log.append(LogOp::Batch(&wb)).expect("append batch");
                    }
                    records.fetch_add(batch as u64, Ordering::Relaxed);
                    i += 1;
                }
            });
        }
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = start.elapsed().as_secs_f64();
    let stats = log.stats();
    log.close().expect("close");
    let syncs = (stats.syncs - before.syncs) as f64;
    let records = records.load(Ordering::Relaxed) as f64;
    let busy = (stats.flush_ns - before.flush_ns) as f64 / 1e9 / elapsed;
    let payload_per_sync =
        if syncs > 0.0 { (stats.bytes_written - before.bytes_written) as f64 / syncs } else { 0.0 };
    (records, syncs, elapsed, payload_per_sync as usize, busy)
}

/// Raw limit: sequential writes of `chunk_bytes` (4 KiB multiples) each followed by
/// `fdatasync`, one at a time; returns writes and seconds.
/// With `busy`, a companion thread spins meanwhile: a vCPU that idles during `fdatasync`
/// wakes up slower on completion, which the log's many writer threads never let happen.
fn run_raw(dir: &std::path::Path, chunk_bytes: usize, secs: f64, busy: bool) -> (f64, f64) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        if busy {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        let result = run_raw_inner(dir, chunk_bytes, secs);
        done.store(true, Ordering::Relaxed);
        result
    })
}

fn run_raw_inner(dir: &std::path::Path, chunk_bytes: usize, secs: f64) -> (f64, f64) {
    std::fs::create_dir_all(dir).expect("raw directory");
    let path = dir.join("raw.dat");
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .expect("raw file");
    let buf = vec![0xa5u8; chunk_bytes];
    let start = Instant::now();
    let mut offset = 0u64;
    let mut writes = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        file.write_all_at(&buf, offset).expect("raw write");
        file.sync_data().expect("raw fdatasync");
        offset += chunk_bytes as u64;
        writes += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    drop(file);
    let _ = std::fs::remove_file(&path);
    (writes as f64, elapsed)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` probing
    }
    let secs: f64 =
        std::env::var("LAMINA_BENCH_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(0.3);
    let root = match std::env::var("LAMINA_BENCH_DIR") {
        Ok(dir) => std::path::PathBuf::from(dir),
        Err(_) => std::env::temp_dir().join(format!("lamina-log-bench-{}", std::process::id())),
    };
    let mut points = Vec::new();
    let grid: Vec<(usize, usize)> = [1, 2, 4, 8, 16, 32]
        .iter()
        .map(|&t| (t, 1))
        .chain([(1, 8), (1, 64), (8, 8), (32, 8)])
        .collect();
    let rounds: usize =
        std::env::var("LAMINA_BENCH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(10);
    for (threads, batch) in grid {
        // The device's fdatasync rate drifts a lot on a shared machine: alternate short log
        // and raw runs and compare the totals.
        let (mut records, mut syncs, mut log_secs) = (0.0, 0.0, 0.0);
        let (mut raw_writes, mut raw_secs) = (0.0, 0.0);
        let (mut busy_writes, mut busy_secs) = (0.0, 0.0);
        let mut flush_secs = 0.0;
        for _ in 0..rounds {
            let run = run_log(&root.join("log"), threads, batch, secs);
            // The same batches written raw: chunks of the size the log wrote per sync.
            let chunk = (run.3.max(1) as u64).next_multiple_of(4096) as usize;
            let raw = run_raw(&root.join("raw"), chunk, secs, false);
            let busy = run_raw(&root.join("raw"), chunk, secs, true);
            eprintln!(
                "threads {threads:2} batch {batch:3}: {:9.0} rec/s, {:6.1} rec/sync, {:6.0} syncs/s, \
                 chunk {chunk} B, flusher in write+sync {:3.0}%; raw {:6.0} writes/s, \
                 raw+busy {:6.0} writes/s",
                run.0 / run.2,
                run.0 / run.1.max(1.0),
                run.1 / run.2,
                100.0 * run.4,
                raw.0 / raw.1,
                busy.0 / busy.1
            );
            (records, syncs, log_secs) = (records + run.0, syncs + run.1, log_secs + run.2);
            flush_secs += run.4 * run.2;
            (raw_writes, raw_secs) = (raw_writes + raw.0, raw_secs + raw.1);
            (busy_writes, busy_secs) = (busy_writes + busy.0, busy_secs + busy.1);
        }
        let records_per_sync = records / syncs.max(1.0);
        points.push(Point {
            threads,
            batch,
            records_per_s: records / log_secs,
            records_per_sync,
            syncs_per_s: syncs / log_secs,
            raw_records_per_s: raw_writes / raw_secs * records_per_sync,
            busy_records_per_s: busy_writes / busy_secs * records_per_sync,
            device_busy: flush_secs / log_secs,
        });
    }
    let _ = std::fs::remove_dir_all(&root);
    println!(
        "| threads | records/append | log records/s | records/fdatasync | fdatasync/s \
         | raw records/s | log/raw | raw+busy records/s | log/(raw+busy) | flusher in write+sync |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for p in &points {
        println!(
            "| {} | {} | {:.0} | {:.1} | {:.0} | {:.0} | {:.0}% | {:.0} | {:.0}% | {:.0}% |",
            p.threads,
            p.batch,
            p.records_per_s,
            p.records_per_sync,
            p.syncs_per_s,
            p.raw_records_per_s,
            100.0 * p.records_per_s / p.raw_records_per_s.max(1.0),
            p.busy_records_per_s,
            100.0 * p.records_per_s / p.busy_records_per_s.max(1.0),
            100.0 * p.device_busy
        );
    }
}
