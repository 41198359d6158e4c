//! A tiny engine for the log's tests: a map that remembers the sequence number of each key's
//! current version, applies operations inside `append_with`, and answers liveness.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use lamina_core::{BatchOp, Durability, Result, WriteBatch};
use lamina_storage::log::{
    LiveRecords, LogOp, LogOptions, Record, RecordOp, RingLog, RingLogOptions, SegmentLog,
    SegmentLogOptions, SeqNo, put_record_bytes,
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

    fn live_bytes(&self) -> u64 {
        let map = self.map.lock();
        map.iter()
            .filter_map(|(k, (_, v))| v.as_ref().map(|v| put_record_bytes(k.len(), v.len())))
            .sum()
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

    /// Bytes `ops` add to the live records (what the ring's disk budget checks).
    pub fn live_delta(&self, ops: &[BatchOp]) -> i64 {
        let map = self.map.lock();
        let mut after: BTreeMap<&[u8], Option<usize>> = BTreeMap::new();
        for op in ops {
            let value = match op {
                BatchOp::Put { value, .. } => Some(value.len()),
                BatchOp::Delete { .. } => None,
            };
            after.insert(op.key(), value);
        }
        let size = |key: &[u8], value: Option<usize>| {
            value.map_or(0, |v| put_record_bytes(key.len(), v) as i64)
        };
        after
            .into_iter()
            .map(|(key, value)| {
                let before = map.get(key).and_then(|(_, v)| v.as_ref().map(Vec::len));
                size(key, value) - size(key, before)
            })
            .sum()
    }

    /// Logs `ops` to a segmented log and applies them inside its apply hook.
    pub fn write_segments(&self, log: &SegmentLog, ops: &[BatchOp]) -> Result<SeqNo> {
        let batch: WriteBatch;
        let op = match ops {
            [BatchOp::Put { key, value }] => LogOp::Put { key, value },
            [BatchOp::Delete { key }] => LogOp::Delete { key },
            _ => {
                batch = ops.iter().cloned().collect();
                LogOp::Batch(&batch)
            }
        };
        let (seq, ()) = log.append_with(op, |seq| {
            let mut map = self.map.lock();
            for op in ops {
                Self::apply_op(&mut map, seq, op);
            }
        })?;
        Ok(seq)
    }

    /// Logs `ops` (one op: put/delete; several: a batch) and applies them inside the log's
    /// apply hook, as an engine must.
    pub fn write(&self, log: &RingLog, ops: &[BatchOp]) -> Result<SeqNo> {
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
        let live_delta = self.live_delta(ops);
        let (seq, ()) = log.append_with(op, live_delta, |seq| {
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
    op.ops()
}

/// Opens the ring over `storage`, replaying into a fresh model that serves as its oracle.
pub fn open_with_model(
    storage: Arc<dyn Storage>,
    options: RingLogOptions,
) -> Result<(RingLog, Arc<Model>)> {
    open_with(storage, options, Model::default())
}

/// [`open_with_model`] with a model of the caller's (empty, its knobs set).
pub fn open_with(
    storage: Arc<dyn Storage>,
    options: RingLogOptions,
    model: Model,
) -> Result<(RingLog, Arc<Model>)> {
    assert!(model.map.lock().is_empty(), "the model is rebuilt from the log");
    let model = Arc::new(model);
    let oracle: Arc<dyn LiveRecords> = model.clone();
    let log = RingLog::open(storage, options, oracle, |record| model.apply_record(&record))?;
    Ok((log, model))
}

/// Opens a segmented log over `storage`, replaying into a fresh model.
pub fn open_segments_with_model(
    storage: Arc<dyn Storage>,
    options: SegmentLogOptions,
) -> Result<(SegmentLog, Arc<Model>)> {
    let model = Arc::new(Model::default());
    let log = SegmentLog::open(storage, options, |record| model.apply_record(&record))?;
    Ok((log, model))
}

/// Small write buffers (16 KiB), so that tests fill chunks and segments quickly.
pub fn small_log(durability: Durability) -> LogOptions {
    LogOptions { durability, buffer_bytes: 16 * 1024, ..LogOptions::default() }
}

/// A segmented log of `segment_bytes` segments with small buffers.
pub fn small_segments(segment_bytes: u64, durability: Durability) -> SegmentLogOptions {
    SegmentLogOptions { log: small_log(durability), segment_bytes }
}

/// A growable ring with small buffers and the smallest segments they allow, no budget.
pub fn small_growable_ring(durability: Durability) -> RingLogOptions {
    let options = RingLogOptions { log: small_log(durability), ..RingLogOptions::default() };
    RingLogOptions { segment_bytes: Some(options.segment_bytes_min()), ..options }
}

/// The fixed ring of the contest paper: one smallest segment, and a disk budget that
/// allows no more.
pub fn small_fixed_ring(durability: Durability) -> RingLogOptions {
    let options = small_growable_ring(durability);
    let segment = options.segment_bytes.unwrap();
    RingLogOptions { disk_budget_bytes: Some(4096 + segment), ..options }
}

/// Bytes of the smallest ring segment the small options allow.
pub fn small_segment_bytes() -> u64 {
    small_growable_ring(Durability::Sync).segment_bytes.unwrap()
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
pub fn recovered_now(storage: &Arc<dyn Storage>, options: &RingLogOptions) -> Model {
    let copy: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    for name in storage.list().unwrap() {
        let bytes = storage.read_all(&name).unwrap();
        let file = copy.open(&name, OpenMode::Create).unwrap();
        file.write_all_at(0, &bytes).unwrap();
        file.sync_data().unwrap();
    }
    let model = Arc::new(Model::default());
    let oracle: Arc<dyn LiveRecords> = model.clone();
    let log =
        RingLog::open(copy, options.clone(), oracle, |record| model.apply_record(&record)).unwrap();
    log.close().unwrap();
    drop(log);
    Arc::into_inner(model).expect("the log is gone")
}

/// Either log's options, for tests that run against both.
#[derive(Debug, Clone)]
pub enum AnyOptions {
    Ring(RingLogOptions),
    Segments(SegmentLogOptions),
}

/// Either log, for tests that run against both.
#[derive(Debug)]
pub enum AnyLog {
    Ring(RingLog),
    Segments(SegmentLog),
}

impl AnyLog {
    /// Opens the log, replaying into `model` (which must be empty and, for a ring, is its
    /// oracle) and calling `replay` with each record too.
    pub fn open(
        storage: Arc<dyn Storage>,
        options: &AnyOptions,
        model: &Arc<Model>,
        mut replay: impl FnMut(&Record),
    ) -> Result<AnyLog> {
        let apply = |record: Record| {
            model.apply_record(&record);
            replay(&record);
        };
        Ok(match options {
            AnyOptions::Ring(options) => {
                let oracle: Arc<dyn LiveRecords> = model.clone();
                AnyLog::Ring(RingLog::open(storage, options.clone(), oracle, apply)?)
            }
            AnyOptions::Segments(options) => {
                AnyLog::Segments(SegmentLog::open(storage, options.clone(), apply)?)
            }
        })
    }

    /// Opens the log into a fresh model.
    pub fn open_with_model(
        storage: Arc<dyn Storage>,
        options: &AnyOptions,
    ) -> Result<(AnyLog, Arc<Model>)> {
        let model = Arc::new(Model::default());
        let log = AnyLog::open(storage, options, &model, |_| {})?;
        Ok((log, model))
    }

    /// [`Model::write`] or [`Model::write_segments`].
    pub fn write(&self, model: &Model, ops: &[BatchOp]) -> Result<SeqNo> {
        match self {
            AnyLog::Ring(log) => model.write(log, ops),
            AnyLog::Segments(log) => model.write_segments(log, ops),
        }
    }

    pub fn sync(&self) -> Result<()> {
        match self {
            AnyLog::Ring(log) => log.sync(),
            AnyLog::Segments(log) => log.sync(),
        }
    }

    pub fn close(&self) -> Result<()> {
        match self {
            AnyLog::Ring(log) => log.close(),
            AnyLog::Segments(log) => log.close(),
        }
    }

    pub fn abandon(&self) {
        match self {
            AnyLog::Ring(log) => log.abandon(),
            AnyLog::Segments(log) => log.abandon(),
        }
    }

    pub fn stats(&self) -> lamina_storage::log::LogStats {
        match self {
            AnyLog::Ring(log) => log.stats(),
            AnyLog::Segments(log) => log.stats(),
        }
    }
}
