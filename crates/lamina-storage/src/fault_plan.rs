//! What a [`crate::FaultyStorage`] does wrong, and when. Operations are numbered from 1 in the
//! order they reach the storage; see [`crate::faulty`] for which calls count.

/// Size of the unit a torn write keeps or loses: one disk sector.
pub const SECTOR_BYTES: u64 = 512;

/// The error an injected failure returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailKind {
    /// `EIO`: a device error ([`lamina_core::Error::Io`]).
    #[default]
    Eio,
    /// `ENOSPC`: the device is full ([`lamina_core::Error::NoSpace`]).
    NoSpace,
}

/// A seeded fault plan. Every random choice (torn prefix length, flipped bit) comes from `seed`,
/// so a failing case reproduces exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultPlan {
    /// Seed of every random choice.
    pub seed: u64,
    /// The simulated crash strikes instead of this operation (it does not happen, except for
    /// the torn prefix below); every later call on the storage or its files fails.
    pub crash_at_op: Option<u64>,
    /// When the crash strikes a write: a seeded number of its leading 512-byte sectors (0 to
    /// all but the last; sectors counted from the write's offset rounded down) reaches the
    /// medium and survives the crash.
    pub tear_crashing_write: bool,
    /// Percent chance (0..=100) that each unsynced write or `set_len` nevertheless reaches the
    /// medium before the crash, decided independently per operation (real devices persist
    /// unsynced writes in any order). 0, the default, drops all of them.
    pub unsynced_survival_percent: u8,
    /// This operation fails with `fail_with` and changes nothing.
    pub fail_at_op: Option<u64>,
    /// The error of an injected failure.
    pub fail_with: FailKind,
    /// Whether every operation from `fail_at_op` on fails too (a dead or full device).
    pub fail_sticky: bool,
    /// If this operation is a write, it succeeds but one seeded bit of what it stores is
    /// flipped (the caller's buffer is untouched).
    pub flip_bit_at_op: Option<u64>,
}

impl Default for FaultPlan {
    /// No faults; tearing enabled for when a crash is set.
    fn default() -> Self {
        FaultPlan {
            seed: 0,
            crash_at_op: None,
            tear_crashing_write: true,
            unsynced_survival_percent: 0,
            fail_at_op: None,
            fail_with: FailKind::Eio,
            fail_sticky: false,
            flip_bit_at_op: None,
        }
    }
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// This plan with the crash at operation `op` (1-based).
    pub fn crash_at(mut self, op: u64) -> Self {
        self.crash_at_op = Some(op);
        self
    }

    /// This plan with `seed`.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// This plan with each unsynced write surviving a crash with `percent` chance.
    pub fn unsynced_survival(mut self, percent: u8) -> Self {
        self.unsynced_survival_percent = percent.min(100);
        self
    }

    /// This plan with operation `op` failing with `kind` (and every later one if `sticky`).
    pub fn fail_at(mut self, op: u64, kind: FailKind, sticky: bool) -> Self {
        self.fail_at_op = Some(op);
        self.fail_with = kind;
        self.fail_sticky = sticky;
        self
    }

    /// This plan with a bit flipped in what write operation `op` stores.
    pub fn flip_bit_at(mut self, op: u64) -> Self {
        self.flip_bit_at_op = Some(op);
        self
    }

    /// Whether operation `op` gets the injected failure.
    pub(crate) fn fails(&self, op: u64) -> bool {
        match self.fail_at_op {
            Some(at) if self.fail_sticky => op >= at,
            Some(at) => op == at,
            None => false,
        }
    }
}

/// splitmix64: a tiny, good-enough deterministic generator for fault choices.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(pub u64);

impl SplitMix {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform-enough in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "empty range");
        self.next_u64() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sticky_failures_continue() {
        let plan = FaultPlan::none().fail_at(3, FailKind::NoSpace, true);
        assert!(!plan.fails(2) && plan.fails(3) && plan.fails(9));
        let plan = FaultPlan::none().fail_at(3, FailKind::Eio, false);
        assert!(plan.fails(3) && !plan.fails(4));
    }

    #[test]
    fn rng_is_deterministic() {
        let (mut a, mut b) = (SplitMix(7), SplitMix(7));
        for _ in 0..10 {
            assert_eq!(a.below(1000), b.below(1000));
        }
    }
}
