//! The linear cost model of LA-tree section 2.2.1 and ADAPT run on it.
//!
//! One buffer sees a sequence of updates and lookups. Its size `b` is the number of updates
//! since it was last emptied. A lookup that does not empty costs `rho * b` (a scan); an empty
//! costs `delta + gamma * b` and, at a lookup, replaces that lookup's scan. Updates cost nothing
//! themselves (the paper counts them in the parent's emptying), but an update that takes the
//! buffer past `U` forces an empty (Algorithm 1 line 11), for every algorithm alike.

use super::register::LookupCosts;
use super::state::{AdaptOptions, AdaptState, Decision};

/// The constants of section 2.2.1's cost model, in modeled ns (per entry for `rho` and
/// `gamma`). Section 3 derives them from the device: see [`crate::cost::CostModel::linear`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearCostModel {
    /// `rho`: scan cost per buffered entry.
    pub rho: f64,
    /// `delta`: fixed cost of an empty.
    pub delta: f64,
    /// `gamma`: emptying cost per buffered entry.
    pub gamma: f64,
}

impl LinearCostModel {
    /// Checks the constants are finite and not negative.
    pub fn assert_valid(&self) {
        for (name, value) in [("rho", self.rho), ("delta", self.delta), ("gamma", self.gamma)] {
            assert!(value.is_finite() && value >= 0.0, "{name} must be finite and >= 0: {value}");
        }
    }

    /// `rho * b`: a lookup scanning `b` entries.
    pub fn scan_ns(&self, buffer_entries: u64) -> f64 {
        self.rho * buffer_entries as f64
    }

    /// `delta + gamma * b`: emptying `b` entries.
    pub fn empty_ns(&self, buffer_entries: u64) -> f64 {
        self.delta + self.gamma * buffer_entries as f64
    }

    /// Both, as ADAPT records them in a register.
    pub fn lookup_costs(&self, buffer_entries: u64) -> LookupCosts {
        LookupCosts {
            scan_ns: self.scan_ns(buffer_entries),
            empty_ns: self.empty_ns(buffer_entries),
        }
    }
}

/// One operation reaching a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferOp {
    /// An insert or delete appended to the buffer.
    Update,
    /// A lookup that must scan the buffer (or empty it).
    Lookup,
}

/// What an algorithm paid on a sequence, and where it emptied.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleCost {
    /// Total modeled cost: scans plus empties (section 2.2.1's `C[ALG]`).
    pub cost_ns: f64,
    /// Indices (into the operation sequence) of the operations at which the buffer was emptied:
    /// lookups chosen by the algorithm and updates that overflowed `U`.
    pub empties: Vec<usize>,
}

/// Runs ADAPT ([`AdaptState`] with `options`) on `ops` under `model` with buffer limit
/// `limit_entries` (`U`), and prices what it does with the same model: the registers get
/// `s = rho * b` and `e = delta + gamma * b`.
pub fn run_adapt(
    ops: &[BufferOp],
    model: &LinearCostModel,
    limit_entries: u64,
    options: AdaptOptions,
) -> ScheduleCost {
    model.assert_valid();
    let mut adapt = AdaptState::with_options(options);
    let mut buffer_entries = 0u64;
    let mut out = ScheduleCost { cost_ns: 0.0, empties: Vec::new() };
    for (at, op) in ops.iter().enumerate() {
        let decision = match op {
            BufferOp::Update => {
                buffer_entries += 1;
                adapt.on_update(buffer_entries, limit_entries)
            }
            BufferOp::Lookup => adapt.on_lookup(model.lookup_costs(buffer_entries)),
        };
        match decision {
            Decision::Empty(_) => {
                out.cost_ns += model.empty_ns(buffer_entries);
                out.empties.push(at);
                buffer_entries = 0;
                adapt.emptied();
            }
            Decision::NotEmpty if *op == BufferOp::Lookup => {
                out.cost_ns += model.scan_ns(buffer_entries);
            }
            Decision::NotEmpty => {}
        }
        assert!(buffer_entries <= limit_entries, "ADAPT let the buffer pass U");
    }
    out
}

/// Prices a given schedule: the buffer is emptied at the lookups for which `empty_at` holds
/// (it is ignored for updates) and, forcibly, at every update that takes it past
/// `limit_entries`. [`crate::adapt::optimal_schedule`]'s tests check the optimum against
/// every schedule this way.
pub fn schedule_cost(
    ops: &[BufferOp],
    model: &LinearCostModel,
    limit_entries: u64,
    mut empty_at: impl FnMut(usize) -> bool,
) -> ScheduleCost {
    model.assert_valid();
    let mut buffer_entries = 0u64;
    let mut out = ScheduleCost { cost_ns: 0.0, empties: Vec::new() };
    for (at, op) in ops.iter().enumerate() {
        let empty = match op {
            BufferOp::Update => {
                buffer_entries += 1;
                buffer_entries > limit_entries
            }
            BufferOp::Lookup => empty_at(at),
        };
        if empty {
            out.cost_ns += model.empty_ns(buffer_entries);
            out.empties.push(at);
            buffer_entries = 0;
        } else if *op == BufferOp::Lookup {
            out.cost_ns += model.scan_ns(buffer_entries);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use super::BufferOp::{Lookup, Update};
    use super::*;

    /// Figure 4 as a sequence: the linear model rho = gamma = 15, delta = 140 reproduces the
    /// paper's L1 (b = 5: s = 75, e = 215) and L2 (b = 6: s = 90, e = 230); ADAPT scans at
    /// L1..L3 (75 + 90 + 105) and empties at L4 (140 + 15 * 8).
    #[test]
    fn figure_4_through_the_linear_model() {
        let model = LinearCostModel { rho: 15.0, delta: 140.0, gamma: 15.0 };
        assert_eq!(model.lookup_costs(5), LookupCosts { scan_ns: 75.0, empty_ns: 215.0 });
        assert_eq!(model.lookup_costs(6), LookupCosts { scan_ns: 90.0, empty_ns: 230.0 });
        let mut ops = vec![Update; 5];
        ops.extend([Lookup, Update, Lookup, Update, Lookup, Update, Lookup]);
        let run = run_adapt(&ops, &model, 100, AdaptOptions::default());
        assert_eq!(run.empties, vec![11]);
        assert_eq!(run.cost_ns, 75.0 + 90.0 + 105.0 + 260.0);
        assert_eq!(schedule_cost(&ops, &model, 100, |at| at == 11), run);
    }

    #[test]
    fn overflow_forces_an_empty_in_every_schedule() {
        let model = LinearCostModel { rho: 1.0, delta: 10.0, gamma: 2.0 };
        let ops = [Update, Update, Update, Lookup];
        let expected = ScheduleCost { cost_ns: 10.0 + 2.0 * 3.0, empties: vec![2] };
        assert_eq!(run_adapt(&ops, &model, 2, AdaptOptions::default()), expected);
        assert_eq!(schedule_cost(&ops, &model, 2, |_| false), expected);
    }
}
