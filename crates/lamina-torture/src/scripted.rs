//! A deterministic single-writer workload with known states: the store after every prefix of
//! the script is known, so a recovered store can be compared with "everything", or with "the
//! state after some prefix" (what a cut log tail may leave after a crash).
//!
//! `lamina-torture scripted --engine E --dir D --seed S --ops N --crash` runs it in a child
//! process that kills itself with SIGKILL after the last acknowledgement (a crash image with
//! nothing in flight); without `--crash` it closes the store cleanly.

use std::collections::BTreeMap;
use std::path::Path;

use lamina::{Db, EngineKind, KeyRange, WriteBatch};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::ledger::{Op, Outcome};
use crate::settings::options;
use crate::value::{KEYS_PER_THREAD, key, value};

/// Distinct keys the script writes (a few hundred: small stores, many overwrites).
pub const SCRIPT_KEYS: u64 = 240;
/// Most writes in one batch of the script.
const SCRIPT_BATCH_OPS_MAX: u64 = 6;

/// The script of `ops` operations for `seed`: puts, deletes and batches over
/// [`SCRIPT_KEYS`] keys, with the torture values (0 to 4096 bytes).
pub fn script(seed: u64, ops: u64) -> Vec<Op> {
    const { assert!(SCRIPT_KEYS <= KEYS_PER_THREAD) };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..ops)
        .map(|version| {
            let k = key(0, rng.random_range(0..SCRIPT_KEYS));
            match rng.random_range(0..10) {
                0..6 => Op::Put { key: k, version },
                6..8 => Op::Delete { key: k },
                _ => {
                    let n = rng.random_range(2..=SCRIPT_BATCH_OPS_MAX);
                    let mut keys: Vec<u64> =
                        (0..n).map(|_| rng.random_range(0..SCRIPT_KEYS)).collect();
                    keys.sort_unstable();
                    keys.dedup();
                    let writes = keys
                        .into_iter()
                        .map(|i| (key(0, i), rng.random_bool(0.75).then_some(version)))
                        .collect();
                    Op::Batch { writes }
                }
            }
        })
        .collect()
}

/// Applies one script operation (compare-and-swaps are not scripted).
pub fn apply(db: &Db, op: &Op) -> lamina::Result<()> {
    match op {
        Op::Put { key, version } | Op::Cas { key, version } => db.put(key, value(key, *version)),
        Op::Delete { key } => db.delete(key).map(drop),
        Op::Batch { writes } => {
            let mut batch = WriteBatch::new();
            for (key, outcome) in writes {
                match outcome {
                    Some(version) => batch.put(key.clone(), value(key, *version)),
                    None => batch.delete(key.clone()),
                };
            }
            db.write_batch(&batch)
        }
    }
}

/// Runs the script on a new store in `dir` with the torture settings; closes it cleanly, or
/// with `crash` kills the process with SIGKILL after the last acknowledgement.
pub fn run(dir: &Path, engine: EngineKind, ops: &[Op], crash: bool) -> lamina::Result<()> {
    let db = Db::open(dir, options(engine))?;
    for op in ops {
        apply(&db, op)?;
    }
    if crash {
        // SAFETY: kill(2) on our own process id; it does not return.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        unreachable!("SIGKILL ends the process");
    }
    db.close()
}

/// The store's state after the first `n` operations, for every `n` from 0 to `ops.len()`,
/// compared lazily: [`States::matches`].
#[derive(Debug, Clone)]
pub struct States {
    ops: Vec<Op>,
}

impl States {
    /// The states of `ops`.
    pub fn new(ops: Vec<Op>) -> Self {
        States { ops }
    }

    /// The state after the first `n` operations.
    pub fn after(&self, n: usize) -> BTreeMap<Vec<u8>, Outcome> {
        let mut state = BTreeMap::new();
        for op in &self.ops[..n] {
            for (key, outcome) in op.effects() {
                state.insert(key, outcome);
            }
        }
        state
    }

    /// The largest `n` whose state equals `contents` (a full scan's entries), if any.
    pub fn matches(&self, contents: &BTreeMap<Vec<u8>, Vec<u8>>) -> Option<usize> {
        let mut state = self.after(self.ops.len());
        let mut n = self.ops.len();
        loop {
            if equals(&state, contents) {
                return Some(n);
            }
            if n == 0 {
                return None;
            }
            n -= 1;
            // Undo operation n: recompute the keys it wrote from the shorter prefix.
            let before = self.after(n);
            for (key, _) in self.ops[n].effects() {
                match before.get(&key) {
                    Some(outcome) => state.insert(key, *outcome),
                    None => state.remove(&key),
                };
            }
        }
    }
}

fn equals(state: &BTreeMap<Vec<u8>, Outcome>, contents: &BTreeMap<Vec<u8>, Vec<u8>>) -> bool {
    let mut present = state.iter().filter_map(|(k, o)| o.map(|v| (k, v)));
    for (key, bytes) in contents {
        match present.next() {
            Some((k, version)) if k == key && value(k, version) == *bytes => {}
            _ => return false,
        }
    }
    present.next().is_none()
}

/// Every entry of `db` by a full scan.
pub fn contents(db: &Db) -> lamina::Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    db.iter(KeyRange::all()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_match_only_their_prefixes() {
        let ops = script(5, 200);
        let states = States::new(ops.clone());
        let as_contents = |n: usize| -> BTreeMap<Vec<u8>, Vec<u8>> {
            states
                .after(n)
                .into_iter()
                .filter_map(|(k, o)| o.map(|v| (k.clone(), value(&k, v))))
                .collect()
        };
        assert_eq!(states.matches(&as_contents(200)), Some(200));
        let at_150 = states.matches(&as_contents(150)).unwrap();
        assert!(at_150 <= 150 && as_contents(at_150) == as_contents(150));
        let mut wrong = as_contents(200);
        let first = wrong.keys().next().unwrap().clone();
        wrong.get_mut(&first).unwrap().push(1);
        assert_eq!(states.matches(&wrong), None);
    }
}
