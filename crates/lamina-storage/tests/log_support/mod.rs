//! A tiny engine for the log's tests: a map that remembers the sequence number of each key's
//! current version, applies operations inside `append_with`, and answers liveness.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Result, WriteBatch};
use lamina_storage::log::{
    LiveRecords, Log, LogOp, LogOptions, Record, RecordOp, Retention, SeqNo,
};
use lamina_storage::{MemoryStorage, OpenMode, Storage};
use parking_lot::Mutex;

/// Key -> (seq of the latest applied operation, value; `None`: deleted).
pub type VersionMap = BTreeMap<Vec<u8>, (SeqNo, Option<Vec<u8>>)>;

/// The engine: a map under a lock.
#[derive(Debug, Default)]
pub struct Model {
    pub map: Mutex<VersionMap>,
    /// Writes that touch this key take this long to apply (`None`: every write applies at
    /// once). A slow apply keeps a durable record unapplied while the log's garbage
    /// collection runs.
    pub slow_apply: Option<(Vec<u8>, std::time::Duration)>,
}

impl LiveRecords for Model {
    fn is_current(&self, key: &[u8], seq: SeqNo) -> bool {
        self.map.lock().get(key).is_some_and(|(s, v)| *s == seq && v.is_some())
    }
}

impl Model {
    /// Applies `op` unless a later operation on its key is already applied: appliers run
    /// concurrently, and the log's contract is that each key follows sequence order (the
    /// contest paper's rule: apply only if the sequence number is greater). Within a batch
    /// (equal sequence numbers) later ops win.
    pub fn apply_op(map: &mut VersionMap, seq: SeqNo, op: &BatchOp) {
        let (key, value) = match op {
            BatchOp::Put { key, value } => (key, Some(value.clone())),
            BatchOp::Delete { key } => (key, None),
        };
        if map.get(key).is_none_or(|(current, _)| *current <= seq) {
            map.insert(key.clone(), (seq, value));
        }
    }

    pub fn apply_record(&self, record: &Record) {
        let mut map = self.map.lock();
        for op in record_ops(&record.op) {
            Self::apply_op(&mut map, record.seq, &op);
        }
    }

    pub fn snapshot(&self) -> BTreeMap<Vec<u8>, Vec<u8>> {
        let map = self.map.lock();
        map.iter().filter_map(|(k, (_, v))| Some((k.clone(), v.clone()?))).collect()
    }

    /// Logs `ops` (one op: put/delete; several: a batch) and applies them inside the log's
    /// apply hook, as an engine must.
    pub fn write(&self, log: &Log, ops: &[BatchOp]) -> Result<SeqNo> {
        let batch: WriteBatch;
        let op = match ops {
            [BatchOp::Put { key, value }] => LogOp::Put { key, value },
            [BatchOp::Delete { key }] => LogOp::Delete { key },
            _ => {
                batch = ops.iter().cloned().collect();
                LogOp::Batch(&batch)
            }
        };
        let delay = self.slow_apply.as_ref().and_then(|(key, delay)| {
            ops.iter().any(|op| op.key() == key.as_slice()).then_some(*delay)
        });
        let (seq, ()) = log.append_with(op, |seq| {
            if let Some(delay) = delay {
                std::thread::sleep(delay);
            }
            let mut map = self.map.lock();
            for op in ops {
                Self::apply_op(&mut map, seq, op);
            }
        })?;
        Ok(seq)
    }
}

pub fn record_ops(op: &RecordOp) -> Vec<BatchOp> {
    match op {
        RecordOp::Put { key, value } => {
            vec![BatchOp::Put { key: key.clone(), value: value.clone() }]
        }
        RecordOp::Delete { key } => vec![BatchOp::Delete { key: key.clone() }],
        RecordOp::Batch(ops) => ops.clone(),
    }
}

/// Opens `log` over `storage`, replaying into a fresh model that then serves as its oracle.
pub fn open_with_model(
    storage: Arc<dyn Storage>,
    options: LogOptions,
) -> Result<(Log, Arc<Model>)> {
    open_with(storage, options, Model::default())
}

/// [`open_with_model`] with a model of the caller's (empty, its knobs set).
pub fn open_with(
    storage: Arc<dyn Storage>,
    options: LogOptions,
    model: Model,
) -> Result<(Log, Arc<Model>)> {
    assert!(model.map.lock().is_empty(), "the model is rebuilt from the log");
    let model = Arc::new(model);
    let log = Log::open(storage, options, |record| model.apply_record(&record))?;
    log.set_live_records(model.clone());
    Ok((log, model))
}

pub fn small_options(retention: Retention, durability: Durability) -> LogOptions {
    LogOptions { retention, durability, buffer_bytes: 16 * 1024, ..LogOptions::default() }
}

/// The smallest ring the small options accept.
pub fn small_ring() -> Retention {
    let options = small_options(Retention::Cyclic { capacity_bytes: 0 }, Durability::Sync);
    Retention::Cyclic { capacity_bytes: options.ring_bytes_min() }
}

pub fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

pub fn value(i: u64, round: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(len, b'.');
    v
}

/// What a recovery would find if the machine lost power now: the log's files copied (every
/// acknowledged chunk is synced; no append may be in flight) and opened into a fresh model.
pub fn recovered_now(storage: &Arc<dyn Storage>, options: &LogOptions) -> Model {
    let copy: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    for name in storage.list().unwrap() {
        let bytes = storage.read_all(&name).unwrap();
        let file = copy.open(&name, OpenMode::Create).unwrap();
        file.write_all_at(0, &bytes).unwrap();
        file.sync_data().unwrap();
    }
    let model = Model::default();
    let log = Log::open(copy, options.clone(), |record| model.apply_record(&record)).unwrap();
    log.close().unwrap();
    model
}
