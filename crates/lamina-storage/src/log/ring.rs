//! Cyclic retention: one ring file overwritten in a circle, with on-the-fly garbage
//! collection (SIGMOD 2011 contest paper, section 3: "the coalesced cyclic log reads at
//! least the size of the write buffer ahead ... All log records that are still valid are
//! stored at the beginning of the write buffer and are written together with the new log
//! records on the next write buffer flush").
//!
//! Positions are monotonic byte counts; position `p` lives at file offset
//! `4096 + p % capacity`. A chunk never wraps: if it does not fit before the end of the
//! ring, it starts at the next lap. Three zones lie ahead of the writer (in the previous
//! lap): `[.., durable_clean)` was collected and its live records are durable in newer
//! chunks, so it may be overwritten; `[durable_clean, cleaned)` was collected into `carry`,
//! which is not yet written, so it must not be; `[cleaned, head)` is not collected yet.
//! A chunk only overwrites the first zone, so a torn write never destroys a record whose
//! copy is not durable. Every chunk records `tail = cleaned`: recovery reads `[tail, end)`.

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::codec::Decode;
use lamina_core::{BatchOp, Error, Result};

use super::chunk::{CHUNK_HEADER_BYTES, ChunkHeader, FILE_HEADER_BYTES, chunk_len, encode_chunk};
use super::options::LiveRecords;
use super::record::{LogOp, RecordOp, SeqNo, decode_records};
use crate::backend::StorageFile;

/// How far ahead of the writer the first lap zero-fills the ring file. The file is created
/// sparse (instant, whatever its size); the first `fdatasync` after a write into a hole also
/// commits the block allocation (measured on this machine's ext4: ~250-270 us for a 4 KiB
/// write + `fdatasync` into a hole or an `fallocate`d range, ~120-160 us into written
/// zeros). Zero-filling ahead in steps moves that commit to one sync in every
/// `ZERO_AHEAD_BYTES` of log instead of nearly every sync. The zeros are real writes (and
/// counted as such) during the first lap only.
pub(crate) const ZERO_AHEAD_BYTES: u64 = 256 << 10;

/// Read-ahead collection keeps this many maximal chunks of collected space ahead of the
/// writer (the next flush rounds fit without collecting inside a flush).
const COLLECT_AHEAD_CHUNKS: u64 = 6;

/// A chunk of the ring that has not been garbage collected yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub pos: u64,
    pub len: u64,
    pub payload_len: u32,
}

/// Counters of the garbage collection.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GcCounters {
    pub chunks_collected: u64,
    pub records_copied: u64,
    pub bytes_copied: u64,
    pub records_dropped: u64,
}

/// The ring file and the state of its garbage collection.
#[derive(Debug)]
pub(crate) struct Ring {
    file: Arc<dyn StorageFile>,
    path: PathBuf,
    log_id: u64,
    capacity: u64,
    payload_max: usize,
    chunk_max: u64,
    head: u64,
    /// Ring offset up to which the file's blocks have been written (the file is created
    /// sparse); `capacity` from the second lap on. See [`ZERO_AHEAD_BYTES`].
    zeroed_end: u64,
    cleaned: u64,
    durable_clean: u64,
    spans: VecDeque<Span>,
    carry: Vec<u8>,
    carry_records: u32,
    scratch: Vec<u8>,
    /// Whether a flush may write carried records as a chunk of their own and reuse the
    /// space so collected at once. Only under `Sync`: there, every operation the engine has
    /// applied is durable, so a record it reports superseded stays superseded after a
    /// crash. Under `Buffered`/`None` the engine applies at once, and the superseding record
    /// may be in the very buffer being flushed; the carry is then capped so carry and new
    /// records always fit one chunk, and a flush that does not fit is `NoSpace`.
    collect_in_flush: bool,
    carry_max: usize,
    pub gc: GcCounters,
}

/// Answers liveness for garbage collection; `None`: nothing is collected (the ring fills up).
pub(crate) type Oracle = Option<Arc<dyn LiveRecords>>;

