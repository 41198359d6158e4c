//! The engine: one `RwLock` over a `BTreeMap`, writers ordered per key by striped locks, and
//! every change logged before it is applied.
//!
//! # Invariants
//! - Each entry carries the sequence number of the log record that set it (0 when volatile);
//!   `is_current(key, seq)` (the log's garbage-collection question) compares them exactly.
//! - A writer holds its key's stripe from its check until its change is applied, so per key
//!   the changes are applied in sequence order and a check (key exists? CAS matches?) is
//!   still true when the change lands.
//! - A change is applied inside the log's `apply` callback, i.e. after it is durable under
//!   `Durability::Sync` (so readers never see a write that a crash could take back), and
//!   before the log's garbage collection can read its record.
//! - Lock order: stripe(s), then the map lock, never the other way; the map lock is never
//!   held while waiting for the log, so the log's garbage collection (which takes the map
//!   lock for reading) cannot deadlock with a writer.
//! - `closed` is checked under the map lock; `close` holds every stripe, so no write is in
//!   flight when the log is closed.
//! - `live_bytes` (what the live records take in the log) and `memory_bytes` (what the map
//!   takes, `memory.rs`) change only under the map's write lock, with every insert and
//!   removal; a writer computes its change's deltas under its stripes (the values it
//!   replaces cannot change meanwhile) to check the disk budget and the memory limit first.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::limits::{check_cas, check_key, check_scan_limit, check_value};
use lamina_core::{
    BatchOp, CasOutcome, Entry, Error, KeyRange, MEMORY_LIMIT_OPTION, OrderedIndex, Result, Stats,
    WriteBatch,
};
use lamina_storage::log::{LiveRecords, LogOp, Record, RecordOp, RingLog, SeqNo, put_record_bytes};
use lamina_storage::{FileOptions, FileStorage, Storage};
use parking_lot::RwLock;

use crate::memory::entry_memory_bytes;
use crate::options::MemOptions;
use crate::stripes::Stripes;

#[derive(Debug)]
struct Versioned {
    seq: SeqNo,
    value: Vec<u8>,
}

#[derive(Debug, Default)]
struct State {
    map: BTreeMap<Vec<u8>, Versioned>,
    closed: bool,
}

/// What one entry costs: (log bytes of its put, memory bytes).
fn entry_costs(key_len: usize, value_len: usize) -> (u64, u64) {
    (put_record_bytes(key_len, value_len), entry_memory_bytes(key_len, value_len))
}

impl State {
    fn insert(&mut self, counters: &Counters, key: Vec<u8>, value: Versioned) {
        let added = entry_costs(key.len(), value.value.len());
        let key_len = key.len();
        if let Some(old) = self.map.insert(key, value) {
            counters.sub(entry_costs(key_len, old.value.len()));
        }
        counters.add(added);
    }

    fn remove(&mut self, counters: &Counters, key: &[u8]) {
        if let Some(old) = self.map.remove(key) {
            counters.sub(entry_costs(key.len(), old.value.len()));
        }
    }

    fn apply(&mut self, counters: &Counters, op: &BatchOp, seq: SeqNo) {
        match op {
            BatchOp::Put { key, value } => {
                self.insert(counters, key.clone(), Versioned { seq, value: value.clone() });
            }
            BatchOp::Delete { key } => self.remove(counters, key),
        }
    }

    fn replay(&mut self, counters: &Counters, record: Record) {
        match record.op {
            RecordOp::Put { key, value } => {
                self.insert(counters, key, Versioned { seq: record.seq, value });
            }
            RecordOp::Delete { key } => self.remove(counters, &key),
            RecordOp::Batch(ops) | RecordOp::BatchPart(ops) => {
                for op in &ops {
                    self.apply(counters, op, record.seq);
                }
            }
        }
    }

    /// How much `ops` (applied in order) change the live log bytes and the memory.
    fn deltas(&self, ops: &[BatchOp]) -> (i64, i64) {
        let mut last: BTreeMap<&[u8], Option<usize>> = BTreeMap::new();
        for op in ops {
            let value = match op {
                BatchOp::Put { value, .. } => Some(value.len()),
                BatchOp::Delete { .. } => None,
            };
            last.insert(op.key(), value);
        }
        let costs =
            |key: &[u8], value: Option<usize>| value.map_or((0, 0), |v| entry_costs(key.len(), v));
        let (mut live, mut memory) = (0i64, 0i64);
        for (key, value) in last {
            let (new_live, new_memory) = costs(key, value);
            let (old_live, old_memory) = costs(key, self.map.get(key).map(|v| v.value.len()));
            live += new_live as i64 - old_live as i64;
            memory += new_memory as i64 - old_memory as i64;
        }
        (live, memory)
    }
}

/// Bytes the live records take in the log, and in memory.
#[derive(Debug, Default)]
struct Counters {
    live_bytes: AtomicU64,
    memory_bytes: AtomicU64,
}

