//! One buffer's ADAPT state and decisions: Algorithm 1 of LA-tree section 2.2, with the
//! section's "practical considerations" (registers erased at each empty, one register per group
//! of consecutive lookups) and a bound on the registers kept.

use super::register::{LookupCosts, Register, SavingsRule};

/// Registers a buffer keeps at most ([`AdaptState::new`]). The paper expects "only a few (e.g.,
/// 3)". The bound costs nothing in decisions: registers never change, so each has a fixed first
/// lookup at which it fires ([`Register::first_firing_lookup`]) and ADAPT empties at the
/// earliest of them; at the bound the register that would fire *last* is dropped, which keeps
/// that earliest one. Any bound >= 1 decides exactly as unbounded registers (tested in
/// `tests/adapt_competitive.rs`); 8 keeps the loop of Algorithm 1 lines 4-9 visible for
/// debugging while keeping it short.
pub const REGISTERS_MAX: usize = 8;

/// How ADAPT runs for one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdaptOptions {
    /// Registers kept at most (>= 1); default [`REGISTERS_MAX`].
    pub registers_max: usize,
    /// How savings in hindsight are counted; default the paper's.
    pub savings_rule: SavingsRule,
}

impl Default for AdaptOptions {
    fn default() -> Self {
        AdaptOptions { registers_max: REGISTERS_MAX, savings_rule: SavingsRule::Paper }
    }
}

/// Why ADAPT said EMPTY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyReason {
    /// Algorithm 1 lines 4-7: the register of lookup `L_i` (index since the last empty) has
    /// `sav(i, j) > e_i` at the current lookup `L_j`.
    SavingsInHindsight {
        /// `i`.
        register_lookup: u64,
        /// `j`.
        lookup: u64,
    },
    /// Algorithm 1 lines 11-12: an update took the buffer past its limit `U`.
    Overflow,
}

/// ADAPT's answer for one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Algorithm 1 line 14: keep the buffer (a lookup then scans it).
    NotEmpty,
    /// Algorithm 1 lines 7 and 12: empty the buffer now (at a lookup, instead of scanning it);
    /// the caller calls [`AdaptState::emptied`] once the emptying is done.
    Empty(EmptyReason),
}

/// ADAPT's per-buffer state (section 2.2): the lookup index `j` and the registers created since
/// the buffer was last emptied.
#[derive(Debug, Clone)]
pub struct AdaptState {
    /// `j`: lookups seen since the last empty (Algorithm 1 line 2).
    lookups: u64,
    /// `R_i` for the first lookup of each group since the last empty, oldest first.
    registers: Vec<Register>,
    options: AdaptOptions,
    /// Whether a lookup has come since the last update (or empty): such a lookup joins the
    /// current group and creates no register.
    in_lookup_group: bool,
}

impl Default for AdaptState {
    fn default() -> Self {
        Self::new()
    }
}

impl AdaptState {
    /// A fresh state (a new or just emptied buffer) with the default options: the paper's
    /// rule, at most [`REGISTERS_MAX`] registers.
    pub fn new() -> Self {
        Self::with_options(AdaptOptions::default())
    }

    /// A fresh state with `options`.
    pub fn with_options(options: AdaptOptions) -> Self {
        assert!(options.registers_max >= 1, "ADAPT needs at least one register");
        AdaptState { lookups: 0, registers: Vec::new(), options, in_lookup_group: false }
    }

    /// The options this state runs with.
    pub fn options(&self) -> AdaptOptions {
        self.options
    }

