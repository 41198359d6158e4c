//! A Wing-Gong linearizability checker with Lowe's memoization (and Horn and Kroening's
//! presentation): search for a sequential order of a key's operations that respects real
//! time (an operation that returned before another was invoked comes first) and the
//! register model (`crate::model`), linearizing operations as early as possible and
//! backtracking; a (set of linearized operations, state) pair already explored is not
//! explored again. Keys are checked one at a time (P-compositionality: a history is
//! linearizable iff every key's sub-history is).
//!
//! An operation that leaves the register as it is whatever it returns (a get, a refused
//! compare-and-swap, a delete of an absent key) and that may come next from the current
//! state is placed next without trying the others first ([`forced`]): it changes no state,
//! so any linearization that places it later can place it here instead. Only writes
//! branch, which is what made 16 clients on one key undecided before (issue 20).
//!
//! States are memoized up to the values nobody observes: a register holding a value that no
//! get returned, no compare-and-swap expected and no refused one reported behaves as one
//! holding any other such value in every later step, so the memo stores them all as one
//! ([`Observed`]), and orders of blind writes that end in such a value are explored once.
//!
//! The search is exponential in the worst case, so it is bounded ([`Limits`]): past the
//! bound the answer is [`Verdict::Undecided`], never a hang.

use std::collections::HashSet;
use std::fmt;

use crate::history::{History, Operation, ValueName};
use crate::model::{self, Op, Ret, State};

/// Bounds on the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most operations in one key's sub-history; a longer one is undecided.
    pub operations_per_key_max: usize,
    /// Most search states (partial linearizations) visited for one key.
    pub states_visited_per_key_max: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { operations_per_key_max: 100_000, states_visited_per_key_max: 2_000_000 }
    }
}

/// Why a key's sub-history is not linearizable: the deepest partial linearization found
/// and the operations none of which could extend it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The key.
    pub key: u32,
    /// Operations of the key's sub-history.
    pub operations: usize,
    /// The most operations any partial linearization placed.
    pub linearized_max: usize,
    /// The last operations of that partial linearization (up to [`PLACED_SHOWN`]), in order.
    pub placed_last: Vec<Operation>,
    /// The register's state after that partial linearization.
    pub state: State,
    /// The operations that could come next there (in real time) but none of which may
    /// return what it returned from that state.
    pub stuck: Vec<Operation>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "key {}: not linearizable; at most {} of its {} operations linearize, reaching \
             state {}; no candidate can come next:",
            self.key,
            self.linearized_max,
            self.operations,
            ValueName(self.state)
        )?;
        for op in &self.stuck {
            write!(f, "\n  {op}")?;
        }
        write!(f, "\nthe last operations linearized before that point:")?;
        for op in &self.placed_last {
            write!(f, "\n  {op}")?;
        }
        Ok(())
    }
}

/// Operations of the deepest partial linearization a [`Violation`] shows.
pub const PLACED_SHOWN: usize = 8;

/// The checker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every key's sub-history has a linearization.
    Linearizable,
    /// Some key's has none (the first such key).
    NotLinearizable(Violation),
    /// The search hit a limit before deciding (the first such key; later keys unchecked).
    Undecided {
        /// The key.
        key: u32,
        /// Which limit.
        reason: String,
    },
}

/// The verdict and how much searching it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The answer.
    pub verdict: Verdict,
    /// Keys checked.
    pub keys: usize,
    /// Operations checked.
    pub operations: usize,
    /// Search states visited over all keys.
    pub states_visited: u64,
}

/// Checks `history` (which must be well formed: [`History::validate`]).
pub fn check(history: &History, limits: &Limits) -> Report {
    let mut report =
        Report { verdict: Verdict::Linearizable, keys: 0, operations: 0, states_visited: 0 };
    for (key, ops) in history.by_key() {
        report.keys += 1;
        report.operations += ops.len();
        let (verdict, visited) = check_key(key, &ops, limits);
        report.states_visited += visited;
        if verdict != Verdict::Linearizable {
            report.verdict = verdict;
            return report;
        }
    }
    report
}

