//! Log records: one logged write (put, delete or an atomic batch) with its sequence number.
//!
//! A record is what the coalesced log of the SIGMOD 2011 contest paper (section 3) writes per
//! manipulating operation. The sequence number orders replay: recovery applies records in
//! sequence order, so overwrites and deletes resolve the same way they did before the crash,
//! and applying a record twice changes nothing (replay is idempotent).
//!
//! Layout (see `docs/format/log.md`): `seq: u64 LE`, `kind: u8`, then
//! - put: `key_len varint, key, value_len varint, value`;
//! - delete: `key_len varint, key`;
//! - batch: `op_count varint`, then each op as `op_kind: u8` followed by the put or delete body;
//! - batch part: a batch body too. A batch larger than the log's write buffer is logged as
//!   parts sharing its sequence number, each at most a buffer, and ends with an ordinary
//!   batch record: recovery ([`resolve_batch_parts`]) joins them, and drops parts whose
//!   final record never became durable (the batch is all or nothing).

use std::collections::{HashMap, HashSet};

use lamina_core::codec::{Decode, DecodeError, Encode, Reader, put_bytes, varint_len};
use lamina_core::limits::{BATCH_OPS_MAX, KEY_BYTES_MAX, VALUE_BYTES_MAX};
use lamina_core::{BatchOp, WriteBatch};

/// A log sequence number. Assigned by the log, strictly increasing in append order, never 0.
pub type SeqNo = u64;

const KIND_PUT: u8 = 1;
const KIND_DELETE: u8 = 2;
const KIND_BATCH: u8 = 3;
/// Operations of a batch whose final record (kind [`KIND_BATCH`], same sequence number)
/// follows later in the log.
const KIND_BATCH_PART: u8 = 4;

/// Fixed part of every record: the sequence number and the kind byte.
pub const RECORD_FIXED_BYTES: usize = 8 + 1;

/// Largest encoding of one put (the API's key and value limits plus framing).
pub const PUT_RECORD_BYTES_MAX: usize =
    RECORD_FIXED_BYTES + 2 + KEY_BYTES_MAX + 2 + VALUE_BYTES_MAX;

/// One operation to log, borrowing the caller's data (no copy before encoding).
#[derive(Debug, Clone, Copy)]
pub enum LogOp<'a> {
    /// Insert or overwrite `key`.
    Put {
        /// The key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
    /// Remove `key`.
    Delete {
        /// The key.
        key: &'a [u8],
    },
    /// Apply every operation of the batch, atomically and in order.
    Batch(&'a WriteBatch),
    /// Leading operations of a larger batch ([`RecordOp::BatchPart`]); the log writes these
    /// itself when it splits a batch.
    BatchPart(&'a WriteBatch),
}

/// A record read back from the log (owned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its sequence number.
    pub seq: SeqNo,
    /// What it does.
    pub op: RecordOp,
}

/// The operation of a [`Record`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordOp {
    /// Insert or overwrite.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Remove.
    Delete {
        /// The key.
        key: Vec<u8>,
    },
    /// Operations applied atomically, in order (a later op on the same key wins).
    Batch(Vec<BatchOp>),
    /// Leading operations of a batch too large for one record, no two on the same key
    /// (see the module documentation). Only decoding a payload yields it: a log's
    /// recovery joins the parts into the [`RecordOp::Batch`] that ends them, and never
    /// replays one.
    BatchPart(Vec<BatchOp>),
}

impl RecordOp {
    /// The borrowed form, for re-encoding.
    pub fn as_log_op<'a>(&'a self, scratch: &'a mut Option<WriteBatch>) -> LogOp<'a> {
        match self {
            RecordOp::Put { key, value } => LogOp::Put { key, value },
            RecordOp::Delete { key } => LogOp::Delete { key },
            RecordOp::Batch(ops) => LogOp::Batch(scratch.insert(ops.iter().cloned().collect())),
            RecordOp::BatchPart(ops) => {
                LogOp::BatchPart(scratch.insert(ops.iter().cloned().collect()))
            }
        }
    }

