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

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lamina_core::limits::{check_cas, check_key, check_scan_limit, check_value};
use lamina_core::{
    BatchOp, CasOutcome, Entry, Error, KeyRange, OrderedIndex, Result, Stats, WriteBatch,
};
use lamina_storage::log::{LiveRecords, Log, LogOp, Record, RecordOp, SeqNo};
use lamina_storage::{FileOptions, FileStorage, Storage};
use parking_lot::RwLock;

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

impl State {
    fn apply(&mut self, op: &BatchOp, seq: SeqNo) {
        match op {
            BatchOp::Put { key, value } => {
                self.map.insert(key.clone(), Versioned { seq, value: value.clone() });
            }
            BatchOp::Delete { key } => {
                self.map.remove(key);
            }
        }
    }

    fn replay(&mut self, record: Record) {
        match record.op {
            RecordOp::Put { key, value } => {
                self.map.insert(key, Versioned { seq: record.seq, value });
            }
            RecordOp::Delete { key } => {
                self.map.remove(&key);
            }
            RecordOp::Batch(ops) => {
                for op in &ops {
                    self.apply(op, record.seq);
                }
            }
        }
    }
}

#[derive(Debug, Default)]
struct Shared {
    state: RwLock<State>,
}

impl LiveRecords for Shared {
    fn is_current(&self, key: &[u8], seq: SeqNo) -> bool {
        self.state.read().map.get(key).is_some_and(|v| v.seq == seq)
    }
}

/// The `mem` engine.
#[derive(Debug)]
pub struct MemEngine {
    shared: Arc<Shared>,
    stripes: Stripes,
    /// The log; `None` for a volatile engine.
    log: Option<Log>,
    storage: Option<Arc<dyn Storage>>,
    user_bytes_written: AtomicU64,
}

impl MemEngine {
    /// A volatile engine that keeps nothing after `close`.
    pub fn volatile() -> Self {
        MemEngine::assemble(Arc::default(), None, None)
    }

    /// Opens the durable engine over `storage`, replaying its log.
    pub fn open(storage: Arc<dyn Storage>, options: &MemOptions) -> Result<Self> {
        let log_options = options.log_options()?;
        let mut state = State::default();
        let log = Log::open(storage.clone(), log_options, |record| state.replay(record))?;
        let shared = Arc::new(Shared { state: RwLock::new(state) });
        log.set_live_records(shared.clone());
        Ok(MemEngine::assemble(shared, Some(log), Some(storage)))
    }

    /// Opens the durable engine in directory `dir` with the file backend.
    pub fn open_dir(dir: &Path, options: &MemOptions) -> Result<Self> {
        let storage = FileStorage::open_dir(dir, FileOptions::default())?;
        MemEngine::open(Arc::new(storage), options)
    }

    fn assemble(shared: Arc<Shared>, log: Option<Log>, storage: Option<Arc<dyn Storage>>) -> Self {
        MemEngine {
            shared,
            stripes: Stripes::new(),
            log,
            storage,
            user_bytes_written: AtomicU64::new(0),
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

    /// Logs `op` and applies `ops` (its effect) once the log allows. The caller holds the
    /// stripes of every key `ops` touch.
    fn log_and_apply(&self, op: LogOp<'_>, ops: &[BatchOp]) -> Result<()> {
        let apply = |seq: SeqNo| -> Result<()> {
            let mut state = self.shared.state.write();
            if state.closed {
                return Err(Error::Closed);
            }
            for op in ops {
                state.apply(op, seq);
            }
            Ok(())
        };
        match &self.log {
            Some(log) => log.append_with(op, apply)?.1,
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
        stats.memory_bytes =
            state.map.iter().map(|(k, v)| (k.len() + v.value.len() + 8) as u64).sum();
        if let Some(storage) = &self.storage {
            stats.io = storage.io_stats();
        }
        if let Some(log) = &self.log {
            let log_stats = log.stats();
            stats.extra.push(("log_records_recovered", log_stats.records_recovered));
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
            state.map = BTreeMap::new();
        }
        match &self.log {
            Some(log) => log.close(),
            None => Ok(()),
        }
    }
}