/// One level of the depth-first search: the operations that may come next and which one
/// is being tried.
struct Frame {
    /// The operation this frame linearized (`None` at the root) and the state before it.
    placed: Option<(usize, State)>,
    candidates: Vec<usize>,
    next: usize,
}

/// The deepest partial linearization found, for the report.
struct Deepest {
    count: usize,
    state: State,
    candidates: Vec<usize>,
    placed_last: Vec<Operation>,
}

/// The set of linearized operations: a flag per operation, the first unlinearized one
/// (`prefix`), and a 128-bit Zobrist hash of the set (the XOR of a random word per member,
/// updated in O(1) as operations are placed and taken back) that the memo stores instead
/// of the set.
///
/// The memo thus keeps 16 bytes per set instead of its members (the sets of long
/// histories, with one operation concurrent with thousands, took gigabytes). Two different
/// sets share a hash with probability 2^-128 per pair: over the 10^8 states a search may
/// visit, a collision (which would prune a branch, so could only turn "linearizable" into
/// a reported violation, never hide one) has odds below 10^-22.
struct Linearized {
    done: Vec<bool>,
    prefix: usize,
    count: usize,
    words: Vec<u128>,
    hash: u128,
}

impl Linearized {
    fn new(operations: usize, key: u32) -> Self {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x11ea_0000 ^ u64::from(key));
        Linearized {
            done: vec![false; operations],
            prefix: 0,
            count: 0,
            words: (0..operations).map(|_| rng.random::<u128>()).collect(),
            hash: 0,
        }
    }

    fn set(&mut self, i: usize) {
        debug_assert!(!self.done[i]);
        self.done[i] = true;
        self.count += 1;
        self.hash ^= self.words[i];
        while self.prefix < self.done.len() && self.done[self.prefix] {
            self.prefix += 1;
        }
    }

    fn clear(&mut self, i: usize) {
        debug_assert!(self.done[i]);
        self.done[i] = false;
        self.count -= 1;
        self.hash ^= self.words[i];
        self.prefix = self.prefix.min(i);
    }

    /// The memo key of this set.
    fn key(&self) -> u128 {
        self.hash
    }

    /// The unlinearized operations that may come next: those invoked no later than the
    /// earliest response among unlinearized operations (`ops` sorted by invocation).
    fn candidates(&self, ops: &[Operation]) -> Vec<usize> {
        let mut out = Vec::new();
        let mut response_min = u64::MAX;
        for (i, op) in ops.iter().enumerate().skip(self.prefix) {
            if self.done[i] {
                continue;
            }
            // Equal timestamps count as concurrent: the clock cannot order them.
            if op.invoke_ns > response_min {
                break;
            }
            response_min = response_min.min(op.response_ns);
            out.push(i);
        }
        out
    }
}

/// Whether `op` leaves the register's state as it found it, whatever that state was (given
/// what it returned): a get, a refused compare-and-swap, a delete that found nothing.
fn preserves_state(op: &Operation) -> bool {
    matches!(op.op, Op::Get)
        || matches!(op.ret, Ret::Mismatch { .. })
        || (op.op == Op::Delete && op.ret == Ret::Existed(false))
}

/// A state-preserving candidate that may come next from `state`, if there is one: the
/// search then tries it alone.
///
/// Why one suffices: let `r` be such a candidate and `L` a linearization extending the
/// current prefix that places `r` later. Moving `r` to the front of the rest keeps every
/// real-time order (`r` is a candidate: it was invoked no later than any unplaced operation
/// returned, so none of those must precede it) and every return value (`r` returns what the
/// current state gives, and changes no state, here or where it was).
fn forced(ops: &[Operation], candidates: &[usize], state: State) -> Option<usize> {
    candidates
        .iter()
        .copied()
        .find(|&i| preserves_state(&ops[i]) && model::step(state, ops[i].op, ops[i].ret).is_some())
}

/// The candidates the search tries from `state`: the [`forced`] one alone if there is one,
/// else all of them, earliest response first (a heuristic: the order changes which
/// linearization is found first, not whether one is).
fn tried(ops: &[Operation], candidates: Vec<usize>, state: State) -> Vec<usize> {
    match forced(ops, &candidates, state) {
        Some(i) => vec![i],
        None => {
            let mut by_response = candidates;
            by_response.sort_by_key(|&i| ops[i].response_ns);
            by_response
        }
    }
}

