//! `record` / `replay`: a workload written to a file, so two systems (or two builds) can
//! be driven with exactly the same requests. Byte layout: `docs/format/bench-trace.md`.
//!
//! A trace holds the preload requests (phase 0) followed by the measured requests
//! (phase 1, warm-up included), each in a length-prefixed, CRC32C-checked record. Values
//! are stored as (length, fill seed), so a trace is small whatever the value size.

use std::{
    fs::File,
    io::{BufReader, BufWriter, ErrorKind, Read, Write},
    path::{Path, PathBuf},
};

use lamina_core::{
    Error, Result,
    checksum::masked_crc32c,
    codec::{Decode, DecodeError, Encode, Reader, put_bytes, put_varint, varint_len},
    limits::{KEY_BYTES_MAX, VALUE_BYTES_MAX},
};

use super::Workload;
use crate::{Op, Value};

/// First 8 bytes of a trace file.
pub const TRACE_MAGIC: [u8; 8] = *b"LMNTRACE";
/// Format version this build writes and reads.
pub const TRACE_VERSION: u32 = 1;
/// Header size: magic, version, reserved.
pub const HEADER_BYTES: usize = 16;
/// Largest record payload (a CAS with the largest key and two values fits easily).
pub const RECORD_BYTES_MAX: u32 = 4096;

/// Which part of the workload a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TracePhase {
    /// Loaded before measurement.
    Preload = 0,
    /// Measured (including warm-up).
    Run = 1,
}

/// One record of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRecord {
    /// Preload or run.
    pub phase: TracePhase,
    /// The request.
    pub op: Op,
}

fn value_len(v: &Value) -> usize {
    varint_len(u64::from(v.len)) + 8
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    put_varint(out, u64::from(v.len));
    out.extend_from_slice(&v.fill.to_le_bytes());
}

fn read_value(r: &mut Reader<'_>) -> Result<Value, DecodeError> {
    let at = r.position();
    let len = r.varint()?;
    if len > VALUE_BYTES_MAX as u64 {
        return Err(DecodeError::new(at, format!("value length {len} over {VALUE_BYTES_MAX}")));
    }
    Ok(Value { len: len as u32, fill: r.u64()? })
}

fn read_key(r: &mut Reader<'_>) -> Result<Vec<u8>, DecodeError> {
    let at = r.position();
    let key = r.bytes_with_len(KEY_BYTES_MAX)?;
    if key.is_empty() {
        return Err(DecodeError::new(at, "empty key"));
    }
    Ok(key.to_vec())
}

fn option_value_len(v: Option<&Value>) -> usize {
    1 + v.map_or(0, value_len)
}

fn put_option_value(out: &mut Vec<u8>, v: Option<&Value>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put_value(out, v);
        }
    }
}

fn read_option_value(r: &mut Reader<'_>) -> Result<Option<Value>, DecodeError> {
    let at = r.position();
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(read_value(r)?)),
        tag => Err(DecodeError::new(at, format!("bad option tag {tag}"))),
    }
}

impl Encode for TraceRecord {
    fn encoded_len(&self) -> usize {
        let key = self.op.key().len();
        let key = varint_len(key as u64) + key;
        2 + key
            + match &self.op {
                Op::Get { .. } | Op::Delete { .. } => 0,
                Op::Put { value, .. } | Op::Rmw { value, .. } => value_len(value),
                Op::Cas { expected, new, .. } => {
                    option_value_len(expected.as_ref()) + option_value_len(new.as_ref())
                }
                Op::Scan { limit, .. } => varint_len(u64::from(*limit)),
            }
    }

    fn encode_to(&self, out: &mut Vec<u8>) {
        out.push(self.phase as u8);
        out.push(self.op.kind().index() as u8);
        put_bytes(out, self.op.key());
        match &self.op {
            Op::Get { .. } | Op::Delete { .. } => {}
            Op::Put { value, .. } | Op::Rmw { value, .. } => put_value(out, value),
            Op::Cas { expected, new, .. } => {
                put_option_value(out, expected.as_ref());
                put_option_value(out, new.as_ref());
            }
            Op::Scan { limit, .. } => put_varint(out, u64::from(*limit)),
        }
    }
}