    /// The operations it holds, in order.
    pub fn ops(&self) -> Vec<BatchOp> {
        match self {
            RecordOp::Put { key, value } => {
                vec![BatchOp::Put { key: key.clone(), value: value.clone() }]
            }
            RecordOp::Delete { key } => vec![BatchOp::Delete { key: key.clone() }],
            RecordOp::Batch(ops) | RecordOp::BatchPart(ops) => ops.clone(),
        }
    }
}

fn put_body_len(key: &[u8], value: &[u8]) -> usize {
    varint_len(key.len() as u64) + key.len() + varint_len(value.len() as u64) + value.len()
}

/// Bytes a put of a `key_len`-byte key and a `value_len`-byte value takes in the log as a
/// record of its own (how garbage collection carries it): what an engine counts per live key
/// in [`crate::log::LiveRecords::live_bytes`].
pub fn put_record_bytes(key_len: usize, value_len: usize) -> u64 {
    (RECORD_FIXED_BYTES
        + varint_len(key_len as u64)
        + key_len
        + varint_len(value_len as u64)
        + value_len) as u64
}

fn delete_body_len(key: &[u8]) -> usize {
    varint_len(key.len() as u64) + key.len()
}

impl LogOp<'_> {
    /// Bytes of the record's encoding with any sequence number.
    pub fn encoded_len(&self) -> usize {
        RECORD_FIXED_BYTES
            + match self {
                LogOp::Put { key, value } => put_body_len(key, value),
                LogOp::Delete { key } => delete_body_len(key),
                LogOp::Batch(batch) | LogOp::BatchPart(batch) => {
                    varint_len(batch.len() as u64)
                        + batch.ops().iter().map(batch_op_len).sum::<usize>()
                }
            }
    }

    /// Appends the record with sequence number `seq` to `out`.
    pub fn encode_to(&self, seq: SeqNo, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&seq.to_le_bytes());
        match self {
            LogOp::Put { key, value } => {
                out.push(KIND_PUT);
                put_bytes(out, key);
                put_bytes(out, value);
            }
            LogOp::Delete { key } => {
                out.push(KIND_DELETE);
                put_bytes(out, key);
            }
            LogOp::Batch(batch) | LogOp::BatchPart(batch) => {
                out.push(if matches!(self, LogOp::Batch(_)) {
                    KIND_BATCH
                } else {
                    KIND_BATCH_PART
                });
                encode_batch_ops(batch.ops().iter(), batch.len(), out);
            }
        }
        debug_assert_eq!(out.len() - start, self.encoded_len());
    }
}

/// Bytes one operation takes inside a batch record (its kind byte and body).
fn batch_op_len(op: &BatchOp) -> usize {
    1 + match op {
        BatchOp::Put { key, value } => put_body_len(key, value),
        BatchOp::Delete { key } => delete_body_len(key),
    }
}

/// A batch body: the operation count, then each operation.
fn encode_batch_ops<'a>(ops: impl Iterator<Item = &'a BatchOp>, count: usize, out: &mut Vec<u8>) {
    lamina_core::codec::put_varint(out, count as u64);
    for op in ops {
        match op {
            BatchOp::Put { key, value } => {
                out.push(KIND_PUT);
                put_bytes(out, key);
                put_bytes(out, value);
            }
            BatchOp::Delete { key } => {
                out.push(KIND_DELETE);
                put_bytes(out, key);
            }
        }
    }
}