impl Counters {
    fn add(&self, (live, memory): (u64, u64)) {
        self.live_bytes.fetch_add(live, Ordering::Relaxed);
        self.memory_bytes.fetch_add(memory, Ordering::Relaxed);
    }

    fn sub(&self, (live, memory): (u64, u64)) {
        self.live_bytes.fetch_sub(live, Ordering::Relaxed);
        self.memory_bytes.fetch_sub(memory, Ordering::Relaxed);
    }
}

#[derive(Debug, Default)]
struct Shared {
    state: RwLock<State>,
    counters: Counters,
}

impl LiveRecords for Shared {
    fn is_current(&self, key: &[u8], seq: SeqNo) -> bool {
        self.state.read().map.get(key).is_some_and(|v| v.seq == seq)
    }

    fn live_bytes(&self) -> u64 {
        self.counters.live_bytes.load(Ordering::Relaxed)
    }
}

/// The `mem` engine.
#[derive(Debug)]
pub struct MemEngine {
    shared: Arc<Shared>,
    stripes: Stripes,
    /// The log; `None` for a volatile engine.
    log: Option<RingLog>,
    storage: Option<Arc<dyn Storage>>,
    user_bytes_written: AtomicU64,
    memory_limit_bytes: Option<u64>,
}

impl MemEngine {
    /// A volatile engine that keeps nothing after `close`.
    pub fn volatile() -> Self {
        MemEngine::assemble(Arc::default(), None, None, None)
    }

    /// Opens the durable engine over `storage`, replaying its log.
    pub fn open(storage: Arc<dyn Storage>, options: &MemOptions) -> Result<Self> {
        let log_options = options.log_options()?;
        let shared = Arc::new(Shared::default());
        let oracle: Arc<dyn LiveRecords> = shared.clone();
        let log = RingLog::open(storage.clone(), log_options, oracle, |record| {
            shared.state.write().replay(&shared.counters, record);
        })?;
        Ok(MemEngine::assemble(shared, Some(log), Some(storage), options.memory_limit_bytes))
    }

    /// Opens the durable engine in directory `dir` with the file backend.
    pub fn open_dir(dir: &Path, options: &MemOptions) -> Result<Self> {
        let storage = FileStorage::open_dir(dir, FileOptions::default())?;
        MemEngine::open(Arc::new(storage), options)
    }

    fn assemble(
        shared: Arc<Shared>,
        log: Option<RingLog>,
        storage: Option<Arc<dyn Storage>>,
        memory_limit_bytes: Option<u64>,
    ) -> Self {
        MemEngine {
            shared,
            stripes: Stripes::new(),
            log,
            storage,
            user_bytes_written: AtomicU64::new(0),
            memory_limit_bytes,
        }
    }

    /// Stops the log without flushing what is buffered, as a power failure would. For crash
    /// tests; the engine refuses every call afterwards.
    pub fn abandon(&self) {
        let _stripes = self.stripes.lock_all();
        self.shared.state.write().closed = true;
        if let Some(log) = &self.log {
            log.abandon();
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.shared.state.read().closed { Err(Error::Closed) } else { Ok(()) }
    }

    fn count_written(&self, bytes: usize) {
        self.user_bytes_written.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Refuses a change that adds `memory_delta > 0` bytes past the memory limit.
    fn check_memory(&self, memory_delta: i64) -> Result<()> {
        let (Some(limit), Ok(delta @ 1..)) = (self.memory_limit_bytes, u64::try_from(memory_delta))
        else {
            return Ok(());
        };
        let memory = self.shared.counters.memory_bytes.load(Ordering::Relaxed);
        if memory.saturating_add(delta) > limit {
            return Err(Error::NoSpace {
                context: format!(
                    "the mem engine's data takes {memory} bytes of memory; this write adding                      {delta} bytes would pass its memory limit of {limit} bytes (deletes and                      writes that do not grow the data are still accepted); delete data or                      raise {MEMORY_LIMIT_OPTION}"
                ),
            });
        }
        Ok(())
    }

    /// Logs `op` and applies `ops` (its effect) once the log allows. The caller holds the
    /// stripes of every key `ops` touch, so the values they replace stay put until then.
    fn log_and_apply(&self, op: LogOp<'_>, ops: &[BatchOp]) -> Result<()> {
        let (live_delta, memory_delta) = self.shared.state.read().deltas(ops);
        self.check_memory(memory_delta)?;
        let apply = |seq: SeqNo| -> Result<()> {
            let mut state = self.shared.state.write();
            if state.closed {
                return Err(Error::Closed);
            }
            for op in ops {
                state.apply(&self.shared.counters, op, seq);
            }
            Ok(())
        };
        match &self.log {
            Some(log) => log.append_with(op, live_delta, apply)?.1,
            None => apply(0),
        }
    }
}

impl OrderedIndex for MemEngine {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        check_key(key)?;
        let state = self.shared.state.read();
        if state.closed {
            return Err(Error::Closed);
        }
        Ok(state.map.get(key).map(|v| v.value.clone()))
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        let _stripe = self.stripes.lock(key);
        let op = BatchOp::Put { key: key.to_vec(), value: value.to_vec() };
        self.log_and_apply(LogOp::Put { key, value }, std::slice::from_ref(&op))?;
        self.count_written(key.len() + value.len());
        Ok(())
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        let _stripe = self.stripes.lock(key);
        {
            let state = self.shared.state.read();
            if state.closed {
                return Err(Error::Closed);
            }
            if !state.map.contains_key(key) {
                return Ok(false); // nothing to log: the key's stripe keeps it absent
            }
        }
        let op = BatchOp::Delete { key: key.to_vec() };
        self.log_and_apply(LogOp::Delete { key }, std::slice::from_ref(&op))?;
        self.count_written(key.len());
        Ok(true)
    }

    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<&[u8]>,
        new: Option<&[u8]>,
    ) -> Result<CasOutcome> {
        check_cas(key, expected, new)?;
        let _stripe = self.stripes.lock(key);
        let current_exists = {
            let state = self.shared.state.read();
            if state.closed {
                return Err(Error::Closed);
            }
            let current = state.map.get(key).map(|v| v.value.as_slice());
            if current != expected {
                return Ok(CasOutcome::Mismatch { current: current.map(<[u8]>::to_vec) });
            }
            current.is_some()
        };
        match new {
            Some(value) => {
                let op = BatchOp::Put { key: key.to_vec(), value: value.to_vec() };
                self.log_and_apply(LogOp::Put { key, value }, std::slice::from_ref(&op))?;
                self.count_written(key.len() + value.len());
            }
            None if current_exists => {
                let op = BatchOp::Delete { key: key.to_vec() };
                self.log_and_apply(LogOp::Delete { key }, std::slice::from_ref(&op))?;
                self.count_written(key.len());
            }
            None => {} // absent, expected absent, stays absent
        }
        Ok(CasOutcome::Swapped)
    }

