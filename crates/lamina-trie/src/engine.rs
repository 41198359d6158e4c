//! [`TrieEngine`]: the prefix tree behind lamina's [`OrderedIndex`] API.
//!
//! Every operation validates its input first (bad input changes nothing), then:
//! gets and scans run lock-free inside the batch gate ([`crate::gate`]); single-key writes
//! lock one inner node ([`crate::tree`]); batches run inside the gate's write side.
//!
//! `close` marks the handle closed; calls that start afterwards return `Closed`. Memory is
//! released when the engine is dropped.

use crossbeam_epoch as epoch;
use lamina_core::limits::{check_key, check_scan_limit, check_value};
use lamina_core::{
    BatchOp, CasOutcome, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch,
};

use crate::gate::BatchGate;
use crate::node::Content;
use crate::options::TrieOptions;
use crate::sync::{AtomicBool, AtomicU64, Ordering};
use crate::tree::{Applied, Change, TreeCounters, Trie};

/// The tree, monomorphized for each allowed k' (fanout = 2^k').
#[derive(Debug)]
enum AnyTrie {
    Fanout2(Trie<2>),
    Fanout4(Trie<4>),
    Fanout16(Trie<16>),
    Fanout256(Trie<256>),
}

/// Runs `$body` with `$t` bound to the concrete tree.
macro_rules! with_trie {
    ($any:expr, $t:ident => $body:expr) => {
        match $any {
            AnyTrie::Fanout2($t) => $body,
            AnyTrie::Fanout4($t) => $body,
            AnyTrie::Fanout16($t) => $body,
            AnyTrie::Fanout256($t) => $body,
        }
    };
}

/// The `trie` engine.
#[derive(Debug)]
pub struct TrieEngine {
    tree: AnyTrie,
    gate: BatchGate,
    closed: AtomicBool,
    user_bytes_written: AtomicU64,
    options: TrieOptions,
}

/// The observer of volatile writes: nothing to log.
#[allow(clippy::unnecessary_wraps)] // the signature every observer has
fn unlogged(_: &Applied<'_>) -> Result<()> {
    Ok(())
}

impl TrieEngine {
    /// An in-memory engine that keeps nothing after `close`.
    pub fn volatile(options: TrieOptions) -> Result<Self> {
        options.validate()?;
        let tree = match options.prefix_bits {
            1 => AnyTrie::Fanout2(Trie::new()),
            2 => AnyTrie::Fanout4(Trie::new()),
            4 => AnyTrie::Fanout16(Trie::new()),
            8 => AnyTrie::Fanout256(Trie::new()),
            other => unreachable!("validate() admits no prefix_bits {other}"),
        };
        Ok(TrieEngine {
            tree,
            gate: BatchGate::new(),
            closed: AtomicBool::new(false),
            user_bytes_written: AtomicU64::new(0),
            options,
        })
    }

    /// The options the engine was built with.
    pub fn options(&self) -> &TrieOptions {
        &self.options
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) { Err(Error::Closed) } else { Ok(()) }
    }

    fn count_written(&self, bytes: usize) {
        self.user_bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn counters(&self) -> TreeCounters {
        with_trie!(&self.tree, t => t.counters())
    }

    fn put_unchecked(&self, key: &[u8], value: &[u8]) {
        with_trie!(&self.tree, t => put(t, key, value));
        self.count_written(key.len() + value.len());
    }

    fn delete_unchecked(&self, key: &[u8]) -> bool {
        let existed = with_trie!(&self.tree, t => delete(t, key));
        self.count_written(key.len());
        existed
    }
}

fn put<const FANOUT: usize>(tree: &Trie<FANOUT>, key: &[u8], value: &[u8]) {
    let content = Content::new(key, value, 0);
    let guard = epoch::pin();
    let _ = tree.modify(key, &guard, |_| (Change::Put(content), ()), unlogged);
}

fn delete<const FANOUT: usize>(tree: &Trie<FANOUT>, key: &[u8]) -> bool {
    let guard = epoch::pin();
    let done = tree.modify(key, &guard, |_| (Change::Delete, ()), unlogged);
    done.expect("unlogged writes cannot fail").existed
}

fn compare_and_swap<const FANOUT: usize>(
    tree: &Trie<FANOUT>,
    key: &[u8],
    expected: Option<&[u8]>,
    new: Option<&[u8]>,
) -> CasOutcome {
    let guard = epoch::pin();
    let decide = |current: Option<&Content>| {
        if current.map(Content::value) != expected {
            let current = current.map(|c| c.value().to_vec());
            return (Change::Keep, CasOutcome::Mismatch { current });
        }
        let change = match new {
            Some(value) => Change::Put(Content::new(key, value, 0)),
            None => Change::Delete,
        };
        (change, CasOutcome::Swapped)
    };
    tree.modify(key, &guard, decide, unlogged).expect("unlogged writes cannot fail").result
}

impl OrderedIndex for TrieEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        self.check_open()?;
        Ok(self.gate.read(|| {
            with_trie!(&self.tree, t => {
                let guard = epoch::pin();
                t.get(key, &guard).map(|c| c.value().to_vec())
            })
        }))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.check_open()?;
        self.put_unchecked(key, value);
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        self.check_open()?;
        Ok(self.delete_unchecked(key))
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        check_key(key)?;
        for value in [expected, new].into_iter().flatten() {
            check_value(value)?;
        }
        self.check_open()?;
        let outcome = with_trie!(&self.tree, t => compare_and_swap(t, key, expected, new));
        if outcome.is_swapped() {
            self.count_written(key.len() + new.map_or(0, <[u8]>::len));
        }
        Ok(outcome)
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        self.check_open()?;
        if limit == 0 || range.is_empty() {
            return Ok(Vec::new());
        }
        Ok(self.gate.read(|| {
            let mut out = Vec::with_capacity(limit.min(1024));
            with_trie!(&self.tree, t => {
                let guard = epoch::pin();
                t.scan_into(range, limit, &guard, &mut out);
            });
            out
        }))
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        self.check_open()?;
        self.gate.write(|| {
            for op in batch.ops() {
                match op {
                    BatchOp::Put { key, value } => self.put_unchecked(key, value),
                    BatchOp::Delete { key } => {
                        self.delete_unchecked(key);
                    }
                }
            }
        });
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.check_open()
    }

    fn stats(&self) -> Stats {
        let counters = self.counters();
        let mut stats = Stats::new("trie");
        stats.keys = Some(counters.keys);
        stats.memory_bytes = counters.memory_bytes;
        stats.user_bytes_written = self.user_bytes_written.load(Ordering::Relaxed);
        stats.extra = vec![
            ("inner_nodes", counters.inner_nodes),
            ("seq_last", counters.seq_last),
            ("prefix_bits", u64::from(self.options.prefix_bits)),
        ];
        stats
    }

    fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        Ok(())
    }
}
