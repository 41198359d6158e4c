//! Locate throughput of the inner nodes: `OlcInner` against `ReferenceInner` (a `BTreeMap`
//! under a reader-writer lock) on 1M separators of 16 bytes, 1 and 2 threads, uniform random
//! keys. A micro-measurement, not a criterion benchmark:
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

/// Locates per second over `threads` threads, each locating its own `probes`.
fn measure<I: InnerIndex>(inner: &I, probes: &[Vec<Box<[u8]>>]) -> f64 {
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
    let total: usize = probes.iter().map(Vec::len).sum();
    total as f64 / start.elapsed().as_secs_f64()
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
        let rate = measure(&reference, &probes);
        println!("reference          threads {threads}: {:7.2}", rate / 1e6);
    }
    drop(reference);
    for fanout in fanouts {
        let olc = OlcInner::build_with_fanout(leaves(separators), fanout);
        for threads in [1, 2] {
            let probes = probes(threads, per_thread, separators);
            let rate = measure(&olc, &probes);
            println!(
                "olc fanout {fanout:4}    threads {threads}: {:7.2}   (restarts {:?}, dram {} MiB)",
                rate / 1e6,
                olc.restarts(),
                olc.dram_bytes() >> 20
            );
        }
    }
}
