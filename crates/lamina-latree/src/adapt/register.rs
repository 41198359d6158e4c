//! ADAPT's registers (LA-tree section 2.2, Algorithm 1 line 10, Figure 4).
//!
//! A register `R_i` remembers, for the lookup `L_i` that created it, the buffer's scan cost
//! `s_i` (`scanCost`) and its estimated emptying cost `e_i` (`emptyCost`) at that moment. At a
//! later lookup `L_j` its *savings in hindsight* are `sav(i, j) = (j - i) * s_i`: what emptying
//! at `L_i` would have saved the `j - i` lookups since; the register fires when they exceed
//! `e_i`.
//!
//! Costs are modeled nanoseconds as `f64` (see `crate::cost` for why).
//!
//! [`SavingsRule::BreakEven`] is our variant, not the paper's: see its docs and the crate
//! README ("Adaptations").

/// Upper bound on the `first_firing_lookup` search's correction steps: the first estimate
/// `floor(e / s) + 1` is off by at most one or two while `e / s` is below 2^52 (`f64`'s exact
/// integer range); beyond that no lookup index is ever reached anyway.
const FIRING_FIXUP_STEPS_MAX: u32 = 4;

/// The two costs ADAPT records at a lookup: the buffer's current scan cost `s` and its current
/// estimated emptying cost `e` (section 2.2, "Key Insight"; section 3 computes both).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LookupCosts {
    /// Cost of scanning the whole buffer now (`s_i`), modeled ns.
    pub scan_ns: f64,
    /// Estimated cost of emptying the buffer now (`e_i`), modeled ns.
    pub empty_ns: f64,
}

impl LookupCosts {
    /// Checks the costs are usable: finite and not negative (a NaN would make every
    /// comparison false and silently disable ADAPT).
    pub fn assert_valid(&self) {
        assert!(
            self.scan_ns.is_finite() && self.scan_ns >= 0.0,
            "scan cost must be finite and >= 0, got {}",
            self.scan_ns
        );
        assert!(
            self.empty_ns.is_finite() && self.empty_ns >= 0.0,
            "empty cost must be finite and >= 0, got {}",
            self.empty_ns
        );
    }
}

/// How a register's savings in hindsight are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SavingsRule {
    /// The paper's Algorithm 1: `sav(i, j) = (j - i) * s_i`, the lookups after `L_i` up to and
    /// including `L_j`; `R_j` is created after the check (line 10), so it fires at `L_(j+1)` at
    /// the earliest. Under section 2.2.1's cost model (an empty at a lookup replaces its scan)
    /// this pays up to one scan per phase beyond Theorem 1's bound: `tests/adapt_competitive.rs`
    /// has the counterexample (ratio 3) and the bound it does meet.
    #[default]
    Paper,
    /// The ski-rental break-even rule: `sav'(i, j) = (j - i + 1) * s_i` also counts `L_i`'s own
    /// scan, which emptying at `L_i` would have replaced, and `R_j` is created before the check
    /// (it fires at once if `s_j > e_j`). Meets Theorem 1's `2 OPT + gamma U` in our tests.
    BreakEven,
}

impl SavingsRule {
    /// How many lookups' scans `sav` counts at `L_j` for the register of `L_i` (`i <= j`).
    fn lookups_counted(self, register_lookup: u64, lookup_j: u64) -> u64 {
        match self {
            SavingsRule::Paper => {
                assert!(lookup_j > register_lookup, "sav(i, j) needs i < j");
                lookup_j - register_lookup
            }
            SavingsRule::BreakEven => {
                assert!(lookup_j >= register_lookup, "sav'(i, j) needs i <= j");
                lookup_j - register_lookup + 1
            }
        }
    }

    /// `j - (lookups counted)`: the first `j` whose count is `n` is `register_lookup + n - this`.
    fn count_offset(self) -> u64 {
        match self {
            SavingsRule::Paper => 0,
            SavingsRule::BreakEven => 1,
        }
    }
}

/// `R_i` of Algorithm 1: the costs seen by lookup `L_i` (1-based index since the last empty).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Register {
    /// `i`: the index of the lookup that created the register, counted since the last empty.
    pub lookup: u64,
    /// `R_i.scanCost` (`s_i`) and `R_i.emptyCost` (`e_i`).
    pub costs: LookupCosts,
}

