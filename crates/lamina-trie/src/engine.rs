//! [`TrieEngine`]: the prefix tree behind lamina's [`OrderedIndex`] API, volatile or made
//! durable by the coalesced cyclic log (paper section 3, `lamina_storage::log`).
//!
//! Every operation validates its input first (bad input changes nothing), then:
//! - gets and scans run lock-free inside the batch gate ([`crate::gate`]);
//! - single-key writes lock one inner node ([`crate::tree`]). Durable ones keep that lock
//!   while the log makes the write durable and apply it inside the log's apply hook, so a
//!   key's writes reach the log and the tree in the same order (what the log's garbage
//!   collection relies on) and CAS stays atomic;
//! - batches run inside the gate's write side and hold the engine's writer lock exclusively
//!   (single-key writers hold it shared), so no single-key write runs while a batch is half
//!   applied: a CAS that fails or a delete returns what it found, so it reads, and must not
//!   see half a batch (`tests/batch_atomic_to_writers.rs`); and in the durable engine no
//!   single-key write to a key of the batch can be logged between the batch's record (one
//!   log record) and its application.
//!
//! `close` marks the handle closed (calls that start afterwards return `Closed`) and closes
//! the log, which flushes and syncs it. Memory is released when the engine is dropped;
//! dropping an unclosed engine closes it first.

use std::sync::{Arc, PoisonError};

use crossbeam_epoch as epoch;
use lamina_core::limits::{check_cas, check_key, check_scan_limit, check_value};
use lamina_core::{CasOutcome, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch};
use lamina_storage::Storage;
use lamina_storage::log::{LiveRecords, LogOp, RingLog};

use crate::any_trie::{AnyTrie, Commit, with_trie};
use crate::counter::StripedCounter;
use crate::gate::BatchGate;
use crate::options::TrieOptions;
use crate::sync::{AtomicBool, Ordering, RwLock};

/// The durable part: the log.
#[derive(Debug)]
struct Durable {
    log: RingLog,
}

/// The `trie` engine.
#[derive(Debug)]
pub struct TrieEngine {
    tree: Arc<AnyTrie>,
    gate: BatchGate,
    /// Batches hold it exclusively, single-key writes shared.
    writers: RwLock<()>,
    closed: AtomicBool,
    user_bytes_written: StripedCounter,
    options: TrieOptions,
    durable: Option<Durable>,
}

impl TrieEngine {
    /// An in-memory engine that keeps nothing after `close`.
    pub fn volatile(options: TrieOptions) -> Result<Self> {
        options.validate()?;
        let tree = AnyTrie::new(options.prefix_bits, options.memory_limit_bytes);
        Ok(TrieEngine::with_tree(Arc::new(tree), options, None))
    }

    /// Opens (or creates) a durable engine whose log ring lives in `storage`, rebuilding the
    /// tree from the log (paper section 3: "the storage system must be capable of
    /// rebuilding the in-memory index"). The ring grows with the live data, up to
    /// `options.disk_budget_bytes` if set.
    pub fn open(storage: Arc<dyn Storage>, options: TrieOptions) -> Result<Self> {
        options.validate_durable()?;
        let tree = Arc::new(AnyTrie::new(options.prefix_bits, options.memory_limit_bytes));
        let mut replay_error = None;
        let oracle = Arc::clone(&tree) as Arc<dyn LiveRecords>;
        let log = RingLog::open(storage, options.log_options(), oracle, |record| {
            if replay_error.is_none() {
                replay_error = tree.replay(&record).err();
            }
        })?;
        if let Some(err) = replay_error {
            log.abandon();
            return Err(err);
        }
        let durable = Durable { log };
        Ok(TrieEngine::with_tree(tree, options, Some(durable)))
    }

    fn with_tree(tree: Arc<AnyTrie>, options: TrieOptions, durable: Option<Durable>) -> Self {
        TrieEngine {
            tree,
            gate: BatchGate::new(),
            writers: RwLock::new(()),
            closed: AtomicBool::new(false),
            user_bytes_written: StripedCounter::default(),
            options,
            durable,
        }
    }

    /// The options the engine was built with.
    pub fn options(&self) -> &TrieOptions {
        &self.options
    }

    /// Crash tests: stops the log without flushing what it buffered, as a power failure
    /// would. The handle refuses every call afterwards.
    pub fn abandon(&self) {
        self.closed.store(true, Ordering::Release);
        if let Some(durable) = &self.durable {
            durable.log.abandon();
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) { Err(Error::Closed) } else { Ok(()) }
    }

    fn count_written(&self, bytes: usize) {
        self.user_bytes_written.add(bytes as u64);
    }

