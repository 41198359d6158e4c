//! Locate throughput of the inner nodes: `OlcInner` against `ReferenceInner` (a `BTreeMap`
//! under a reader-writer lock) on 1M separators of 16 bytes, 1 and 2 threads, uniform random
//! keys; and the cost of insert_separator and remove_leaf (one thread, a tenth as many). A
//! micro-measurement, not a criterion benchmark:
//!
//! `cargo run --release -p lamina-fptree --example inner_bench [separators] [locates per thread] [fanouts...]`

use std::hint::black_box;
use std::time::Instant;

use lamina_fptree::inner::{
    FANOUT_MAX_DEFAULT, InnerIndex, LeafId, OlcInner, ReferenceInner, Visit,
};

fn key(i: u64) -> Box<[u8]> {
    format!("key{i:013}").into_bytes().into()
}

fn leaves(count: u64) -> Vec<(Box<[u8]>, LeafId)> {
    // Separators at even numbers: half the probes fall between two.
    (0..count).map(|i| (key(2 * i), i)).collect()
}

/// CPU time this process has used (user and system), in seconds: on a machine shared with
/// other work, operations per CPU second are steadier than per wall second.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `rusage` into the pointer it is given, which is valid and
    // large enough; RUSAGE_SELF is a valid `who`.
    let usage = unsafe {
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()), 0);
        usage.assume_init()
    };
    // `tv_usec` is an i64 on Linux and an i32 on macOS: one `as` fits both.
    #[allow(clippy::cast_lossless)]
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Locates per wall second and per CPU second over `threads` threads, each locating its own
/// `probes`.
fn measure<I: InnerIndex>(inner: &I, probes: &[Vec<Box<[u8]>>]) -> (f64, f64) {
    let cpu_start = cpu_seconds();
    let start = Instant::now();
    std::thread::scope(|scope| {
        for keys in probes {
            scope.spawn(move || {
                let mut sum = 0u64;
                for key in keys {
                    sum = sum.wrapping_add(inner.locate(
                        key,
                        |leaf, prev| Visit::Done(leaf ^ prev.unwrap_or(0)),
                        |_| {},
                    ));
                }
                black_box(sum)
            });
        }
    });
    let wall = start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_start;
    let total = probes.iter().map(Vec::len).sum::<usize>() as f64;
    (total / wall, total / cpu)
}

fn probes(threads: u64, per_thread: u64, separators: u64) -> Vec<Vec<Box<[u8]>>> {
    (0..threads)
        .map(|t| {
            let mut state = 0x9e37_79b9_7f4a_7c15 ^ (t + 1);
            (0..per_thread)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    key(state % (2 * separators))
                })
                .collect()
        })
        .collect()
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let separators = args.first().copied().unwrap_or(1_000_000);
    let per_thread = args.get(1).copied().unwrap_or(2_000_000);
    let fanouts: Vec<usize> = if args.len() > 2 {
        args[2..].iter().map(|&f| f as usize).collect()
    } else {
        vec![FANOUT_MAX_DEFAULT]
    };
    println!("{separators} separators, {per_thread} locates per thread, Mlocates/s");
    let reference = ReferenceInner::build(leaves(separators));
    for threads in [1, 2] {
        let probes = probes(threads, per_thread, separators);
        let (wall, cpu) = measure(&reference, &probes);
        println!(
            "reference          threads {threads}: {:6.2} per wall s, {:6.2} per CPU s",
            wall / 1e6,
            cpu / 1e6
        );
    }
    drop(reference);
    for fanout in fanouts {
        let olc = OlcInner::build_with_fanout(leaves(separators), fanout);
        // Structural changes, one thread: separators between existing ones, then removed.
        let changes = (separators / 10).max(1);
        let cpu_start = cpu_seconds();
        for i in 0..changes {
            olc.insert_separator(&key(2 * (i * 7 % separators) + 1), separators + i);
        }
        let insert_ns = (cpu_seconds() - cpu_start) * 1e9 / changes as f64;
        let cpu_start = cpu_seconds();
        for i in 0..changes {
            let separator = key(2 * (i * 7 % separators) + 1);
            olc.remove_leaf(&separator, separators + i);
        }
        let remove_ns = (cpu_seconds() - cpu_start) * 1e9 / changes as f64;
        println!(
            "olc fanout {fanout:4}    insert_separator {insert_ns:6.0} CPU ns, remove_leaf \
             {remove_ns:6.0} CPU ns ({changes} each)"
        );
        for threads in [1, 2] {
            let probes = probes(threads, per_thread, separators);
            let (wall, cpu) = measure(&olc, &probes);
            println!(
                "olc fanout {fanout:4}    threads {threads}: {:6.2} per wall s, {:6.2} per CPU s \
                 (restarts {:?}, dram {} MiB)",
                wall / 1e6,
                cpu / 1e6,
                olc.restarts(),
                olc.dram_bytes() >> 20
            );
        }
    }
}