impl Decode for TraceRecord {
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let phase = match r.u8()? {
            0 => TracePhase::Preload,
            1 => TracePhase::Run,
            p => return Err(DecodeError::new(0, format!("bad phase {p}"))),
        };
        let kind_at = r.position();
        let kind = r.u8()?;
        let key = read_key(&mut r)?;
        let op = match kind {
            0 => Op::Get { key },
            1 => Op::Put { key, value: read_value(&mut r)? },
            2 => Op::Delete { key },
            3 => {
                let expected = read_option_value(&mut r)?;
                Op::Cas { key, expected, new: read_option_value(&mut r)? }
            }
            4 => {
                let at = r.position();
                let limit = r.varint()?;
                let limit = u32::try_from(limit)
                    .map_err(|_| DecodeError::new(at, format!("scan limit {limit} over u32")))?;
                Op::Scan { start: key, limit }
            }
            5 => Op::Rmw { key, value: read_value(&mut r)? },
            k => return Err(DecodeError::new(kind_at, format!("bad request kind {k}"))),
        };
        r.finish()?;
        Ok(TraceRecord { phase, op })
    }
}

/// Writes a trace file.
#[derive(Debug)]
pub struct TraceWriter {
    out: BufWriter<File>,
    path: PathBuf,
    scratch: Vec<u8>,
    records: u64,
}

impl TraceWriter {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path) -> Result<Self> {
        let file = File::create(path)
            .map_err(|e| Error::io(format!("creating trace {}", path.display()), e))?;
        let mut writer = TraceWriter {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
            scratch: Vec::new(),
            records: 0,
        };
        let mut header = Vec::with_capacity(HEADER_BYTES);
        header.extend_from_slice(&TRACE_MAGIC);
        header.extend_from_slice(&TRACE_VERSION.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        writer.write_bytes(&header)?;
        Ok(writer)
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .map_err(|e| Error::io(format!("writing trace {}", self.path.display()), e))
    }

    /// Appends one record.
    pub fn write(&mut self, record: &TraceRecord) -> Result<()> {
        let payload = record.encode();
        let len = u32::try_from(payload.len()).ok().filter(|&l| l <= RECORD_BYTES_MAX);
        let len = len.ok_or_else(|| {
            Error::option(
                "record",
                format!("request of {} bytes does not fit a trace record", payload.len()),
            )
        })?;
        self.scratch.clear();
        self.scratch.extend_from_slice(&len.to_le_bytes());
        self.scratch.extend_from_slice(&masked_crc32c(&payload).to_le_bytes());
        self.scratch.extend_from_slice(&payload);
        let bytes = std::mem::take(&mut self.scratch);
        let written = self.write_bytes(&bytes);
        self.scratch = bytes;
        self.records += 1;
        written
    }

    /// Flushes and syncs the file; returns the number of records.
    pub fn finish(mut self) -> Result<u64> {
        let context = format!("finishing trace {}", self.path.display());
        self.out.flush().map_err(|e| Error::io(&context, e))?;
        self.out.get_ref().sync_all().map_err(|e| Error::io(&context, e))?;
        Ok(self.records)
    }
}

/// Writes `workload`'s preload and its first `ops` requests to `path`; returns the
/// number of records.
pub fn record_trace(workload: &mut dyn Workload, ops: u64, path: &Path) -> Result<u64> {
    let mut writer = TraceWriter::create(path)?;
    while let Some(op) = workload.next_preload()? {
        writer.write(&TraceRecord { phase: TracePhase::Preload, op })?;
    }
    for _ in 0..ops {
        let Some(op) = workload.next_op()? else { break };
        writer.write(&TraceRecord { phase: TracePhase::Run, op })?;
    }
    writer.finish()
}

/// Reads a trace file as a [`Workload`] (the `replay` workload).
#[derive(Debug)]
pub struct TraceReader {
    input: BufReader<File>,
    path: PathBuf,
    offset: u64,
    /// A run record read while looking for the end of the preload.
    peeked: Option<TraceRecord>,
    preload_done: bool,
}