    /// Algorithm 1 lines 1-10, for a lookup reaching this buffer; `costs` are the buffer's
    /// current scan cost `s_j` and estimated emptying cost `e_j` (section 3).
    ///
    /// Line 2 counts the lookup; lines 4-9 return EMPTY if some register `R_i` has savings in
    /// hindsight `sav(i, j) = (j - i) * s_i` above `e_i`; otherwise line 10 records
    /// `R_j = (s_j, e_j)`, unless this lookup continues a group of consecutive lookups (no
    /// update since the previous lookup): then the group's first register has the same costs
    /// and fires no later, so `R_j` would never decide anything (section 2.2, "practical
    /// considerations"). A register with `s_j = 0` (empty buffer) is skipped for the same reason:
    /// it never fires. Under [`SavingsRule::BreakEven`] line 10 moves before line 4, so that the
    /// new register is checked at its own lookup.
    ///
    /// The group rule assumes the costs do not change within a group; in the tree they may drift
    /// a little without an update (for example when the pool flushes a fragment, changing the
    /// fragmentation overhead), and the group keeps its first lookup's costs.
    pub fn on_lookup(&mut self, costs: LookupCosts) -> Decision {
        costs.assert_valid();
        self.lookups = self.lookups.checked_add(1).expect("lookup index overflow");
        let j = self.lookups;
        let rule = self.options.savings_rule;
        let opens_group = !self.in_lookup_group && costs.scan_ns > 0.0;
        self.in_lookup_group = true;
        if opens_group && rule == SavingsRule::BreakEven {
            self.push_register(Register { lookup: j, costs });
        }
        if let Some(r) = self.registers.iter().find(|r| r.fires_at(j, rule)) {
            return Decision::Empty(EmptyReason::SavingsInHindsight {
                register_lookup: r.lookup,
                lookup: j,
            });
        }
        if opens_group && rule == SavingsRule::Paper {
            self.push_register(Register { lookup: j, costs });
        }
        Decision::NotEmpty
    }

    /// Algorithm 1 lines 11-13, for an update appended to this buffer (one call per append,
    /// or per batch distributed from the parent): EMPTY if the buffer now holds more than
    /// `limit_entries` (`U`) entries. The update also closes the current group of lookups.
    pub fn on_update(&mut self, buffer_entries: u64, limit_entries: u64) -> Decision {
        self.in_lookup_group = false;
        if buffer_entries > limit_entries {
            Decision::Empty(EmptyReason::Overflow)
        } else {
            Decision::NotEmpty
        }
    }

    /// The buffer has been emptied: erase its registers and restart the lookup index
    /// (section 2.2: "we erase a buffer's registers each time it is emptied").
    pub fn emptied(&mut self) {
        self.lookups = 0;
        self.registers.clear();
        self.in_lookup_group = false;
    }

    /// The registers kept, oldest first.
    pub fn registers(&self) -> &[Register] {
        &self.registers
    }

    /// `j`: lookups since the last empty.
    pub fn lookups_since_empty(&self) -> u64 {
        self.lookups
    }