impl Ring {
    /// A ring whose chunks `spans` (oldest first, ending at `head`) are not yet collected.
    #[allow(clippy::too_many_arguments)] // one constructor, called from recovery only
    pub(crate) fn new(
        file: Arc<dyn StorageFile>,
        path: PathBuf,
        log_id: u64,
        capacity: u64,
        payload_max: usize,
        head: u64,
        tail: u64,
        spans: VecDeque<Span>,
    ) -> Ring {
        assert!(tail <= head && head - tail <= capacity, "ring window out of bounds");
        assert!(spans.front().is_none_or(|s| s.pos == tail), "first span must start at tail");
        Ring {
            file,
            path,
            log_id,
            capacity,
            payload_max,
            chunk_max: chunk_len(payload_max),
            head,
            // In the first lap nothing past `head` holds a chunk recovery accepted, so it
            // may be zero-filled; once the ring has wrapped, every block has been written.
            zeroed_end: if head >= capacity { capacity } else { head },
            cleaned: tail,
            durable_clean: tail,
            spans,
            carry: Vec::new(),
            carry_records: 0,
            scratch: Vec::new(),
            collect_in_flush: true,
            carry_max: payload_max,
            gc: GcCounters::default(),
        }
    }

    /// Configures collection for a log whose engine applies operations before they are
    /// durable (`Buffered` and `None` durability), with write buffers of `buffer_bytes`.
    pub(crate) fn set_apply_before_durable(&mut self, buffer_bytes: usize) {
        assert!(buffer_bytes < self.payload_max, "a chunk holds carry and one buffer");
        self.collect_in_flush = false;
        self.carry_max = self.payload_max - buffer_bytes;
    }

    fn place(&self, len: u64) -> u64 {
        let offset = self.head % self.capacity;
        if offset + len <= self.capacity { self.head } else { self.head + self.capacity - offset }
    }

    /// Whether a chunk of `len` bytes of new records can be written and still leave room for
    /// a carry chunk after it (two maximal chunks: one for the carry, one for the skip to the
    /// ring's start at the end of a lap), as long as anything is left to collect. Without
    /// that reserve, flushes could use up the space ahead until a carry chunk no longer fits,
    /// and then nothing could ever be collected again (the collected space becomes writable
    /// only once its live records are written). Only where the carry may be written on its
    /// own (`Sync`); otherwise carry and new records always go out together.
    fn fits_keeping_reserve(&self, len: u64) -> bool {
        if !self.collect_in_flush || self.spans.is_empty() {
            return self.fits(len);
        }
        self.fits(len)
            && self.place(len) + len + 2 * self.chunk_max <= self.durable_clean + self.capacity
    }

    /// Whether a chunk of `len` bytes can be written without overwriting anything whose live
    /// records are not durable elsewhere.
    fn fits(&self, len: u64) -> bool {
        self.place(len) + len <= self.durable_clean + self.capacity
    }

    fn write_chunk(&mut self, payload: &[u8], records: u32, seq_hi: SeqNo) -> Result<()> {
        let len = chunk_len(payload.len());
        assert!(payload.len() <= self.payload_max, "chunk payload over the maximum");
        assert!(self.fits(len), "chunk would overwrite live data");
        let pos = self.place(len);
        if self.spans.is_empty() {
            // Everything was collected (`cleaned == head`); a chunk that starts the next lap
            // leaves a gap with nothing in it: the window starts at the chunk itself.
            self.cleaned = pos;
        }
        let header = ChunkHeader {
            log_id: self.log_id,
            pos,
            prev_end: self.head,
            tail: self.cleaned,
            seq_hi,
            payload_len: payload.len() as u32,
            record_count: records,
            payload_crc: 0,
        };
        let mut buf = std::mem::take(&mut self.scratch);
        encode_chunk(&header, payload, &mut buf);
        let offset = FILE_HEADER_BYTES + pos % self.capacity;
        let written = self
            .file
            .write_all_at(offset, &buf)
            .and_then(|()| self.zero_ahead(pos, len))
            .and_then(|()| self.file.sync_data());
        self.scratch = buf;
        written?;
        self.spans.push_back(Span { pos, len, payload_len: payload.len() as u32 });
        self.head = pos + len;
        // Everything collected so far has its live records in this chunk or an older one.
        self.durable_clean = self.cleaned;
        Ok(())
    }

