//! The offline optimum `OPT` of LA-tree section 2.2.1, by dynamic programming.
//!
//! `OPT` knows the whole sequence of operations on one buffer and chooses the lookups at which
//! to empty (`L_E[OPT]`), paying the linear model's costs ([`LinearCostModel`]); like every
//! algorithm it must empty at an update that takes the buffer past `U`. As in the paper,
//! empties happen at lookups (where they replace the scan) or at overflows, never by choice at
//! an update.
//!
//! The state after each operation is the buffer size `b` in `0..=U`. An update moves `b` to
//! `b + 1` (or to 0 through a forced empty of `U + 1` entries); a lookup either scans
//! (`b` stays, cost `rho * b`) or empties (to 0, cost `delta + gamma * b`). Only the
//! transition into `b = 0` at a lookup is a choice, so one predecessor per operation suffices
//! to recover the schedule: `O(n * U)` time, `O(n + U)` memory.

use lamina_core::{Error, Result};

use super::linear::{BufferOp, LinearCostModel, ScheduleCost};

/// Largest `ops.len() * (U + 1)` [`optimal_schedule`] accepts (about 4 seconds of work); larger
/// inputs get an error rather than an unbounded run.
pub const OPT_CELLS_MAX: u64 = 1 << 32;

/// The cheapest schedule for `ops` on one buffer of limit `limit_entries` (`U`): its cost and
/// the operations at which it empties.
pub fn optimal_schedule(
    ops: &[BufferOp],
    model: &LinearCostModel,
    limit_entries: u64,
) -> Result<ScheduleCost> {
    model.assert_valid();
    let cells = (ops.len() as u64).saturating_mul(limit_entries.saturating_add(1));
    if cells > OPT_CELLS_MAX {
        return Err(Error::option(
            "limit_entries",
            format!(
                "OPT over {} operations with U = {limit_entries} needs {cells} DP cells, \
                 more than OPT_CELLS_MAX = {OPT_CELLS_MAX}",
                ops.len()
            ),
        ));
    }
    let limit = limit_entries as usize;
    // cost[b]: cheapest cost of the operations so far ending with buffer size b.
    let mut cost = vec![f64::INFINITY; limit + 1];
    cost[0] = 0.0;
    let mut next = cost.clone();
    // Per lookup: the size the buffer was emptied from to reach b = 0 on the cheapest path,
    // None when b = 0 was reached by scanning an already empty buffer.
    let mut emptied_from: Vec<Option<usize>> = vec![None; ops.len()];
    for (at, op) in ops.iter().enumerate() {
        next.fill(f64::INFINITY);
        match op {
            BufferOp::Update => {
                next[1..].copy_from_slice(&cost[..limit]);
                next[0] = cost[limit] + model.empty_ns(limit_entries + 1);
            }
            BufferOp::Lookup => {
                for (b, (n, c)) in next.iter_mut().zip(&cost).enumerate() {
                    *n = c + model.scan_ns(b as u64);
                }
                for (b, c) in cost.iter().enumerate() {
                    let via_empty = c + model.empty_ns(b as u64);
                    if via_empty < next[0] {
                        next[0] = via_empty;
                        emptied_from[at] = Some(b);
                    }
                }
            }
        }
        std::mem::swap(&mut cost, &mut next);
    }
    let (mut b, &cost_ns) = cost
        .iter()
        .enumerate()
        .min_by(|x, y| x.1.total_cmp(y.1))
        .expect("the DP has U + 1 >= 1 states");
    assert!(cost_ns.is_finite(), "some schedule is always feasible");
    let mut empties = Vec::new();
    for (at, op) in ops.iter().enumerate().rev() {
        match op {
            BufferOp::Update if b == 0 => {
                empties.push(at);
                b = limit;
            }
            BufferOp::Update => b -= 1,
            BufferOp::Lookup if b == 0 => {
                if let Some(from) = emptied_from[at] {
                    empties.push(at);
                    b = from;
                }
            }
            BufferOp::Lookup => {}
        }
    }
    assert_eq!(b, 0, "the recovered schedule starts from an empty buffer");
    empties.reverse();
    Ok(ScheduleCost { cost_ns, empties })
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use proptest::prelude::*;

    use super::BufferOp::{Lookup, Update};
    use super::*;
    use crate::adapt::schedule_cost;

    /// Every choice of lookups to empty at, priced by [`schedule_cost`]: the brute-force
    /// optimum (2^lookups schedules).
    fn brute_force(ops: &[BufferOp], model: &LinearCostModel, limit: u64) -> f64 {
        let lookups: Vec<usize> =
            ops.iter().enumerate().filter(|(_, op)| **op == Lookup).map(|(at, _)| at).collect();
        assert!(lookups.len() <= 16, "brute force is for tiny sequences");
        (0u32..1 << lookups.len())
            .map(|mask| {
                let chosen = |at: usize| {
                    lookups.iter().position(|&l| l == at).is_some_and(|k| mask >> k & 1 == 1)
                };
                schedule_cost(ops, model, limit, chosen).cost_ns
            })
            .fold(f64::INFINITY, f64::min)
    }

    fn op() -> impl Strategy<Value = BufferOp> {
        prop_oneof![Just(Update), Just(Lookup)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// The DP equals the brute-force optimum on tiny sequences, and the schedule it
        /// returns costs what it says. Integer constants keep the f64 sums exact.
        #[test]
        fn dp_matches_brute_force(
            ops in prop::collection::vec(op(), 0..=12),
            rho in 0u32..20, delta in 0u32..60, gamma in 0u32..20, limit in 1u64..6,
        ) {
            let model = LinearCostModel {
                rho: f64::from(rho), delta: f64::from(delta), gamma: f64::from(gamma),
            };
            let opt = optimal_schedule(&ops, &model, limit).unwrap();
            prop_assert_eq!(opt.cost_ns, brute_force(&ops, &model, limit));
            let empties = opt.empties.clone();
            let replay = schedule_cost(&ops, &model, limit, |at| empties.contains(&at));
            prop_assert_eq!(replay, opt);
        }
    }

    #[test]
    fn ski_rental_buys_or_rents() {
        // One update, then lookups: rent (scan, rho each) or buy (empty once, delta + gamma).
        let model = LinearCostModel { rho: 10.0, delta: 25.0, gamma: 5.0 };
        let rent = [Update, Lookup, Lookup];
        assert_eq!(optimal_schedule(&rent, &model, 4).unwrap().cost_ns, 20.0);
        let buy = [Update, Lookup, Lookup, Lookup, Lookup];
        let opt = optimal_schedule(&buy, &model, 4).unwrap();
        assert_eq!((opt.cost_ns, opt.empties), (30.0, vec![1]));
    }

    #[test]
    fn oversized_inputs_are_refused() {
        let model = LinearCostModel { rho: 1.0, delta: 1.0, gamma: 1.0 };
        let err = optimal_schedule(&[Lookup; 4], &model, OPT_CELLS_MAX).unwrap_err();
        assert!(err.to_string().contains("OPT_CELLS_MAX"), "{err}");
    }
}
