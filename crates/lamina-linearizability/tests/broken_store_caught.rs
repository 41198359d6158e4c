//! The engine check can fail: the same rounds as `every_engine.rs`, with gets served from a
//! stale per-key snapshot (`StaleReads`, refreshed every 8 gets of a key) or with
//! compare-and-swap done as get-then-put without a lock (`NonAtomicCas`), must be reported
//! not linearizable, on an in-memory and an on-disk engine.

use lamina::{Durability, EngineKind, FcMode};
use lamina_linearizability::{Fault, Limits, Verdict, Workload, run_round};

const ENGINES: [EngineKind; 2] = [EngineKind::Mem, EngineKind::Fdtree(FcMode::Fc)];

fn assert_caught(fault: Fault, durability: Durability) {
    let workload = Workload { clients: 6, keys: 4, ops_per_client: 150, seed: 20, filler: true };
    for engine in ENGINES {
        let summary = run_round(engine, durability, &workload, fault, &Limits::default()).unwrap();
        match summary.report.verdict {
            Verdict::NotLinearizable(violation) => println!("{engine} {fault:?}: {violation}"),
            other => panic!("{engine}: {fault:?} not caught: {other:?}"),
        }
    }
}

#[test]
fn a_store_serving_stale_reads_is_reported_not_linearizable() {
    assert_caught(Fault::StaleReads, Durability::None);
}

#[test]
fn a_store_with_non_atomic_compare_and_swap_is_reported_not_linearizable() {
    // Sync: each put waits for the log, so two swaps' get-then-put windows overlap.
    assert_caught(Fault::NonAtomicCas, Durability::Sync);
}