    /// First lap only: writes zeros over the next [`ZERO_AHEAD_BYTES`] of the sparse ring
    /// file past the chunk at `pos` (of `len` bytes) once the chunk reaches the zeroed part's
    /// end, so the chunk writes that follow land in allocated blocks.
    fn zero_ahead(&mut self, pos: u64, len: u64) -> Result<()> {
        if pos >= self.capacity {
            self.zeroed_end = self.capacity;
            return Ok(());
        }
        let chunk_end = pos + len;
        if chunk_end <= self.zeroed_end {
            return Ok(());
        }
        let zero_to = (chunk_end + ZERO_AHEAD_BYTES).min(self.capacity);
        let zeros = vec![0u8; usize::try_from(zero_to - chunk_end).expect("at most 256 KiB")];
        self.file.write_all_at(FILE_HEADER_BYTES + chunk_end, &zeros)?;
        self.zeroed_end = zero_to;
        Ok(())
    }

    /// Writes the new records `user` (one write buffer) as one chunk together with the
    /// carried live records, collecting more of the ring first if the space ahead is short.
    /// `before_collect` must return once every operation logged so far is applied by the
    /// engine (so its liveness answers are exact); it returns false if that did not happen.
    pub(crate) fn flush(
        &mut self,
        user: &[u8],
        user_records: u32,
        seq_hi: SeqNo,
        oracle: &Oracle,
        before_collect: &mut dyn FnMut() -> bool,
    ) -> Result<u64> {
        let mut written = 0;
        let mut collected_here = 0u64;
        loop {
            let combined = self.carry.len() + user.len();
            if combined <= self.payload_max && self.fits_keeping_reserve(chunk_len(combined)) {
                let mut payload = std::mem::take(&mut self.carry);
                payload.extend_from_slice(user);
                let records = self.carry_records + user_records;
                let result = self.write_chunk(&payload, records, seq_hi);
                payload.clear();
                self.carry = payload;
                result?;
                self.carry_records = 0;
                return Ok(written + chunk_len(combined));
            }
            if self.collect_in_flush
                && !self.carry.is_empty()
                && self.fits(chunk_len(self.carry.len()))
            {
                let carry = std::mem::take(&mut self.carry);
                let result = self.write_chunk(&carry, self.carry_records, seq_hi);
                self.carry = carry;
                result?;
                written += chunk_len(self.carry.len());
                self.carry.clear();
                self.carry_records = 0;
                continue;
            }
            // Not enough collected space ahead: collect more, at most one lap's worth.
            let progress =
                if self.collect_in_flush && collected_here < self.capacity && before_collect() {
                    self.collect_one(oracle, &HashSet::new())?
                } else {
                    None
                };
            match progress {
                Some(bytes) => collected_here += bytes,
                None => {
                    return Err(Error::NoSpace {
                        context: format!(
                            "cyclic log {} of {} bytes is full of live records: {} new bytes \
                             do not fit (raise capacity_bytes)",
                            self.path.display(),
                            self.capacity,
                            user.len()
                        ),
                    });
                }
            }
        }
    }

    /// Log position where the next chunk goes (chunks below it are written).
    pub(crate) fn head(&self) -> u64 {
        self.head
    }

    /// Whether [`Ring::collect_ahead`] with the same `below` has anything to do.
    pub(crate) fn collect_ahead_due(&self, below: u64) -> bool {
        self.cleaned + self.capacity < self.head + COLLECT_AHEAD_CHUNKS * self.chunk_max
            && self.spans.front().is_some_and(|span| span.pos < below)
    }