/// Encodes `batch`, too large for one record of at most `record_bytes_max` bytes, as
/// records that each fit: parts ([`RecordOp::BatchPart`]), then the final batch record, all
/// with sequence number 0 for the caller to set ([`set_record_seq`]).
///
/// Only the last operation on each key is kept (a batch applies in order, so the earlier
/// ones change nothing it leaves behind): then no key is in two parts, and the ring's
/// garbage collection, which reads one chunk at a time, can tell from a part alone which of
/// its puts are current.
pub(crate) fn split_batch(batch: &WriteBatch, record_bytes_max: usize) -> Vec<Vec<u8>> {
    let fixed = RECORD_FIXED_BYTES + varint_len(batch.len() as u64);
    assert!(fixed + PUT_RECORD_BYTES_MAX <= record_bytes_max, "a record must hold any op");
    let mut seen: HashSet<&[u8]> = HashSet::with_capacity(batch.len());
    let mut kept: Vec<&BatchOp> =
        batch.ops().iter().rev().filter(|op| seen.insert(op.key())).collect();
    kept.reverse();
    let mut records = Vec::new();
    let mut start = 0;
    while start < kept.len() {
        let mut end = start;
        let mut len = fixed;
        while end < kept.len() && len + batch_op_len(kept[end]) <= record_bytes_max {
            len += batch_op_len(kept[end]);
            end += 1;
        }
        assert!(end > start, "every op fits a record");
        let kind = if end == kept.len() { KIND_BATCH } else { KIND_BATCH_PART };
        let mut record = Vec::with_capacity(len);
        record.extend_from_slice(&0u64.to_le_bytes());
        record.push(kind);
        encode_batch_ops(kept[start..end].iter().copied(), end - start, &mut record);
        debug_assert!(record.len() <= record_bytes_max);
        records.push(record);
        start = end;
    }
    records
}

/// Sets the sequence number of an encoded record.
pub(crate) fn set_record_seq(record: &mut [u8], seq: SeqNo) {
    assert!(seq != 0 && seq != SeqNo::MAX, "sequence number {seq}");
    record[..8].copy_from_slice(&seq.to_le_bytes());
}

/// Joins the parts of each split batch (in log order) into the batch record that ends it,
/// and drops parts whose final record is not in `records` (a crash or a failed flush
/// before it became durable: the batch was never acknowledged, and is all or nothing).
/// Returns the records, no [`RecordOp::BatchPart`] among them, and the highest sequence
/// number seen (a dropped batch's included: it is never assigned again).
///
/// Garbage collection removes a log's records oldest first, so of a batch's parts only
/// leading ones can be missing, and only after the batch was applied: their live puts were
/// carried forward as records of their own.
pub fn resolve_batch_parts(records: Vec<Record>) -> (Vec<Record>, SeqNo) {
    let mut seq_max = 0;
    let mut parts: HashMap<SeqNo, Vec<BatchOp>> = HashMap::new();
    let mut out = Vec::with_capacity(records.len());
    for record in records {
        seq_max = seq_max.max(record.seq);
        match record.op {
            RecordOp::BatchPart(ops) => parts.entry(record.seq).or_default().extend(ops),
            RecordOp::Batch(ops) if parts.contains_key(&record.seq) => {
                let mut joined = parts.remove(&record.seq).expect("checked");
                joined.extend(ops);
                out.push(Record { seq: record.seq, op: RecordOp::Batch(joined) });
            }
            op => out.push(Record { seq: record.seq, op }),
        }
    }
    if !parts.is_empty() {
        tracing::info!(
            batches = parts.len(),
            "log recovery dropped batches whose end was not durable"
        );
    }
    (out, seq_max)
}

impl Encode for Record {
    fn encoded_len(&self) -> usize {
        let mut scratch = None;
        self.op.as_log_op(&mut scratch).encoded_len()
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        let mut scratch = None;
        self.op.as_log_op(&mut scratch).encode_to(self.seq, out);
    }
}

/// A key of 0 ([`lamina_core::limits::KEY_BYTES_MIN`]) to [`KEY_BYTES_MAX`] bytes: the empty
/// key is a key (logs written before it was accepted never hold one).
fn read_key(reader: &mut Reader<'_>) -> Result<Vec<u8>, DecodeError> {
    Ok(reader.bytes_with_len(KEY_BYTES_MAX)?.to_vec())
}

fn read_value(reader: &mut Reader<'_>) -> Result<Vec<u8>, DecodeError> {
    Ok(reader.bytes_with_len(VALUE_BYTES_MAX)?.to_vec())
}

fn read_single(reader: &mut Reader<'_>, kind: u8, at: usize) -> Result<BatchOp, DecodeError> {
    match kind {
        KIND_PUT => Ok(BatchOp::Put { key: read_key(reader)?, value: read_value(reader)? }),
        KIND_DELETE => Ok(BatchOp::Delete { key: read_key(reader)? }),
        other => Err(DecodeError::new(at, format!("unknown operation kind {other}"))),
    }
}

