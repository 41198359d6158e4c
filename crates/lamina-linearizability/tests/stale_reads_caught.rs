//! The engine check can fail: the same rounds as `every_engine.rs`, with gets served from a
//! stale per-key snapshot (`StaleReads`, refreshed every 8 gets of a key), must be reported
//! not linearizable, on an in-memory and an on-disk engine.

use lamina::{Durability, EngineKind, FcMode};
use lamina_linearizability::{Limits, Reads, Verdict, Workload, run_round};

#[test]
fn a_store_serving_stale_reads_is_reported_not_linearizable() {
    let workload = Workload { clients: 6, keys: 4, ops_per_client: 150, seed: 20, filler: true };
    for engine in [EngineKind::Mem, EngineKind::Fdtree(FcMode::Fc)] {
        let summary =
            run_round(engine, Durability::None, &workload, Reads::Stale, &Limits::default())
                .unwrap();
        match summary.report.verdict {
            Verdict::NotLinearizable(violation) => println!("{engine}: {violation}"),
            other => panic!("{engine}: stale reads not caught: {other:?}"),
        }
    }
}