impl Register {
    /// `sav(i, j) = (j - i) * s_i` (section 2.2; Algorithm 1 line 5), or `(j - i + 1) * s_i`
    /// under [`SavingsRule::BreakEven`].
    pub fn savings_ns(&self, lookup_j: u64, rule: SavingsRule) -> f64 {
        rule.lookups_counted(self.lookup, lookup_j) as f64 * self.costs.scan_ns
    }

    /// Whether the register makes ADAPT empty at lookup `L_j`: `sav(i, j) > e_i` (Algorithm 1
    /// line 6).
    pub fn fires_at(&self, lookup_j: u64, rule: SavingsRule) -> bool {
        self.savings_ns(lookup_j, rule) > self.costs.empty_ns
    }

    /// The first lookup index `j` at which [`Register::fires_at`] holds, `None` if never
    /// (`s_i = 0`). Savings grow with `j` and a register never changes, so a register fires at
    /// every lookup from this one on: which of several registers fires first is known when
    /// they are created. [`crate::adapt::AdaptState`] uses this to drop, at its register bound,
    /// a register that can never be the first to fire.
    pub fn first_firing_lookup(&self, rule: SavingsRule) -> Option<u64> {
        let LookupCosts { scan_ns, empty_ns } = self.costs;
        if scan_ns <= 0.0 {
            return None;
        }
        let fires_after = |gap: u64| gap as f64 * scan_ns > empty_ns;
        // Saturating float-to-int conversion: a huge ratio gives u64::MAX.
        let mut gap = ((empty_ns / scan_ns).floor() as u64).saturating_add(1);
        for _ in 0..FIRING_FIXUP_STEPS_MAX {
            if gap > 1 && fires_after(gap - 1) {
                gap -= 1;
            } else if !fires_after(gap) {
                gap = gap.saturating_add(1);
            } else {
                break;
            }
        }
        Some(self.lookup.saturating_add(gap) - rule.count_offset())
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use super::SavingsRule::{BreakEven, Paper};
    use super::*;

    fn register(lookup: u64, scan_ns: f64, empty_ns: f64) -> Register {
        Register { lookup, costs: LookupCosts { scan_ns, empty_ns } }
    }

    #[test]
    fn savings_in_hindsight_match_the_paper() {
        // Figure 4: R_1 = (scanCost 75, emptyCost 215); sav(1, 4) = 3 * 75 = 225 > 215.
        let r1 = register(1, 75.0, 215.0);
        assert_eq!(r1.savings_ns(2, Paper), 75.0);
        assert_eq!(r1.savings_ns(4, Paper), 225.0);
        assert!(!r1.fires_at(3, Paper));
        assert!(r1.fires_at(4, Paper));
        assert_eq!(r1.first_firing_lookup(Paper), Some(4));
        // Counting L_1's own scan, the savings reach 225 at L_3.
        assert_eq!(r1.savings_ns(1, BreakEven), 75.0);
        assert_eq!(r1.first_firing_lookup(BreakEven), Some(3));
    }

    #[test]
    fn first_firing_lookup_agrees_with_fires_at() {
        for (scan, empty) in
            [(1.0, 0.0), (1.0, 1.0), (3.0, 9.0), (3.0, 10.0), (0.1, 0.3), (7.5, 0.0)]
        {
            let r = register(5, scan, empty);
            for (rule, earliest) in [(Paper, 6), (BreakEven, 5)] {
                let first = r.first_firing_lookup(rule).unwrap();
                assert!(first >= earliest && r.fires_at(first, rule), "{scan} {empty}: {first}");
                assert!(first == earliest || !r.fires_at(first - 1, rule), "{scan} {empty}");
            }
        }
        assert_eq!(register(1, 0.0, 5.0).first_firing_lookup(Paper), None);
        assert_eq!(register(1, 1e-300, 1e300).first_firing_lookup(Paper), Some(u64::MAX));
    }

    #[test]
    #[should_panic(expected = "finite")]
    fn nan_costs_are_rejected() {
        LookupCosts { scan_ns: f64::NAN, empty_ns: 1.0 }.assert_valid();
    }
}
