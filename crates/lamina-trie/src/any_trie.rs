//! The tree behind one type for every allowed k', and the operations the engine runs on
//! it, parameterized by how a write is committed (volatile, logged, or replayed).

use crossbeam_epoch as epoch;
use lamina_core::{BatchOp, CasOutcome, Result};
use lamina_storage::log::{LiveRecords, LogOp, Record, RecordOp, RingLog, SeqNo, put_record_bytes};

use crate::content::{Content, ContentBox};
use crate::tree::{Applied, Change, TreeCounters, Trie};

/// The tree, monomorphized for each allowed k' (fanout = 2^k').
#[derive(Debug)]
pub(crate) enum AnyTrie {
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
pub(crate) use with_trie;

/// How a write gets its sequence number and becomes durable.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Commit<'a> {
    /// In memory only. Sequence numbers only serve the log (garbage collection and
    /// recovery), so volatile writes carry 0 and skip the shared counter.
    Volatile,
    /// Appended to the log; applied inside the log's apply hook once durable, so the log's
    /// garbage collection never sees a record the tree does not reflect yet (section 3).
    Logged(&'a RingLog),
    /// Already logged under this sequence number (a batch's operations, or replay).
    Known(SeqNo),
}

impl Commit<'_> {
    fn run<const FANOUT: usize>(
        self,
        tree: &Trie<FANOUT>,
        op: LogOp<'_>,
        applied: &Applied<'_>,
        publish: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let (LogOp::Put { key, .. } | LogOp::Delete { key }) = op else {
            unreachable!("single-key writes log single-key records")
        };
        assert_eq!(applied.key, key, "the record logged is the write applied");
        assert_eq!(applied.deleted, matches!(op, LogOp::Delete { .. }));
        match self {
            Commit::Volatile => {
                tree.admit_memory(applied.memory_growth)?;
                publish(0);
            }
            Commit::Logged(log) => {
                tree.admit_memory(applied.memory_growth)?;
                let (seq, ()) = log.append_with(op, applied.log_delta, &mut *publish)?;
                tree.advance_seq(seq);
            }
            // Replayed or part of a batch already admitted: never refused.
            Commit::Known(seq) => {
                publish(seq);
                tree.advance_seq(seq);
            }
        }
        Ok(())
    }
}

impl AnyTrie {
    pub(crate) fn new(prefix_bits: u32, memory_limit_bytes: Option<u64>) -> AnyTrie {
        let limit = memory_limit_bytes;
        match prefix_bits {
            1 => AnyTrie::Fanout2(Trie::new(limit)),
            2 => AnyTrie::Fanout4(Trie::new(limit)),
            4 => AnyTrie::Fanout16(Trie::new(limit)),
            8 => AnyTrie::Fanout256(Trie::new(limit)),
            other => panic!("prefix_bits {other} passed validation"),
        }
    }

    pub(crate) fn counters(&self) -> TreeCounters {
        with_trie!(self, t => t.counters())
    }

    /// Makes `seq_last` at least `seq`: a logged record has its sequence number even if
    /// none of its operations changes a key (a batch of deletes of absent keys).
    pub(crate) fn advance_seq(&self, seq: SeqNo) {
        with_trie!(self, t => t.advance_seq(seq));
    }

    pub(crate) fn put(&self, key: &[u8], value: &[u8], commit: Commit<'_>) -> Result<()> {
        with_trie!(self, t => put(t, key, value, commit))
    }

    pub(crate) fn delete(&self, key: &[u8], commit: Commit<'_>) -> Result<bool> {
        with_trie!(self, t => delete(t, key, commit))
    }

