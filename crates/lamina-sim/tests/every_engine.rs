//! The short simulation CI runs: a small seed range of every engine (the long run is
//! `scripts/simulate`). A failure names the engine, the seed and the command replaying it.

use lamina_sim::{EngineName, run_seeds};

/// Crash cycles per engine here: 30 seeds (about 25 s for all engines in a debug build).
const CRASHES: u64 = 600;

fn simulate(name: &str) {
    let engine = EngineName::parse(name).unwrap();
    let outcome = run_seeds(engine, CRASHES, 1, |_, _| {});
    if let Some(failure) = outcome.failure {
        panic!("{failure}");
    }
    let t = outcome.tally;
    assert_eq!(t.crashes, CRASHES);
    // The workload reached every kind of point: crashes in recovery and in the workload,
    // recoveries checked with acknowledged writes in them.
    assert!(t.crashes_in_workload > 0, "{t:?}");
    assert!(t.recoveries_checked > CRASHES / 4 && t.writes_acked > CRASHES, "{t:?}");
    if engine.on_storage() {
        // (fptree's recovery persists little: crashes rarely land in it.)
        assert!(t.crashes_in_recovery > 0, "{t:?}");
        assert!(t.eio_cycles > 0 && t.enospc_cycles > 0 && t.flip_cycles > 0, "{t:?}");
    }
}

/// The same seed gives the same run, for every engine: a failing seed replays exactly. The
/// simulation's storage asks for lockstep (`Storage::lockstep`), so the log's flusher and
/// fdtree's flush and merge threads do their storage operations in an order the driver's
/// calls fix; the tallies' digest of every storage operation (what, which file, where, how
/// many bytes, in order) must come out the same. Seeds 7-8 and 60-61 include full disks
/// (sticky and not), I/O errors and bit flips; before lockstep every log-based engine failed
/// this within them.
#[test]
fn a_seed_replays_exactly() {
    for engine in EngineName::ALL {
        for first_seed in [7, 60] {
            let first = run_seeds(engine, 40, first_seed, |_, _| {});
            let again = run_seeds(engine, 40, first_seed, |_, _| {});
            assert!(first.failure.is_none(), "{:?}", first.failure);
            assert_eq!(first.tally, again.tally, "{} from seed {first_seed}", engine.name());
        }
    }
}

#[test]
fn mem() {
    simulate("mem");
}

#[test]
fn trie() {
    simulate("trie");
}

#[test]
fn fdtree_fc() {
    simulate("fdtree-fc");
}

#[test]
fn fdtree_xm() {
    simulate("fdtree-xm");
}

#[test]
fn fdtree_ds() {
    simulate("fdtree-ds");
}

#[test]
fn nbtree() {
    simulate("nbtree");
}

#[test]
fn latree() {
    simulate("latree");
}

#[test]
fn latree_btree() {
    simulate("latree-btree");
}

#[test]
fn fptree() {
    simulate("fptree");
}
