//! A winner tree over a merge's sources (Knuth, TAOCP vol. 3, 5.4.1, "tree of winners"):
//! the source with the smallest next key in `log2 n` comparisons after one source moves,
//! where a scan of every source costs `n` per key group. An FD+FC merge into the bottom
//! level reads tens of `L_0^old` runs beside the levels, so a scan per merged key was a tenth
//! of the merge thread's time at 10M keys (`perf annotate` of `MergeRun::run_stage`).
//!
//! The tree stores source indices only; the order of two sources is the caller's (`order`,
//! with a source that has no next key after every other). Invariant: every internal node
//! holds the winner (the smaller, the left one on a tie) of its two children, for the
//! order the sources had when they were last [`Tournament::update`]d or the tree
//! [`Tournament::rebuild`]t.

use std::cmp::Ordering;

/// A leaf beyond the sources (the tree's width is a power of two).
const ABSENT: u32 = u32::MAX;

/// The winner tree; see the module documentation.
#[derive(Debug)]
pub(crate) struct Tournament {
    /// Sources.
    n: usize,
    /// Leaves: a power of two, at least `n` and at least 1.
    width: usize,
    /// `nodes[1..width]`: internal nodes, root at 1, children of `v` at `2v` and `2v + 1`;
    /// `nodes[width + i]`: leaf `i` (source `i`, or [`ABSENT`] past `n`).
    nodes: Vec<u32>,
    /// [`Tournament::winners`]'s search stack, kept to allocate once.
    stack: Vec<u32>,
}

impl Tournament {
    /// A tree over `n` sources; call [`Tournament::rebuild`] before the first query.
    pub(crate) fn new(n: usize) -> Tournament {
        assert!(n < ABSENT as usize, "{n} sources");
        let width = n.next_power_of_two().max(1);
        let mut nodes = vec![ABSENT; 2 * width];
        for (i, leaf) in nodes[width..width + n].iter_mut().enumerate() {
            *leaf = i as u32;
        }
        Tournament { n, width, nodes, stack: Vec::new() }
    }

    /// The winner of two nodes' entries.
    fn play(a: u32, b: u32, order: &impl Fn(usize, usize) -> Ordering) -> u32 {
        match (a, b) {
            (ABSENT, _) => b,
            (_, ABSENT) => a,
            _ if order(b as usize, a as usize).is_lt() => b,
            _ => a,
        }
    }

    /// Recomputes every internal node (after any number of sources moved).
    pub(crate) fn rebuild(&mut self, order: impl Fn(usize, usize) -> Ordering) {
        for v in (1..self.width).rev() {
            self.nodes[v] = Self::play(self.nodes[2 * v], self.nodes[2 * v + 1], &order);
        }
    }

    /// Replays the path of source `i` after its next key changed (`log2 n` comparisons).
    pub(crate) fn update(&mut self, i: usize, order: impl Fn(usize, usize) -> Ordering) {
        debug_assert!(i < self.n);
        let leaf = self.width + i;
        let mut v = leaf / 2;
        while v >= 1 {
            self.nodes[v] = Self::play(self.nodes[2 * v], self.nodes[2 * v + 1], &order);
            v /= 2;
        }
    }

    /// The source with the smallest next key (`None` if there are no sources). It may have
    /// no next key at all: then no source has one.
    pub(crate) fn winner(&self) -> Option<usize> {
        let w = self.nodes[1];
        (w != ABSENT).then_some(w as usize)
    }

    /// Appends to `out` every source whose next key equals the winner's (`equal(i)`: whether
    /// source `i`'s next key equals it), the winner first. Explores only subtrees whose
    /// winner equals it: `log2 n` calls of `equal` when the key is in one source.
    pub(crate) fn winners(&mut self, equal: impl Fn(usize) -> bool, out: &mut Vec<usize>) {
        let Some(w) = self.winner() else { return };
        out.push(w);
        // Each node on the winner's path has the winner in one child; the other child's
        // subtree holds more sources at the key only if its own winner is at the key.
        let stack = &mut self.stack;
        stack.clear();
        let mut v = 1;
        while v < self.width {
            let (l, r) = (2 * v, 2 * v + 1);
            let (on_path, other) = if self.nodes[l] == w as u32 { (l, r) } else { (r, l) };
            stack.push(other as u32);
            v = on_path;
        }
        while let Some(v) = stack.pop() {
            let v = v as usize;
            let s = self.nodes[v];
            if s == ABSENT || !equal(s as usize) {
                continue;
            }
            if v >= self.width {
                out.push(s as usize);
            } else {
                // The winner of `v` is at the key: it is on one child's path; search both.
                stack.push(2 * v as u32);
                stack.push(2 * v as u32 + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `None` sorts after every key (a source without a next key).
    fn order(keys: &[Option<u8>]) -> impl Fn(usize, usize) -> Ordering + '_ {
        move |a, b| match (keys[a], keys[b]) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => x.cmp(&y),
        }
    }

    fn check(t: &mut Tournament, keys: &[Option<u8>]) -> Result<(), TestCaseError> {
        let min = keys.iter().flatten().min().copied();
        let expected: Vec<usize> = match min {
            Some(m) => (0..keys.len()).filter(|&i| keys[i] == Some(m)).collect(),
            None => Vec::new(),
        };
        let mut got = Vec::new();
        if let Some(w) = t.winner()
            && keys[w].is_some()
        {
            t.winners(|i| keys[i] == keys[w], &mut got);
        }
        got.sort_unstable();
        prop_assert_eq!(got, expected);
        Ok(())
    }

    proptest! {
        /// After a rebuild and after any sequence of single-source moves, the sources found
        /// at the winner's key are exactly those a scan finds.
        #[test]
        fn winners_are_the_sources_at_the_smallest_key(
            keys in proptest::collection::vec(proptest::option::weighted(0.8, 0u8..6), 0..40),
            moves in proptest::collection::vec((0usize..40, proptest::option::of(0u8..6)), 0..60),
        ) {
            let mut keys = keys;
            let mut t = Tournament::new(keys.len());
            t.rebuild(order(&keys));
            check(&mut t, &keys)?;
            for (i, k) in moves {
                if keys.is_empty() {
                    break;
                }
                let i = i % keys.len();
                keys[i] = k;
                t.update(i, order(&keys));
                check(&mut t, &keys)?;
            }
        }
    }

    #[test]
    fn no_sources() {
        let mut t = Tournament::new(0);
        t.rebuild(|_, _| Ordering::Equal);
        assert_eq!(t.winner(), None);
        let mut out = Vec::new();
        t.winners(|_| true, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn one_source() {
        let keys = [Some(3)];
        let mut t = Tournament::new(1);
        t.rebuild(order(&keys));
        assert_eq!(t.winner(), Some(0));
    }
}