impl Record {
    /// Decodes one record from the front of `reader` (records are self-delimiting).
    pub fn decode_from(reader: &mut Reader<'_>) -> Result<Record, DecodeError> {
        let seq = reader.u64()?;
        // 0 is "nothing"; u64::MAX would overflow the next sequence number at recovery.
        if seq == 0 || seq == SeqNo::MAX {
            return Err(DecodeError::new(reader.position() - 8, format!("sequence number {seq}")));
        }
        let at = reader.position();
        let kind = reader.u8()?;
        let op = match kind {
            KIND_BATCH | KIND_BATCH_PART => {
                let count_at = reader.position();
                let count = reader.varint()?;
                if count > BATCH_OPS_MAX as u64 {
                    return Err(DecodeError::new(
                        count_at,
                        format!("batch of {count} operations, over {BATCH_OPS_MAX}"),
                    ));
                }
                // Each op takes at least 3 bytes; bounds the allocation by the input.
                let mut ops = Vec::with_capacity((count as usize).min(reader.remaining() / 3));
                for _ in 0..count {
                    let op_at = reader.position();
                    let op_kind = reader.u8()?;
                    ops.push(read_single(reader, op_kind, op_at)?);
                }
                if kind == KIND_BATCH { RecordOp::Batch(ops) } else { RecordOp::BatchPart(ops) }
            }
            _ => match read_single(reader, kind, at)? {
                BatchOp::Put { key, value } => RecordOp::Put { key, value },
                BatchOp::Delete { key } => RecordOp::Delete { key },
            },
        };
        Ok(Record { seq, op })
    }
}

impl Decode for Record {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(input);
        let record = Record::decode_from(&mut reader)?;
        reader.finish()?;
        Ok(record)
    }
}

