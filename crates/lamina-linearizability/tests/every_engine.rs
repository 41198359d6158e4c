//! CI's linearizability check of every engine: a few short histories each (half with
//! `Durability::None`, half with `Sync`), 6 clients on 4 keys beside a filler thread, with
//! the smallest memory budget so flushes and merges run during the history.
//! `scripts/linearizability ENGINE ROUNDS` runs the long version.

use lamina::EngineKind;
use lamina_linearizability::engine::durability_of;
use lamina_linearizability::{Fault, Limits, Verdict, Workload, run_round};

/// Histories per engine in CI.
const ROUNDS: u64 = 2;

fn workload(round: u64) -> Workload {
    Workload { clients: 6, keys: 4, ops_per_client: 150, seed: 20 + round, filler: true }
}

#[test]
fn every_engine_is_linearizable_on_single_key_operations() {
    let mut failures = Vec::new();
    for &engine in EngineKind::ALL {
        for round in 0..ROUNDS {
            let durability = durability_of(round);
            let summary =
                run_round(engine, durability, &workload(round), Fault::None, &Limits::default());
            match summary {
                Ok(s) if s.report.verdict == Verdict::Linearizable => println!(
                    "{engine} {durability:?}: {} operations on {} keys linearizable ({} search \
                     states), {} filler writes, {} bytes written, {:?}",
                    s.report.operations,
                    s.report.keys,
                    s.report.states_visited,
                    s.filler_ops,
                    s.bytes_written,
                    s.background
                ),
                Ok(s) => failures.push(format!("{engine} {durability:?}: {:?}", s.report.verdict)),
                Err(e) => failures.push(format!("{engine} {durability:?}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
