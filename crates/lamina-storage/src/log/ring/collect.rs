//! On-the-fly garbage collection of the ring (SIGMOD 2011 contest paper, section 3: "the
//! coalesced cyclic log reads at least the size of the write buffer ahead ... All log
//! records that are still valid are stored at the beginning of the write buffer and are
//! written together with the new log records on the next write buffer flush").
//!
//! Collection reads the oldest uncollected chunk, asks the engine which of its puts are
//! still current, and carries those into the next chunk; deletes are dropped. It runs in
//! log order, ahead of the writer in the visit it overwrites.

use std::collections::HashSet;

use lamina_core::codec::Decode;
use lamina_core::{BatchOp, Error, Result};

use super::writer::Ring;
use crate::log::chunk::{CHUNK_HEADER_BYTES, ChunkHeader, chunk_len};
use crate::log::options::LiveRecords;
use crate::log::record::{LogOp, RecordOp, SeqNo, decode_records};

/// Read-ahead collection keeps this many maximal chunks of collected space ahead of the
/// writer (the next flush rounds fit without collecting inside a flush).
const COLLECT_AHEAD_CHUNKS: u64 = 6;

impl Ring {
    /// Bytes the writer could write before reaching uncollected chunks; while the ring
    /// should shrink, without the segment that would retire next (collection then clears
    /// that segment and the room the writer needs after it, so that it can be punched out
    /// after the next chunk).
    fn collected_ahead(&self) -> u64 {
        let (head, bound, dc, policy) =
            (self.head, self.cleaned, self.durable_clean, self.policy());
        match self.retiring() {
            Some((segment, _)) => self.layout.ahead_without(segment, head, bound, dc, policy),
            None => self.layout.ahead(head, bound, dc, policy),
        }
    }

    /// While the ring should shrink: the segment that would retire next and the end of its
    /// latest visit.
    fn retiring(&self) -> Option<(usize, u64)> {
        if !self.layout.shrink_wanted(self.policy()) {
            return None;
        }
        self.layout.oldest_other()
    }

    /// Whether [`Ring::collect_ahead`] with the same `below` has anything to do.
    pub(crate) fn collect_ahead_due(&self, below: u64) -> bool {
        let clearing = self.retiring().is_some_and(|(_, end)| self.cleaned < end);
        let wanted = clearing || self.collected_ahead() < COLLECT_AHEAD_CHUNKS * self.chunk_max;
        wanted && self.spans.front().is_some_and(|span| span.pos < below)
    }