/// Decodes every record of a chunk payload, in order.
pub fn decode_records(payload: &[u8]) -> Result<Vec<Record>, DecodeError> {
    let mut reader = Reader::new(payload);
    let mut out = Vec::new();
    while reader.remaining() > 0 {
        out.push(Record::decode_from(&mut reader)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn op_strategy() -> impl Strategy<Value = BatchOp> {
        let key = proptest::collection::vec(any::<u8>(), 0..40); // the empty key included
        let value = proptest::collection::vec(any::<u8>(), 0..60);
        prop_oneof![
            (key.clone(), value).prop_map(|(key, value)| BatchOp::Put { key, value }),
            key.prop_map(|key| BatchOp::Delete { key }),
        ]
    }

    fn record_strategy() -> impl Strategy<Value = Record> {
        let op = prop_oneof![
            op_strategy().prop_map(|op| match op {
                BatchOp::Put { key, value } => RecordOp::Put { key, value },
                BatchOp::Delete { key } => RecordOp::Delete { key },
            }),
            proptest::collection::vec(op_strategy(), 0..8).prop_map(RecordOp::Batch),
            proptest::collection::vec(op_strategy(), 0..8).prop_map(RecordOp::BatchPart),
        ];
        (1..u64::MAX, op).prop_map(|(seq, op)| Record { seq, op })
    }

    proptest! {
        #[test]
        fn records_roundtrip(records in proptest::collection::vec(record_strategy(), 0..10)) {
            let mut payload = Vec::new();
            for record in &records {
                let before = payload.len();
                record.encode_to(&mut payload);
                prop_assert_eq!(payload.len() - before, record.encoded_len());
            }
            prop_assert_eq!(decode_records(&payload).unwrap(), records);
        }

        /// A batch split for any record size decodes and resolves back to the batch with
        /// the last operation on each key, every record within the size; without its final
        /// record the batch is dropped, and its sequence number still counts.
        #[test]
        fn split_batches_resolve_to_the_batch(
            ops in proptest::collection::vec(op_strategy(), 1..200),
            record_bytes_max in PUT_RECORD_BYTES_MAX + 16..4 * PUT_RECORD_BYTES_MAX,
            seq in 1..1000u64,
        ) {
            let batch: WriteBatch = ops.iter().cloned().collect();
            let mut records = split_batch(&batch, record_bytes_max);
            let mut payload = Vec::new();
            for record in &mut records {
                prop_assert!(record.len() <= record_bytes_max);
                set_record_seq(record, seq);
                payload.extend_from_slice(record);
            }
            let decoded = decode_records(&payload).unwrap();
            prop_assert_eq!(decoded.len(), records.len());
            let mut seen = HashSet::new();
            let mut expected: Vec<BatchOp> =
                ops.iter().rev().filter(|op| seen.insert(op.key().to_vec())).cloned().collect();
            expected.reverse();
            let (resolved, seq_max) = resolve_batch_parts(decoded.clone());
            prop_assert_eq!(seq_max, seq);
            prop_assert_eq!(resolved, vec![Record { seq, op: RecordOp::Batch(expected) }]);
            if decoded.len() > 1 {
                let torn = decoded[..decoded.len() - 1].to_vec();
                prop_assert_eq!(resolve_batch_parts(torn), (Vec::new(), seq));
            }
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_records(&bytes);
        }
    }

    #[test]
    fn largest_put_fits_the_bound() {
        let key = vec![7u8; KEY_BYTES_MAX];
        let value = vec![9u8; VALUE_BYTES_MAX];
        let op = LogOp::Put { key: &key, value: &value };
        assert!(op.encoded_len() <= PUT_RECORD_BYTES_MAX);
    }

    #[test]
    fn put_record_bytes_is_the_encoded_length_of_a_put() {
        for (k, v) in
            [(0, 0), (1, 0), (8, 128), (127, 128), (128, 4096), (KEY_BYTES_MAX, VALUE_BYTES_MAX)]
        {
            let (key, value) = (vec![1u8; k], vec![2u8; v]);
            let op = LogOp::Put { key: &key, value: &value };
            assert_eq!(put_record_bytes(k, v), op.encoded_len() as u64, "{k} {v}");
        }
    }

    #[test]
    fn corrupt_records_are_refused() {
        let record =
            Record { seq: 5, op: RecordOp::Put { key: b"k".to_vec(), value: b"v".to_vec() } };
        let bytes = record.encode();
        // Unknown kind.
        let mut bad = bytes.clone();
        bad[8] = 9;
        assert!(Record::decode(&bad).unwrap_err().reason.contains("unknown operation kind"));
        // Sequence number zero.
        let mut bad = bytes.clone();
        bad[..8].copy_from_slice(&0u64.to_le_bytes());
        assert!(Record::decode(&bad).is_err());
        // Truncated.
        assert!(Record::decode(&bytes[..bytes.len() - 1]).is_err());
        // A zero key length is the empty key (valid), so the rest no longer parses exactly.
        let mut shifted = bytes.clone();
        shifted[9] = 0;
        assert!(Record::decode(&shifted).is_err(), "the key byte is read as a value length");
        // Key length over the limit.
        let mut bad = bytes[..9].to_vec();
        lamina_core::codec::put_varint(&mut bad, KEY_BYTES_MAX as u64 + 1);
        assert!(Record::decode(&bad).unwrap_err().reason.contains("over the limit"));
    }

    #[test]
    fn the_empty_key_roundtrips_in_every_record_kind() {
        let batch = vec![
            BatchOp::Put { key: Vec::new(), value: b"v".to_vec() },
            BatchOp::Delete { key: Vec::new() },
        ];
        for op in [
            RecordOp::Put { key: Vec::new(), value: Vec::new() },
            RecordOp::Delete { key: Vec::new() },
            RecordOp::Batch(batch),
        ] {
            let record = Record { seq: 3, op };
            assert_eq!(Record::decode(&record.encode()).unwrap(), record);
        }
    }

    #[test]
    fn the_largest_sequence_number_is_refused() {
        let record =
            Record { seq: SeqNo::MAX, op: RecordOp::Put { key: b"k".to_vec(), value: Vec::new() } };
        let mut scratch = None;
        let mut out = Vec::new();
        record.op.as_log_op(&mut scratch).encode_to(record.seq, &mut out);
        let err = Record::decode_from(&mut Reader::new(&out)).unwrap_err();
        assert!(err.reason.contains("sequence number"), "{err}");
    }
}