/// The values some operation of a key's history observes: returned by a get, expected by a
/// compare-and-swap, or reported by a refused one.
struct Observed(HashSet<u64>);

impl Observed {
    fn of(ops: &[Operation]) -> Self {
        let mut seen = HashSet::new();
        for op in ops {
            if let Op::Cas { expected: Some(v), .. } = op.op {
                seen.insert(v);
            }
            match op.ret {
                Ret::Value(Some(v)) | Ret::Mismatch { current: Some(v) } => {
                    seen.insert(v);
                }
                _ => {}
            }
        }
        Observed(seen)
    }

    /// `state` for the memo: an unobserved value as `Unseen`.
    fn memo_state(&self, state: State) -> MemoState {
        match state {
            None => MemoState::Absent,
            Some(v) if self.0.contains(&v) => MemoState::Value(v),
            Some(_) => MemoState::Unseen,
        }
    }
}

/// A register state as the memo tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MemoState {
    Absent,
    Value(u64),
    /// Some value no operation observes.
    Unseen,
}

/// Checks one key's operations, sorted by invocation time: the verdict and the states
/// visited.
pub fn check_key(key: u32, ops: &[Operation], limits: &Limits) -> (Verdict, u64) {
    assert!(ops.windows(2).all(|w| w[0].invoke_ns <= w[1].invoke_ns), "sorted by invocation");
    if ops.len() > limits.operations_per_key_max {
        let reason = format!(
            "{} operations, more than the limit of {}",
            ops.len(),
            limits.operations_per_key_max
        );
        return (Verdict::Undecided { key, reason }, 0);
    }
    let mut linearized = Linearized::new(ops.len(), key);
    let mut state: State = None;
    let observed = Observed::of(ops);
    let mut memo: HashSet<(u128, MemoState)> = HashSet::new();
    let mut visited = 0u64;
    let first = linearized.candidates(ops);
    let mut deepest =
        Deepest { count: 0, state: None, candidates: first.clone(), placed_last: Vec::new() };
    let mut frames = vec![Frame { placed: None, candidates: tried(ops, first, state), next: 0 }];
    while linearized.count < ops.len() {
        let frame = frames.last_mut().expect("the root frame is popped only to return");
        if let Some(&i) = frame.candidates.get(frame.next) {
            frame.next += 1;
            let Some(after) = model::step(state, ops[i].op, ops[i].ret) else { continue };
            linearized.set(i);
            if !memo.insert((linearized.key(), observed.memo_state(after))) {
                linearized.clear(i);
                continue;
            }
            visited += 1;
            if visited > limits.states_visited_per_key_max {
                let reason = format!(
                    "visited more than {} search states (deepest: {} of {} operations)",
                    limits.states_visited_per_key_max,
                    deepest.count,
                    ops.len()
                );
                return (Verdict::Undecided { key, reason }, visited);
            }
            let all = linearized.candidates(ops);
            let deeper = linearized.count > deepest.count;
            let all_shown = if deeper { all.clone() } else { Vec::new() };
            frames.push(Frame {
                placed: Some((i, state)),
                candidates: tried(ops, all, after),
                next: 0,
            });
            state = after;
            if deeper {
                deepest = Deepest {
                    count: linearized.count,
                    state,
                    candidates: all_shown,
                    placed_last: frames[frames.len().saturating_sub(PLACED_SHOWN)..]
                        .iter()
                        .filter_map(|f| f.placed.map(|(i, _)| ops[i]))
                        .collect(),
                };
            }
        } else {
            let frame = frames.pop().unwrap();
            let Some((i, before)) = frame.placed else {
                let violation = Violation {
                    key,
                    operations: ops.len(),
                    linearized_max: deepest.count,
                    placed_last: deepest.placed_last,
                    state: deepest.state,
                    stuck: deepest.candidates.iter().map(|&i| ops[i]).collect(),
                };
                return (Verdict::NotLinearizable(violation), visited);
            };
            linearized.clear(i);
            state = before;
        }
    }
    (Verdict::Linearizable, visited)
}
