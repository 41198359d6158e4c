//! Measures how long the machine stops a thread that never blocks: one thread reads the
//! clock in a loop for `--seconds` and reports every gap of `--gap-ms` or more between two
//! reads, with the steal time the kernel counted meanwhile (`/proc/stat`).
//!
//! Why: on the 2-core VM this project is measured on, the longest inserts of every engine
//! (10-35 ms) were moments when no thread of the process ran at all, on either core, and
//! block I/O completions arrived late as well: the virtual machine itself was stopped
//! (`docs/results/scale.md`, session 25). With `--touch-mib N` a second thread allocates
//! and writes N MiB of fresh memory one second in, on the other core; the host backs that
//! memory as it is first touched, and the spinning thread then saw gaps of 14-35 ms, 100 ms
//! apart (not on every try), that it does not see otherwise. Run it before trusting a
//! maximum latency measured on a VM.
//!
//! ```sh
//! cargo run --release -p lamina-bench --example stall_probe -- --seconds 6 --touch-mib 6000
//! ```

use std::time::{Duration, Instant};

/// The gaps printed one by one; the rest are only counted.
const GAPS_PRINTED_MAX: usize = 50;

struct Args {
    seconds: u64,
    gap_ms: u64,
    touch_mib: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { seconds: 10, gap_ms: 6, touch_mib: 0 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<u64>().map_err(|e| format!("{flag} {value}: {e}"));
        match flag.as_str() {
            "--seconds" => args.seconds = number()?.clamp(1, 3600),
            "--gap-ms" => args.gap_ms = number()?.max(1),
            "--touch-mib" => {
                args.touch_mib = usize::try_from(number()?).map_err(|e| e.to_string())?;
            }
            _ => return Err(format!("unknown flag {flag} (--seconds, --gap-ms, --touch-mib)")),
        }
    }
    Ok(args)
}

/// Steal time of all cores so far, in milliseconds (`None` without `/proc/stat`).
fn steal_ms() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    // user nice system idle iowait irq softirq steal: the 8th number, in USER_HZ ticks
    // (100 per second on Linux).
    let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    Some(ticks * 10)
}

/// Writes one byte in every page of `mib` MiB of fresh memory.
fn touch(mib: usize) {
    const PAGE_BYTES: usize = 4096;
    let mut memory = vec![0u8; mib << 20];
    for i in (0..memory.len()).step_by(PAGE_BYTES) {
        memory[i] = 1;
    }
    std::hint::black_box(&memory);
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("stall_probe: {e}");
            std::process::exit(2);
        }
    };
    let steal_before = steal_ms();
    let toucher = (args.touch_mib > 0).then(|| {
        let mib = args.touch_mib;
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            let start = Instant::now();
            touch(mib);
            println!("touched {mib} MiB in {:.2} s", start.elapsed().as_secs_f64());
        })
    });
    let gap_min = Duration::from_millis(args.gap_ms);
    let start = Instant::now();
    let mut last = start;
    let (mut gaps, mut worst) = (0usize, Duration::ZERO);
    while last.duration_since(start) < Duration::from_secs(args.seconds) {
        let now = Instant::now();
        let gap = now.duration_since(last);
        if gap >= gap_min {
            if gaps < GAPS_PRINTED_MAX {
                let at = now.duration_since(start).as_secs_f64();
                println!("gap {:.2} ms at {at:.3} s", gap.as_secs_f64() * 1e3);
            }
            gaps += 1;
        }
        worst = worst.max(gap);
        last = now;
    }
    if let Some(t) = toucher {
        t.join().expect("the toucher does not panic");
    }
    let steal = match (steal_before, steal_ms()) {
        (Some(b), Some(a)) => format!("{} ms", a.saturating_sub(b)),
        _ => "unknown".to_string(),
    };
    println!(
        "{gaps} gaps of {} ms or more, the longest {:.2} ms; steal time meanwhile: {steal}",
        args.gap_ms,
        worst.as_secs_f64() * 1e3
    );
}