    /// Runs a single-key write with the right commit (volatile, or logged) while holding
    /// the writer lock shared.
    fn single_write<R>(&self, write: impl FnOnce(Commit<'_>) -> Result<R>) -> Result<R> {
        let _shared = self.writers.read().unwrap_or_else(PoisonError::into_inner);
        match &self.durable {
            None => write(Commit::Volatile),
            Some(durable) => write(Commit::Logged(&durable.log)),
        }
    }
}

impl Drop for TrieEngine {
    /// A handle dropped without `close` is closed cleanly (its log flushed), unless it was
    /// abandoned to simulate a crash.
    fn drop(&mut self) {
        if !self.closed.load(Ordering::Acquire) {
            let _ = self.close();
        }
    }
}

impl OrderedIndex for TrieEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        self.check_open()?;
        Ok(self.gate.read(|| {
            with_trie!(&*self.tree, t => {
                let guard = epoch::pin();
                t.get(key, &guard).map(|c| c.value().to_vec())
            })
        }))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.check_open()?;
        self.single_write(|commit| self.tree.put(key, value, commit))?;
        self.count_written(key.len() + value.len());
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        self.check_open()?;
        let existed = self.single_write(|commit| self.tree.delete(key, commit))?;
        self.count_written(key.len());
        Ok(existed)
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        check_cas(key, expected, new)?;
        self.check_open()?;
        let outcome =
            self.single_write(|commit| self.tree.compare_and_swap(key, expected, new, commit))?;
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
            with_trie!(&*self.tree, t => {
                let guard = epoch::pin();
                t.scan_into(range, limit, &guard, &mut out);
            });
            out
        }))
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        self.check_open()?;
        let _exclusive = self.writers.write().unwrap_or_else(PoisonError::into_inner);
        // Exclusive: no other write changes the batch's keys until it is applied.
        let (log_delta, memory_growth) = self.tree.batch_growth(batch);
        self.tree.admit_memory(memory_growth)?;
        match &self.durable {
            None => self.gate.write(|| {
                let commit = Commit::Known(0);
                batch.ops().iter().try_for_each(|op| self.tree.apply_op(op, commit))
            })?,
            Some(durable) => {
                let (_, applied) =
                    durable.log.append_with(LogOp::Batch(batch), log_delta, |seq| {
                        self.tree.advance_seq(seq);
                        self.gate.write(|| {
                            let commit = Commit::Known(seq);
                            batch.ops().iter().try_for_each(|op| self.tree.apply_op(op, commit))
                        })
                    })?;
                applied?;
            }
        }
        self.count_written(batch.payload_bytes());
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.check_open()?;
        match &self.durable {
            Some(durable) => durable.log.sync(),
            None => Ok(()),
        }
    }

    fn stats(&self) -> Stats {
        let counters = self.tree.counters();
        let mut stats = Stats::new("trie");
        stats.keys = Some(counters.keys);
        stats.memory_bytes = counters.memory_bytes;
        stats.user_bytes_written = self.user_bytes_written.get();
        stats.extra = vec![
            ("inner_nodes", counters.inner_nodes),
            ("seq_last", counters.seq_last),
            ("prefix_bits", u64::from(self.options.prefix_bits)),
            ("retired_bytes", counters.retired_bytes),
            // The content-block allocator is process-wide (crate::slab): its chunks, and the
            // part of them not in a live block (included in `memory_bytes`).
            ("content_chunks_bytes", crate::pool::chunks_bytes() as u64),
            ("content_idle_bytes", crate::pool::idle_bytes() as u64),
        ];
        if let Some(durable) = &self.durable {
            stats.io = durable.log.storage().io_stats();
            let log = durable.log.stats();
            stats.extra.extend([
                ("log_syncs", log.syncs),
                ("log_records_per_sync_max", log.sync_records_max),
                ("log_gc_records_copied", log.gc_records_copied),
                ("log_gc_records_dropped", log.gc_records_dropped),
                ("log_disk_bytes", log.disk_bytes),
                ("log_live_bytes", log.live_bytes),
                ("log_ring_bytes", log.ring_bytes),
                ("log_ring_segments", log.ring_segments),
                ("log_file_bytes_allocated", log.file_bytes_allocated),
                ("log_flushes_without_space", log.flushes_without_space),
                ("log_sync_waits_yielded", log.sync_waits_yielded),
                ("log_sync_waits_parked", log.sync_waits_parked),
                ("disk_budget_bytes", self.options.disk_budget_bytes.unwrap_or(0)),
            ]);
        }
        stats
    }

    fn close(&self) -> Result<()> {
        self.closed.store(true, Ordering::Release);
        match &self.durable {
            Some(durable) => durable.log.close(),
            None => Ok(()),
        }
    }
}
