//! Properties of the checker on generated histories: a history produced by a sequential
//! execution, each operation given a random interval around its point in that order, is
//! linearizable; with disjoint intervals every single mutation of a return value is caught,
//! and with overlapping ones most are.

use lamina_linearizability::model::{Op, Ret, State, apply};
use lamina_linearizability::{History, Limits, Operation, Verdict, check};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Nanoseconds between consecutive linearization points.
const STEP_NS: u64 = 10;

/// A sequential execution of `len` random operations over `keys` keys, each operation
/// stretched to an interval of up to `spread_steps` steps either side of its point (its
/// own client, so any overlap is allowed).
fn generated(seed: u64, len: usize, keys: u32, spread_steps: u64) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut states: Vec<State> = vec![None; keys as usize];
    let mut next_value = 1u64;
    let mut operations = Vec::with_capacity(len);
    for i in 0..len {
        let key = rng.random_range(0..keys);
        let state = states[key as usize];
        let mut fresh = || {
            next_value += 1;
            next_value
        };
        let op = match rng.random_range(0..5) {
            0 | 1 => Op::Get,
            2 => Op::Put(fresh()),
            3 => Op::Delete,
            _ => {
                // Mostly the current value (a swap), sometimes a stale or absent one.
                let expected = if rng.random_bool(0.7) { state } else { Some(fresh()) };
                let new = if rng.random_bool(0.2) { None } else { Some(fresh()) };
                Op::Cas { expected, new }
            }
        };
        let (after, ret) = apply(state, op);
        states[key as usize] = after;
        let point = (i as u64 + 1 + spread_steps) * STEP_NS;
        let spread_ns = spread_steps * STEP_NS;
        let before = rng.random_range(0..=spread_ns);
        let after = rng.random_range(0..=spread_ns);
        operations.push(Operation {
            client: i as u32,
            key,
            op,
            ret,
            invoke_ns: point - before,
            response_ns: point + after,
        });
    }
    History { operations }
}

/// A different return value for `op` than `ret`, if the operation has one to change.
fn mutated(ret: Ret, rng: &mut ChaCha8Rng, values_max: u64) -> Option<Ret> {
    let other_value = |rng: &mut ChaCha8Rng, v: Option<u64>| loop {
        let candidate =
            if rng.random_bool(0.2) { None } else { Some(rng.random_range(1..=values_max)) };
        if candidate != v {
            return candidate;
        }
    };
    match ret {
        Ret::Done => None,
        Ret::Value(v) => Some(Ret::Value(other_value(rng, v))),
        Ret::Existed(b) => Some(Ret::Existed(!b)),
        Ret::Swapped => Some(Ret::Mismatch { current: other_value(rng, None) }),
        Ret::Mismatch { current } => {
            if rng.random_bool(0.5) {
                Some(Ret::Swapped)
            } else {
                Some(Ret::Mismatch { current: other_value(rng, current) })
            }
        }
    }
}

/// `history` with one return value changed (the operation picked at random among those
/// with a return value).
fn with_one_mutation(history: &History, seed: u64) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let values_max = history.operations.len() as u64 * 3 + 2;
    let mut out = history.clone();
    loop {
        let i = rng.random_range(0..out.operations.len());
        if let Some(ret) = mutated(out.operations[i].ret, &mut rng, values_max) {
            out.operations[i].ret = ret;
            return out;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn sequential_executions_with_overlapping_intervals_are_linearizable(
        seed: u64, len in 1usize..300, keys in 1u32..4, spread in 0u64..6,
    ) {
        let history = generated(seed, len, keys, spread);
        history.validate().unwrap();
        let report = check(&history, &Limits::default());
        prop_assert_eq!(report.verdict, Verdict::Linearizable);
        prop_assert_eq!(report.operations, len);
    }

    #[test]
    fn with_disjoint_intervals_every_mutation_is_caught(
        seed: u64, len in 2usize..200, keys in 1u32..4,
    ) {
        let history = generated(seed, len, keys, 0);
        prop_assume!(history.operations.iter().any(|op| op.ret != Ret::Done));
        let report = check(&with_one_mutation(&history, seed), &Limits::default());
        prop_assert!(
            matches!(report.verdict, Verdict::NotLinearizable(_)),
            "{:?}", report.verdict
        );
    }
}

#[test]
fn with_overlapping_intervals_most_mutations_are_caught() {
    let (mut caught, mut tried) = (0u32, 0u32);
    for seed in 0..400 {
        let history = generated(seed, 150, 2, 2);
        if history.operations.iter().all(|op| op.ret == Ret::Done) {
            continue;
        }
        tried += 1;
        match check(&with_one_mutation(&history, seed), &Limits::default()).verdict {
            Verdict::NotLinearizable(_) => caught += 1,
            Verdict::Linearizable => {}
            Verdict::Undecided { reason, .. } => panic!("undecided: {reason}"),
        }
    }
    println!("caught {caught} of {tried} single mutations");
    assert!(caught * 10 >= tried * 7, "caught only {caught} of {tried}");
}

/// Long single-key histories where every operation overlaps dozens of others, the shape
/// that left 16 clients on one key undecided (issue 20): decided within a small state bound,
/// and their single mutations still caught or, where the overlap hides them, answered
/// without hitting the bound.
#[test]
fn heavy_overlap_on_one_key_is_decided_within_the_bound() {
    let limits = Limits { states_visited_per_key_max: 200_000, ..Limits::default() };
    let (mut states, mut caught) = (0u64, 0u32);
    for seed in 0..20 {
        let history = generated(seed, 3_000, 1, 8);
        history.validate().unwrap();
        let report = check(&history, &limits);
        assert_eq!(
            report.verdict,
            Verdict::Linearizable,
            "seed {seed}: {} states",
            report.states_visited
        );
        states += report.states_visited;
        match check(&with_one_mutation(&history, seed), &limits).verdict {
            Verdict::NotLinearizable(_) => caught += 1,
            Verdict::Linearizable => {}
            Verdict::Undecided { reason, .. } => panic!("seed {seed}: undecided: {reason}"),
        }
    }
    println!("{states} states for 20 histories of 3,000 operations; caught {caught} of 20");
    assert!(caught >= 10, "caught only {caught} of 20 mutations");
}