    pub(crate) fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
        commit: Commit<'_>,
    ) -> Result<CasOutcome> {
        with_trie!(self, t => compare_and_swap(t, key, expected, new, commit))
    }

    /// What a batch adds to the live log bytes and to memory (estimated from the content
    /// node sizes), applied on the tree as it is now: the caller holds the engine's writer
    /// lock exclusively, so no other write changes the keys meanwhile.
    pub(crate) fn batch_growth(&self, batch: &lamina_core::WriteBatch) -> (i64, u64) {
        let mut last = std::collections::BTreeMap::<&[u8], Option<&[u8]>>::new();
        for op in batch.ops() {
            let value = match op {
                BatchOp::Put { value, .. } => Some(value.as_slice()),
                BatchOp::Delete { .. } => None,
            };
            last.insert(op.key(), value);
        }
        let (mut log_delta, mut memory_growth) = (0i64, 0u64);
        with_trie!(self, t => {
            let guard = epoch::pin();
            for (key, value) in last {
                let old = t.get(key, &guard);
                let old_log = old.map_or(0, |c| put_record_bytes(key.len(), c.value().len()));
                let new_log = value.map_or(0, |v| put_record_bytes(key.len(), v.len()));
                log_delta += new_log as i64 - old_log as i64;
                if let Some(value) = value {
                    let new_memory = ContentBox::memory_bytes_of(key.len(), value.len());
                    memory_growth +=
                        new_memory.saturating_sub(old.map_or(0, Content::memory_bytes));
                }
            }
        });
        (log_delta, memory_growth)
    }

    /// Admits (or refuses, past the memory limit) a write that adds `growth` bytes.
    pub(crate) fn admit_memory(&self, growth: u64) -> Result<()> {
        with_trie!(self, t => t.admit_memory(growth))
    }

    /// Applies one operation of a batch or of a replayed record.
    pub(crate) fn apply_op(&self, op: &BatchOp, commit: Commit<'_>) -> Result<()> {
        match op {
            BatchOp::Put { key, value } => self.put(key, value, commit),
            BatchOp::Delete { key } => self.delete(key, commit).map(drop),
        }
    }

    /// Recovery: applies a record read back from the log. Records come in sequence order,
    /// so applying each in turn rebuilds the state the log describes.
    pub(crate) fn replay(&self, record: &Record) -> Result<()> {
        self.advance_seq(record.seq);
        let commit = Commit::Known(record.seq);
        match &record.op {
            RecordOp::Put { key, value } => self.put(key, value, commit),
            RecordOp::Delete { key } => self.delete(key, commit).map(drop),
            RecordOp::Batch(ops) | RecordOp::BatchPart(ops) => {
                ops.iter().try_for_each(|op| self.apply_op(op, commit))
            }
        }
    }
}

impl LiveRecords for AnyTrie {
    /// Section 3: the log's garbage collection "validates the read log records against the
    /// in-memory index": a put is live iff the key's content node carries its sequence
    /// number.
    fn is_current(&self, key: &[u8], seq: SeqNo) -> bool {
        with_trie!(self, t => {
            let guard = epoch::pin();
            t.get(key, &guard).is_some_and(|c| c.seq() == seq)
        })
    }

    fn live_bytes(&self) -> u64 {
        with_trie!(self, t => t.live_log_bytes())
    }
}

fn put<const FANOUT: usize>(
    tree: &Trie<FANOUT>,
    key: &[u8],
    value: &[u8],
    commit: Commit<'_>,
) -> Result<()> {
    let content = ContentBox::new(key, value, 0);
    let guard = epoch::pin();
    tree.modify(
        key,
        &guard,
        |_| (Change::Put(content), ()),
        |applied, publish| commit.run(tree, LogOp::Put { key, value }, applied, publish),
    )
    .map(drop)
}

fn delete<const FANOUT: usize>(
    tree: &Trie<FANOUT>,
    key: &[u8],
    commit: Commit<'_>,
) -> Result<bool> {
    let guard = epoch::pin();
    let done = tree.modify(
        key,
        &guard,
        |_| (Change::Delete, ()),
        |applied, publish| commit.run(tree, LogOp::Delete { key }, applied, publish),
    )?;
    Ok(done.existed)
}

fn compare_and_swap<const FANOUT: usize>(
    tree: &Trie<FANOUT>,
    key: &[u8],
    expected: Option<&[u8]>,
    new: Option<&[u8]>,
    commit: Commit<'_>,
) -> Result<CasOutcome> {
    let guard = epoch::pin();
    let decide = |current: Option<Content<'_>>| {
        if current.map(Content::value) != expected {
            let current = current.map(|c| c.value().to_vec());
            return (Change::Keep, CasOutcome::Mismatch { current });
        }
        let change = match new {
            Some(value) => Change::Put(ContentBox::new(key, value, 0)),
            None => Change::Delete,
        };
        (change, CasOutcome::Swapped)
    };
    let op = match new {
        Some(value) => LogOp::Put { key, value },
        None => LogOp::Delete { key },
    };
    let done = tree
        .modify(key, &guard, decide, |applied, publish| commit.run(tree, op, applied, publish))?;
    Ok(done.result)
}