    /// Collects ahead of the writer until the next flush rounds fit (read-ahead of the
    /// contest paper), and while the ring should shrink until its oldest other segment is
    /// clear, without waiting; stops early when the carry buffer is full, and before the
    /// first chunk at or past position `below` (the chunk just written).
    ///
    /// `superseded` holds every key that a durable record the engine may not have applied
    /// yet writes (the chunks just synced, whose writers are still being woken): a put of
    /// such a key is not carried, whatever the engine says, because a newer durable record
    /// of the key exists. Asking the engine alone would be wrong for a delete it has not
    /// applied yet: the older put would be carried into a chunk after the delete's, and once
    /// the delete's chunk is collected (deletes are dropped then), a crash would bring the
    /// key back (`tests/log_gc_unapplied.rs`).
    pub(crate) fn collect_ahead(
        &mut self,
        oracle: &dyn LiveRecords,
        below: u64,
        superseded: &HashSet<Vec<u8>>,
    ) -> Result<()> {
        if !self.collect_ahead_due(below) {
            return Ok(());
        }
        let _span = tracing::debug_span!("log_gc", path = ?self.path).entered();
        let mut collected_bytes = 0u64;
        while self.collect_ahead_due(below) {
            match self.collect_one(oracle, superseded) {
                Ok(Some(bytes)) => collected_bytes += bytes,
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(error = %e, "log garbage collection failed");
                    return Err(e);
                }
            }
        }
        tracing::debug!(collected_bytes, carry_bytes = self.carry.len(), "log chunks collected");
        Ok(())
    }

    /// Collects the oldest chunk into the carry buffer; `None` if there is none or the
    /// carry buffer cannot take it. `superseded` as in [`Ring::collect_ahead`] (empty when
    /// the engine has applied every durable record).
    pub(super) fn collect_one(
        &mut self,
        oracle: &dyn LiveRecords,
        superseded: &HashSet<Vec<u8>>,
    ) -> Result<Option<u64>> {
        let Some(&span) = self.spans.front() else {
            return Ok(None);
        };
        assert_eq!(span.pos, self.cleaned, "collection must proceed in log order");
        let segment_bytes = self.layout.segment_bytes();
        let offset = self.layout.file_offset(span.segment, span.pos % segment_bytes);
        let mut buf = vec![0u8; CHUNK_HEADER_BYTES + span.payload_len as usize];
        self.file.read_exact_at(offset, &mut buf)?;
        let header = ChunkHeader::decode(&buf).map_err(|e| e.at(&self.path, offset))?;
        let payload = &buf[CHUNK_HEADER_BYTES..];
        if header.pos != span.pos || !header.payload_matches(payload) {
            return Err(Error::corruption(&self.path, offset, "chunk changed before collection"));
        }
        let records = decode_records(payload)
            .map_err(|e| e.at(&self.path, offset + CHUNK_HEADER_BYTES as u64))?;
        // What the chunk's live records add to the carry decides whether it can be taken
        // (not the chunk's whole payload, which may be mostly garbage): the carry must stay
        // within its cap and, where the carry may be written as a chunk of its own, within
        // the space writable now, so that writing it is always possible and frees what was
        // collected. Otherwise the chunk stays for later, and nothing changes.
        let (carry_len, carry_records, gc) = (self.carry.len(), self.carry_records, self.gc);
        for record in records {
            self.carry_live(record.seq, record.op, oracle, superseded);
        }
        let carry_writable = !self.collect_in_flush || self.fits(chunk_len(self.carry.len()));
        if self.carry.len() > self.carry_max || !carry_writable {
            self.carry.truncate(carry_len);
            self.carry_records = carry_records;
            self.gc = gc;
            return Ok(None);
        }
        self.spans.pop_front();
        self.cleaned = self.spans.front().map_or(self.head, |s| s.pos);
        self.gc.chunks_collected += 1;
        Ok(Some(span.len))
    }

    fn carry_live(
        &mut self,
        seq: SeqNo,
        op: RecordOp,
        oracle: &dyn LiveRecords,
        superseded: &HashSet<Vec<u8>>,
    ) {
        match op {
            RecordOp::Put { key, value } => {
                if !superseded.contains(&key) && oracle.is_current(&key, seq) {
                    self.push_carry(seq, LogOp::Put { key: &key, value: &value });
                } else {
                    self.gc.records_dropped += 1;
                }
            }
            // Every older record of the key is in this chunk or an older one, so it is gone
            // once this chunk is overwritten; the delete has nothing left to shadow.
            RecordOp::Delete { .. } => self.gc.records_dropped += 1,
            // A part of a split batch holds no key of another part (`record::split_batch`),
            // so it is decided alone; it is reached only after its batch was applied (the
            // batch's first generation stays unapplied until then, and collection stops
            // before it).
            RecordOp::Batch(ops) | RecordOp::BatchPart(ops) => {
                // Within a batch a later op on the same key wins; only it can be current.
                let mut later_keys = HashSet::new();
                for op in ops.iter().rev() {
                    let superseded_in_batch = !later_keys.insert(op.key());
                    match op {
                        BatchOp::Put { key, value }
                            if !superseded_in_batch
                                && !superseded.contains(key)
                                && oracle.is_current(key, seq) =>
                        {
                            self.push_carry(seq, LogOp::Put { key, value });
                        }
                        _ => self.gc.records_dropped += 1,
                    }
                }
            }
        }
    }

    fn push_carry(&mut self, seq: SeqNo, op: LogOp<'_>) {
        let before = self.carry.len();
        op.encode_to(seq, &mut self.carry);
        self.carry_records += 1;
        self.gc.records_copied += 1;
        self.gc.bytes_copied += (self.carry.len() - before) as u64;
    }
}
