//! Parser throughput on a pipelined mix of requests (a quick check, not a benchmark suite):
//! `cargo run --release -p lamina-server --example parse_throughput`.

use std::time::Instant;

use lamina_server::protocol::{ParseLimits, Parsed, parse};

fn main() {
    let limits = ParseLimits { line_bytes_max: 8192, item_bytes_max: 1 << 20 };
    let value = vec![b'v'; 100];
    let mut input = Vec::new();
    for i in 0..10_000 {
        match i % 4 {
            0 => input.extend_from_slice(format!("get key:{i:08}\r\n").as_bytes()),
            1 => {
                input.extend_from_slice(
                    format!("set key:{i:08} 0 0 {}\r\n", value.len()).as_bytes(),
                );
                input.extend_from_slice(&value);
                input.extend_from_slice(b"\r\n");
            }
            2 => input.extend_from_slice(format!("mg key:{i:08} v f t k Oop{i}\r\n").as_bytes()),
            _ => {
                input.extend_from_slice(
                    format!("ms key:{i:08} {} T60 F5 q\r\n", value.len()).as_bytes(),
                );
                input.extend_from_slice(&value);
                input.extend_from_slice(b"\r\n");
            }
        }
    }
    let rounds = 100;
    let started = Instant::now();
    let mut requests = 0u64;
    for _ in 0..rounds {
        let mut at = 0;
        while let Parsed::Request { consumed, command } = parse(&input[at..], &limits) {
            std::hint::black_box(command);
            at += consumed;
            requests += 1;
        }
        assert_eq!(at, input.len());
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{requests} requests, {:.1} MB in {secs:.3} s: {:.2} M requests/s, {:.0} ns/request",
        (input.len() * rounds) as f64 / 1e6,
        requests as f64 / secs / 1e6,
        secs * 1e9 / requests as f64
    );
}