    /// Adds a register, dropping at the bound the register that fires last (see
    /// [`REGISTERS_MAX`]); the new one is a candidate too.
    fn push_register(&mut self, register: Register) {
        self.registers.push(register);
        if self.registers.len() > self.options.registers_max {
            let rule = self.options.savings_rule;
            let fires_last = |r: &Register| r.first_firing_lookup(rule).unwrap_or(u64::MAX);
            let (drop_at, _) = self
                .registers
                .iter()
                .enumerate()
                .max_by_key(|(at, r)| (fires_last(r), *at))
                .expect("registers is not empty");
            self.registers.remove(drop_at);
        }
        debug_assert!(self.registers.len() <= self.options.registers_max);
        debug_assert!(self.registers.windows(2).all(|w| w[0].lookup < w[1].lookup));
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact values built from exact inputs
mod tests {
    use super::*;

    fn costs(scan_ns: f64, empty_ns: f64) -> LookupCosts {
        LookupCosts { scan_ns, empty_ns }
    }

    /// Figure 4: lookups L1..L4 on one buffer, with updates between them (each lookup sees a
    /// bigger buffer, so each starts its own group). L1 (s=75, e=215) and L2 (s=90, e=230) are
    /// the paper's; the figure's values for L3 and L4 are not in the text, so we continue the
    /// linear model the first two fit (s = 15 b, e = 140 + 15 b with b = 5, 6, 7, 8 entries,
    /// one update between lookups): L3 (s=105, e=245), L4 (s=120, e=260). Neither reaches its
    /// emptying cost before L4, so the paper's statement holds: ADAPT empties first at L4,
    /// because sav(1, 4) = 3 * 75 = 225 > 215.
    #[test]
    fn figure_4_empties_at_the_fourth_lookup() {
        let mut adapt = AdaptState::new();
        let lookups = [costs(75.0, 215.0), costs(90.0, 230.0), costs(105.0, 245.0)];
        for (at, lookup) in lookups.into_iter().enumerate() {
            assert_eq!(adapt.on_update(5 + at as u64, 1_000), Decision::NotEmpty);
            assert_eq!(adapt.on_lookup(lookup), Decision::NotEmpty, "L{}", at + 1);
        }
        // Before L4: sav(1,3) = 150 <= 215, sav(2,3) = 90 <= 230: three registers, none fired.
        let kept: Vec<_> = adapt.registers().iter().map(|r| (r.lookup, r.costs)).collect();
        assert_eq!(kept, vec![(1, lookups[0]), (2, lookups[1]), (3, lookups[2])]);
        assert_eq!(adapt.on_update(8, 1_000), Decision::NotEmpty);
        assert_eq!(adapt.registers()[0].savings_ns(4, SavingsRule::Paper), 225.0);
        assert_eq!(
            adapt.on_lookup(costs(120.0, 260.0)),
            Decision::Empty(EmptyReason::SavingsInHindsight { register_lookup: 1, lookup: 4 })
        );
        adapt.emptied();
        assert!(adapt.registers().is_empty());
        assert_eq!(adapt.lookups_since_empty(), 0);
    }

    /// The same four lookups with no update between them form one group: one register, and
    /// it still fires at L4 (the group's first lookup is the first to fire).
    #[test]
    fn consecutive_lookups_share_one_register() {
        let mut adapt = AdaptState::new();
        adapt.on_update(5, 1_000);
        for _ in 0..3 {
            assert_eq!(adapt.on_lookup(costs(75.0, 215.0)), Decision::NotEmpty);
        }
        assert_eq!(adapt.registers().len(), 1);
        assert!(matches!(adapt.on_lookup(costs(75.0, 215.0)), Decision::Empty(_)));
    }

    #[test]
    fn overflow_empties_only_past_the_limit() {
        let mut adapt = AdaptState::new();
        assert_eq!(adapt.on_update(10, 10), Decision::NotEmpty);
        assert_eq!(adapt.on_update(11, 10), Decision::Empty(EmptyReason::Overflow));
    }

    #[test]
    fn empty_buffers_create_no_register() {
        let mut adapt = AdaptState::new();
        for _ in 0..100 {
            assert_eq!(adapt.on_lookup(costs(0.0, 50.0)), Decision::NotEmpty);
            adapt.on_update(0, 10);
        }
        assert!(adapt.registers().is_empty());
    }

    /// Under the break-even rule the same lookups empty at L3: sav'(1, 3) = 3 * 75 = 225 > 215
    /// (L1's own scan counts). A lookup whose scan exceeds its emptying empties at once.
    #[test]
    fn break_even_counts_the_registers_own_lookup() {
        let options = AdaptOptions { savings_rule: SavingsRule::BreakEven, ..Default::default() };
        let mut adapt = AdaptState::with_options(options);
        for (at, lookup) in [costs(75.0, 215.0), costs(90.0, 230.0)].into_iter().enumerate() {
            adapt.on_update(5 + at as u64, 1_000);
            assert_eq!(adapt.on_lookup(lookup), Decision::NotEmpty);
        }
        adapt.on_update(7, 1_000);
        assert_eq!(
            adapt.on_lookup(costs(105.0, 245.0)),
            Decision::Empty(EmptyReason::SavingsInHindsight { register_lookup: 1, lookup: 3 })
        );
        let mut adapt = AdaptState::with_options(options);
        adapt.on_update(1, 1_000);
        assert_eq!(
            adapt.on_lookup(costs(10.0, 9.0)),
            Decision::Empty(EmptyReason::SavingsInHindsight { register_lookup: 1, lookup: 1 })
        );
    }

    /// At the bound the register that would fire last goes; the earliest-firing one stays.
    #[test]
    fn the_bound_keeps_the_earliest_firing_register() {
        let mut adapt =
            AdaptState::with_options(AdaptOptions { registers_max: 2, ..AdaptOptions::default() });
        // R_1 fires at j = 1 + 101 = 102, R_2 at 2 + 2 = 4, R_3 at 3 + 51 = 54.
        for c in [costs(1.0, 100.0), costs(10.0, 10.0), costs(2.0, 100.0)] {
            adapt.on_update(1, 10);
            assert_eq!(adapt.on_lookup(c), Decision::NotEmpty);
        }
        let kept: Vec<_> = adapt.registers().iter().map(|r| r.lookup).collect();
        assert_eq!(kept, vec![2, 3]);
        assert_eq!(
            adapt.on_lookup(costs(1.0, 1.0)),
            Decision::Empty(EmptyReason::SavingsInHindsight { register_lookup: 2, lookup: 4 })
        );
    }
}