    /// Collects ahead of the writer until the next two flush rounds fit (read-ahead of the
    /// contest paper), without waiting; stops early when the carry buffer is full, and
    /// before the first chunk at or past position `below` (the chunk just written).
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
        oracle: &Oracle,
        below: u64,
        superseded: &HashSet<Vec<u8>>,
    ) -> Result<()> {
        let target = self.head + COLLECT_AHEAD_CHUNKS * self.chunk_max;
        while self.cleaned + self.capacity < target {
            if self.spans.front().is_none_or(|span| span.pos >= below) {
                break;
            }
            if self.collect_one(oracle, superseded)?.is_none() {
                break;
            }
        }
        Ok(())
    }

    /// Collects the oldest chunk into the carry buffer; `None` if there is none or the
    /// carry buffer cannot take it. `superseded` as in [`Ring::collect_ahead`] (empty when
    /// the engine has applied every durable record).
    fn collect_one(
        &mut self,
        oracle: &Oracle,
        superseded: &HashSet<Vec<u8>>,
    ) -> Result<Option<u64>> {
        // Without an oracle nothing is collected (see `Log::set_live_records`).
        let (Some(oracle), Some(&span)) = (oracle.as_deref(), self.spans.front()) else {
            return Ok(None);
        };
        assert_eq!(span.pos, self.cleaned, "collection must proceed in log order");
        let offset = FILE_HEADER_BYTES + span.pos % self.capacity;
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
            RecordOp::Batch(ops) => {
                // Within a batch a later op on the same key wins; only it can be current.
                let mut later_keys = std::collections::HashSet::new();
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

    /// Bytes of the ring currently holding uncollected chunks.
    pub(crate) fn window_bytes(&self) -> u64 {
        self.head - self.cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::chunk::{FileHeader, FileKind};
    use crate::log::options::{LogOptions, Retention};
    use crate::log::recovery::open_sink;
    use crate::log::segments::create_log_file;
    use crate::{MemoryStorage, Storage};

    /// Collection inside a flush can collect every chunk (`cleaned == head`, no spans); the
    /// next chunk may then start the next lap, past `head`. It must start the window: its
    /// `tail` and the collection frontier are its own position, not the old `head` (recovery
    /// would find no chunk at the tail: corruption; collection would assert).
    #[test]
    fn a_chunk_after_everything_was_collected_starts_the_window() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let small = LogOptions {
            retention: Retention::Cyclic { capacity_bytes: 0 },
            buffer_bytes: 16 * 1024,
            ..LogOptions::default()
        };
        let capacity = small.ring_bytes_min();
        let options =
            LogOptions { retention: Retention::Cyclic { capacity_bytes: capacity }, ..small };
        let header = FileHeader {
            kind: FileKind::Ring,
            log_id: 7,
            file_index: 0,
            base_pos: 0,
            capacity_bytes: capacity,
            seq_floor: 0,
        };
        let file =
            create_log_file(storage.as_ref(), "wal.ring", &header, FILE_HEADER_BYTES + capacity)
                .unwrap();
        // Everything collected, the writer one block before the ring's end (second lap).
        let head = 2 * capacity - 4096;
        let path = storage.path_of("wal.ring");
        let payload_max = options.chunk_payload_max();
        let mut ring = Ring::new(file, path, 7, capacity, payload_max, head, head, VecDeque::new());
        // A two-block chunk does not fit before the end: it starts the next lap.
        let mut payload = Vec::new();
        LogOp::Put { key: b"k", value: &[1u8; 4096] }.encode_to(1, &mut payload);
        ring.flush(&payload, 1, 1, &None, &mut || true).unwrap();
        assert_eq!(ring.head(), 2 * capacity + 8192);
        let opened = open_sink(&storage, &options).unwrap();
        assert_eq!(opened.records.len(), 1);
        // Collection starts at the window's first chunk (it asserts log order).
        let all_live: Oracle = Some(Arc::new(AllLive));
        assert!(ring.collect_one(&all_live, &HashSet::new()).unwrap().is_some());
        assert_eq!(ring.gc.chunks_collected, 1);
    }

    /// Every put is current.
    struct AllLive;

    impl LiveRecords for AllLive {
        fn is_current(&self, _key: &[u8], _seq: SeqNo) -> bool {
            true
        }
    }
}