impl TraceReader {
    /// Opens `path` and checks its header.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path)
            .map_err(|e| Error::io(format!("opening trace {}", path.display()), e))?;
        let mut reader = TraceReader {
            input: BufReader::new(file),
            path: path.to_path_buf(),
            offset: 0,
            peeked: None,
            preload_done: false,
        };
        let mut header = [0u8; HEADER_BYTES];
        if !reader.read_exact_or_eof(&mut header)? {
            return Err(Error::corruption(path, 0, "empty file: not a lamina bench trace"));
        }
        let mut r = Reader::new(&header);
        let magic: [u8; 8] = r.array().map_err(|e| e.at(path, 0))?;
        if magic != TRACE_MAGIC {
            return Err(Error::Incompatible {
                reason: format!("{} is not a lamina bench trace (bad magic)", path.display()),
            });
        }
        let version = r.u32().map_err(|e| e.at(path, 0))?;
        if version != TRACE_VERSION {
            return Err(Error::Incompatible {
                reason: format!(
                    "{}: trace format version {version}, this build reads {TRACE_VERSION}",
                    path.display()
                ),
            });
        }
        reader.offset = HEADER_BYTES as u64;
        Ok(reader)
    }

    /// Fills `buf`; `Ok(false)` at a clean end of file, corruption on a partial read.
    fn read_exact_or_eof(&mut self, buf: &mut [u8]) -> Result<bool> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.input.read(&mut buf[filled..]) {
                Ok(0) if filled == 0 => return Ok(false),
                Ok(0) => {
                    return Err(Error::corruption(&self.path, self.offset, "truncated record"));
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::io(format!("reading trace {}", self.path.display()), e));
                }
            }
        }
        Ok(true)
    }

    /// The next record, `None` at the end of the file.
    pub fn read_record(&mut self) -> Result<Option<TraceRecord>> {
        let start = self.offset;
        let mut frame = [0u8; 8];
        if !self.read_exact_or_eof(&mut frame)? {
            return Ok(None);
        }
        let len = u32::from_le_bytes(frame[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(frame[4..].try_into().expect("4 bytes"));
        if len > RECORD_BYTES_MAX {
            return Err(Error::corruption(
                &self.path,
                start,
                format!("record length {len} over {RECORD_BYTES_MAX}"),
            ));
        }
        let mut payload = vec![0u8; len as usize];
        if !self.read_exact_or_eof(&mut payload)? && len > 0 {
            return Err(Error::corruption(&self.path, start, "truncated record"));
        }
        if crc != masked_crc32c(&payload) {
            return Err(Error::corruption(&self.path, start, "record checksum mismatch"));
        }
        self.offset = start + 8 + u64::from(len);
        let record = TraceRecord::decode(&payload).map_err(|e| e.at(&self.path, start + 8))?;
        Ok(Some(record))
    }
}

impl Workload for TraceReader {
    fn next_preload(&mut self) -> Result<Option<Op>> {
        if self.preload_done {
            return Ok(None);
        }
        match self.read_record()? {
            Some(TraceRecord { phase: TracePhase::Preload, op }) => Ok(Some(op)),
            other => {
                self.preload_done = true;
                self.peeked = other;
                Ok(None)
            }
        }
    }

    fn next_op(&mut self) -> Result<Option<Op>> {
        if !self.preload_done {
            // Skip to the run if the caller did not consume the preload.
            while self.next_preload()?.is_some() {}
        }
        let record = match self.peeked.take() {
            Some(r) => Some(r),
            None => self.read_record()?,
        };
        match record {
            None => Ok(None),
            Some(TraceRecord { phase: TracePhase::Run, op }) => Ok(Some(op)),
            Some(TraceRecord { phase: TracePhase::Preload, .. }) => Err(Error::corruption(
                &self.path,
                self.offset,
                "preload record after the run started",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{WorkloadConfig, WorkloadKind};

    fn every_kind() -> Vec<TraceRecord> {
        let v = Value { len: 100, fill: 0xdead_beef };
        let key = b"key".to_vec();
        let ops = vec![
            Op::Get { key: key.clone() },
            Op::Put { key: key.clone(), value: v },
            Op::Delete { key: key.clone() },
            Op::Cas { key: key.clone(), expected: None, new: Some(v) },
            Op::Cas { key: key.clone(), expected: Some(v), new: None },
            Op::Scan { start: key.clone(), limit: 10 },
            Op::Rmw { key, value: v },
        ];
        ops.into_iter()
            .enumerate()
            .map(|(i, op)| TraceRecord {
                phase: if i == 0 { TracePhase::Preload } else { TracePhase::Run },
                op,
            })
            .collect()
    }

    #[test]
    fn record_roundtrip() {
        for record in every_kind() {
            let bytes = record.encode();
            assert_eq!(bytes.len(), record.encoded_len());
            assert_eq!(TraceRecord::decode(&bytes).unwrap(), record);
        }
    }

    #[test]
    fn record_decode_rejects_every_truncation_and_bad_tags() {
        for record in every_kind() {
            let bytes = record.encode();
            for cut in 0..bytes.len() {
                assert!(TraceRecord::decode(&bytes[..cut]).is_err(), "{record:?} cut at {cut}");
            }
            let mut bad = bytes.clone();
            bad[1] = 9;
            assert!(TraceRecord::decode(&bad).is_err());
            let mut bad = bytes;
            bad[0] = 7;
            assert!(TraceRecord::decode(&bad).is_err());
        }
    }

    #[test]
    fn recorded_workload_replays_identically() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        let config =
            WorkloadConfig { preload: 50, ..WorkloadConfig::new(WorkloadKind::Contest, 4) };
        let written = record_trace(config.build().unwrap().as_mut(), 500, &path).unwrap();
        assert_eq!(written, 550);
        let mut original = config.build().unwrap();
        let mut replay = TraceReader::open(&path).unwrap();
        for _ in 0..50 {
            assert_eq!(replay.next_preload().unwrap(), original.next_preload().unwrap());
        }
        assert_eq!(replay.next_preload().unwrap(), None);
        for _ in 0..500 {
            assert_eq!(replay.next_op().unwrap(), original.next_op().unwrap());
        }
        assert_eq!(replay.next_op().unwrap(), None);
    }

    #[test]
    fn corrupt_traces_are_reported_with_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.trace");
        let mut w = TraceWriter::create(&path).unwrap();
        for r in every_kind() {
            w.write(&r).unwrap();
        }
        w.finish().unwrap();
        let good = std::fs::read(&path).unwrap();

        // A flipped payload bit fails the checksum of the first record.
        let mut bad = good.clone();
        bad[HEADER_BYTES + 10] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        let err = TraceReader::open(&path).unwrap().next_preload().unwrap_err();
        assert!(
            matches!(&err, Error::Corruption { offset, .. } if *offset == HEADER_BYTES as u64),
            "{err}"
        );

        // A truncated tail is reported, not treated as the end.
        std::fs::write(&path, &good[..good.len() - 3]).unwrap();
        let mut reader = TraceReader::open(&path).unwrap();
        let mut result = Ok(Some(Op::Get { key: vec![1] }));
        while let Ok(Some(_)) = result {
            result = reader.next_op();
        }
        assert!(matches!(result, Err(Error::Corruption { .. })), "{result:?}");

        // Wrong magic or version.
        let mut bad = good.clone();
        bad[0] = b'X';
        std::fs::write(&path, &bad).unwrap();
        assert!(matches!(TraceReader::open(&path), Err(Error::Incompatible { .. })));
        let mut bad = good;
        bad[8] = 2;
        std::fs::write(&path, &bad).unwrap();
        assert!(matches!(TraceReader::open(&path), Err(Error::Incompatible { .. })));
        std::fs::write(&path, b"").unwrap();
        assert!(TraceReader::open(&path).is_err());
    }
}
