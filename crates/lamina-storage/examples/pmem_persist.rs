//! Cost of one persisted cache line (store + persist + fence) on each persistent-memory
//! backend of this machine. Run: `cargo run --release -p lamina-storage --example pmem_persist`.
//! Results: `docs/results/pmem.md`.

use std::time::Instant;

use lamina_storage::pmem::{
    FlushInstruction, MmapOptions, MmapRegion, PmemRegion, SimulatedOptions, SimulatedRegion,
};

const REGION_BYTES: u64 = 1 << 24;

fn measure(region: &dyn PmemRegion, ops: u64) -> f64 {
    // Touch every page first so page faults are not measured.
    for page in 0..REGION_BYTES / 4096 {
        region.store_u64(page * 4096, 0).unwrap();
    }
    let start = Instant::now();
    for i in 0..ops {
        let offset = (i * 4096 + (i % 64) * 64) % REGION_BYTES;
        region.store_u64(offset, i).unwrap();
        region.persist(offset, 8).unwrap();
        region.fence();
    }
    start.elapsed().as_nanos() as f64 / ops as f64
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let detected = FlushInstruction::detect();
    println!("detected write-back instruction: {detected:?}");
    let mut configs = vec![("msync per persist", true, None, 1_000)];
    let mut instructions = vec![FlushInstruction::Clflush];
    if matches!(detected, FlushInstruction::Clwb | FlushInstruction::Clflushopt) {
        instructions.push(FlushInstruction::Clflushopt);
    }
    if detected == FlushInstruction::Clwb {
        instructions.push(FlushInstruction::Clwb);
    }
    for flush in instructions {
        configs.push(("no msync", false, Some(flush), 200_000));
    }
    for (i, (what, msync, flush, ops)) in configs.into_iter().enumerate() {
        let path = dir.path().join(format!("region-{i}"));
        let options = MmapOptions { msync, latency_ns_per_line: 0, flush };
        let region = MmapRegion::create(&path, REGION_BYTES, options).unwrap();
        let ns = measure(&region, ops);
        println!("mmap {what}, {:?}: {ns:.0} ns per line ({ops} ops)", region.flush_instruction());
    }
    let simulated = SimulatedRegion::new(REGION_BYTES, SimulatedOptions::default()).unwrap();
    println!("simulated: {:.0} ns per line (200000 ops)", measure(&simulated, 200_000));
}