    fn scan(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        let state = self.shared.state.read();
        if state.closed {
            return Err(Error::Closed);
        }
        if range.is_empty() {
            return Ok(Vec::new());
        }
        Ok(state
            .map
            .range::<[u8], _>(range.as_bounds())
            .take(limit)
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect())
    }

    fn scan_rev(&self, range: &KeyRange, limit: usize) -> Result<Vec<Entry>> {
        check_scan_limit(limit)?;
        let state = self.shared.state.read();
        if state.closed {
            return Err(Error::Closed);
        }
        if range.is_empty() {
            return Ok(Vec::new());
        }
        Ok(state
            .map
            .range::<[u8], _>(range.as_bounds())
            .rev()
            .take(limit)
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect())
    }

    fn write_batch(&self, batch: &WriteBatch) -> Result<()> {
        batch.validate()?;
        if batch.is_empty() {
            return self.check_open();
        }
        let _stripes = self.stripes.lock_many(batch.ops().iter().map(BatchOp::key));
        self.log_and_apply(LogOp::Batch(batch), batch.ops())?;
        self.count_written(batch.payload_bytes());
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        self.check_open()?;
        match &self.log {
            Some(log) => log.sync(),
            None => Ok(()),
        }
    }

    fn stats(&self) -> Stats {
        let state = self.shared.state.read();
        let mut stats = Stats::new("mem");
        stats.keys = Some(state.map.len() as u64);
        stats.user_bytes_written = self.user_bytes_written.load(Ordering::Relaxed);
        drop(state);
        stats.memory_bytes = self.shared.counters.memory_bytes.load(Ordering::Relaxed);
        if let Some(storage) = &self.storage {
            stats.io = storage.io_stats();
        }
        if let Some(log) = &self.log {
            let log_stats = log.stats();
            stats.extra.extend([
                ("log_records_recovered", log_stats.records_recovered),
                ("log_live_bytes", log_stats.live_bytes),
                ("log_ring_bytes", log_stats.ring_bytes),
                ("log_ring_segments", log_stats.ring_segments),
                ("log_file_bytes_allocated", log_stats.file_bytes_allocated),
                ("log_gc_records_copied", log_stats.gc_records_copied),
                ("log_flushes_without_space", log_stats.flushes_without_space),
            ]);
        }
        stats
    }

    fn close(&self) -> Result<()> {
        let _stripes = self.stripes.lock_all();
        {
            let mut state = self.shared.state.write();
            if state.closed {
                return Ok(());
            }
            state.closed = true;
        }
        // The map stays until the log is closed: its last chunk may still collect records,
        // and asks the map which are current.
        let closed = match &self.log {
            Some(log) => log.close(),
            None => Ok(()),
        };
        let mut state = self.shared.state.write();
        state.map = BTreeMap::new();
        self.shared.counters.live_bytes.store(0, Ordering::Relaxed);
        self.shared.counters.memory_bytes.store(0, Ordering::Relaxed);
        closed
    }
}
