//! The ring file and the writer's side of it: where chunks go, how they are written, and
//! how the ring grows and shrinks (placement rules in [`super::layout`]).
//!
//! Three zones lie ahead of the writer, in the visit it overwrites: chunks below
//! `durable_clean` were collected and their live records are durable in newer chunks, so
//! they may be overwritten; `[durable_clean, cleaned)` was collected into `carry`, which is
//! not yet written, so it must not be; `[cleaned, head)` is not collected yet. A chunk only
//! overwrites the first zone, so a torn write never destroys a record whose copy is not
//! durable. Every chunk records `tail = cleaned`: recovery reads `[tail, end)`.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use lamina_core::codec::Encode;
use lamina_core::{DISK_BUDGET_OPTION, Error, Result};

use super::layout::{Layout, NextSegment, Placement, Policy};
use crate::backend::StorageFile;
use crate::log::chunk::{
    BLOCK_BYTES, ChunkHeader, FILE_HEADER_BYTES, FileHeader, FileKind, RING_FORMAT_VERSION,
    chunk_len, encode_chunk,
};
use crate::log::record::SeqNo;
use crate::log::synced_mark::{self, SyncedMark};

/// How far ahead of the writer a segment's first visit zero-fills it. The ring file is
/// created sparse (instant, whatever its size) and grows by sparse segments; the first
/// `fdatasync` after a write into a hole also commits the block allocation (measured on this
/// machine's ext4: ~250-270 us for a 4 KiB write + `fdatasync` into a hole or an
/// `fallocate`d range, ~120-160 us into written zeros). Zero-filling ahead in steps moves
/// that commit to one sync in every `ZERO_AHEAD_BYTES` of log instead of nearly every sync.
/// The zeros are real writes (and counted as such), once per segment (again after a
/// segment was retired and revived), and only ahead of chunks smaller than the step.
pub(crate) const ZERO_AHEAD_BYTES: u64 = 256 << 10;

/// A chunk of the ring that has not been garbage collected yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub pos: u64,
    pub len: u64,
    pub payload_len: u32,
    pub segment: usize,
}

/// Counters of the garbage collection.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GcCounters {
    pub chunks_collected: u64,
    pub records_copied: u64,
    pub bytes_copied: u64,
    pub records_dropped: u64,
    /// Segments added (appended or revived) since open.
    pub segments_grown: u64,
    /// Segments retired (punched out) since open.
    pub segments_retired: u64,
}

/// What recovery (or creation) hands to [`Ring::new`].
#[derive(Debug)]
pub(crate) struct RingParts {
    pub file: Arc<dyn StorageFile>,
    pub path: PathBuf,
    pub log_id: u64,
    /// The file header's format version (1: an older fixed ring, rewritten before growth).
    pub version: u32,
    pub seq_floor: u64,
    /// Segments the file header records.
    pub header_segments: u64,
    pub layout: Layout,
    pub payload_max: usize,
    /// End of the newest chunk.
    pub head: u64,
    /// The newest chunk's `tail`.
    pub tail: u64,
    /// Chunks in `[tail, head)`, oldest first.
    pub spans: VecDeque<Span>,
    /// Most active segments the disk budget allows (`u64::MAX`: no budget).
    pub active_max: u64,
    /// The disk budget, for messages.
    pub disk_budget_bytes: Option<u64>,
}

/// The ring file and the state of its garbage collection.
#[derive(Debug)]
pub(crate) struct Ring {
    pub(super) file: Arc<dyn StorageFile>,
    pub(super) path: PathBuf,
    log_id: u64,
    version: u32,
    seq_floor: u64,
    /// Segments the file header records (the file has at least as many).
    header_segments: u64,
    pub(super) layout: Layout,
    pub(super) payload_max: usize,
    pub(super) chunk_max: u64,
    pub(super) head: u64,
    pub(super) cleaned: u64,
    pub(super) durable_clean: u64,
    pub(super) spans: VecDeque<Span>,
    pub(super) carry: Vec<u8>,
    pub(super) carry_records: u32,
    scratch: Vec<u8>,
    /// Whether a flush may write carried records as a chunk of their own and reuse the
    /// space so collected at once. Only under `Sync`: there, every operation the engine has
    /// applied is durable, so a record it reports superseded stays superseded after a
    /// crash. Under `Buffered`/`None` the engine applies at once, and the superseding record
    /// may be in the very buffer being flushed; the carry is then capped so carry and new
    /// records always fit one chunk, and a flush that does not fit grows the ring instead
    /// (or is `NoSpace` at the budget).
    pub(super) collect_in_flush: bool,
    pub(super) carry_max: usize,
    /// File offsets of chunks whose write or sync failed and that were not overwritten
    /// since: they may still reach the device whole, so the next chunk written zeroes their
    /// first blocks (in the same sync) before one can be mistaken for part of the log.
    failed_writes: Vec<u64>,
    /// Synced marks written by this process; the next goes to slot `synced_marks % 2`
    /// (`log/synced_mark.rs`).
    synced_marks: u64,
    /// Live bytes the engine reported last ([`Ring::set_live_bytes`]).
    pub(super) live_bytes: u64,
    active_max: u64,
    disk_budget_bytes: Option<u64>,
    pub gc: GcCounters,
}

impl Ring {
    pub(crate) fn new(parts: RingParts) -> Ring {
        let RingParts {
            file,
            path,
            log_id,
            version,
            seq_floor,
            header_segments,
            layout,
            payload_max,
            ..
        } = parts;
        assert!(parts.tail <= parts.head, "ring window out of bounds");
        assert!(
            parts.spans.front().is_none_or(|s| s.pos == parts.tail),
            "first span must start at tail"
        );
        assert!(parts.active_max >= 1, "a ring has at least one segment");
        Ring {
            file,
            path,
            log_id,
            version,
            seq_floor,
            header_segments,
            layout,
            payload_max,
            chunk_max: chunk_len(payload_max),
            head: parts.head,
            cleaned: parts.tail,
            durable_clean: parts.tail,
            spans: parts.spans,
            carry: Vec::new(),
            carry_records: 0,
            scratch: Vec::new(),
            collect_in_flush: true,
            carry_max: payload_max,
            failed_writes: Vec::new(),
            synced_marks: 0,
            live_bytes: 0,
            active_max: parts.active_max,
            disk_budget_bytes: parts.disk_budget_bytes,
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

    /// The engine's live bytes now: they decide growth and shrinking.
    pub(crate) fn set_live_bytes(&mut self, live_bytes: u64) {
        self.live_bytes = live_bytes;
    }

    pub(super) fn policy(&self) -> Policy {
        Policy {
            live_bytes: self.live_bytes,
            active_max: self.active_max,
            chunk_bytes_max: self.chunk_max,
        }
    }

    /// Where a chunk of `len` bytes would go now.
    pub(super) fn place(&self, len: u64) -> Placement {
        self.layout.place(self.head, len, self.durable_clean, self.policy())
    }

    /// Whether a chunk of `len` bytes can be written at `placement` and still leave room for
    /// a carry chunk after it (two maximal chunks: one for the carry, one for the skip to the
    /// next segment at the end of a visit), as long as anything is left to collect. Without
    /// that reserve, flushes could use up the space ahead until a carry chunk no longer fits,
    /// and then nothing could ever be collected again (the collected space becomes writable
    /// only once its live records are written). Only where the carry may be written on its
    /// own (`Sync`); otherwise carry and new records always go out together.
    fn fits_keeping_reserve(&self, placement: &Placement, len: u64) -> bool {
        let writable = self.layout.writable(placement, len, self.durable_clean);
        if !self.collect_in_flush || self.spans.is_empty() || placement.next.is_some_and(fresh) {
            return writable;
        }
        writable
            && self.layout.ahead_after(
                placement,
                len,
                self.durable_clean,
                self.durable_clean,
                self.policy(),
            ) >= 2 * self.chunk_max
    }

    /// Whether a chunk of `len` bytes can go where the writer is now without overwriting
    /// anything whose live records are not durable elsewhere.
    pub(super) fn fits(&self, len: u64) -> bool {
        self.layout.writable(&self.place(len), len, self.durable_clean)
    }

    /// Writes one chunk at `placement` and syncs it; on success the placement's visit (and
    /// any segment it adds) becomes the ring's. On failure nothing changes in memory (a
    /// later flush writes at the same place).
    fn write_chunk(
        &mut self,
        placement: &Placement,
        payload: &[u8],
        records: u32,
        seq_hi: SeqNo,
        flags: u8,
    ) -> Result<()> {
        let len = chunk_len(payload.len());
        assert!(payload.len() <= self.payload_max, "chunk payload over the maximum");
        assert!(
            self.layout.writable(placement, len, self.durable_clean),
            "chunk would overwrite live data"
        );
        let appending = placement.next == Some(NextSegment::Append);
        let segments = self.layout.count() + usize::from(appending);
        if appending {
            self.prepare_append(segments)?;
        }
        // Everything collected (`cleaned == head`): a chunk that starts a new visit leaves a
        // gap with nothing in it, so the window starts at the chunk itself.
        let tail = if self.spans.is_empty() { placement.pos } else { self.cleaned };
        let header = ChunkHeader {
            log_id: self.log_id,
            pos: placement.pos,
            prev_end: self.head,
            tail,
            seq_hi,
            payload_len: payload.len() as u32,
            record_count: records,
            payload_crc: 0,
            ring_segments: segments as u32,
            flags,
        };
        let mut buf = std::mem::take(&mut self.scratch);
        encode_chunk(&header, payload, &mut buf);
        let offset = self.layout.file_offset(placement.segment, placement.offset);
        let zero_to = self.zero_to(placement, len);
        let written = self
            .failed_writes
            .iter()
            .filter(|&&at| at != offset)
            .try_for_each(|&at| self.file.write_all_at(at, &[0u8; BLOCK_BYTES]))
            .and_then(|()| self.file.write_all_at(offset, &buf))
            .and_then(|()| self.zero_ahead(placement.segment, placement.offset + len, zero_to))
            .and_then(|()| self.file.sync_data());
        self.scratch = buf;
        if let Err(err) = written {
            // Whatever of it reached the page cache may still reach the device.
            if !self.failed_writes.contains(&offset) {
                self.failed_writes.push(offset);
            }
            return Err(err);
        }
        self.failed_writes.clear();
        // The synced mark, before anyone is told the chunk is durable (`log/synced_mark.rs`;
        // not synced, and a failed write only leaves an older mark: the chunk stands).
        let mark = SyncedMark { log_id: self.log_id, end_pos: placement.pos + len };
        if synced_mark::write(self.file.as_ref(), self.synced_marks, mark).is_ok() {
            self.synced_marks += 1;
        }
        self.layout.commit(placement, len);
        self.layout.mark_written(placement.segment, zero_to);
        if appending || matches!(placement.next, Some(NextSegment::Revive(_))) {
            self.gc.segments_grown += 1;
        }
        self.spans.push_back(Span {
            pos: placement.pos,
            len,
            payload_len: payload.len() as u32,
            segment: placement.segment,
        });
        self.head = placement.pos + len;
        // Everything collected so far has its live records in this chunk or an older one.
        self.cleaned = tail;
        self.durable_clean = tail;
        Ok(())
    }

    /// Extends the file by one segment (to `segments` of them; sparse: the new segment
    /// takes space as it is written) and records the count in the header (synced with the
    /// new length), so that a file cut short by whole segments is found even if the chunks
    /// that recorded the count were cut off with them. A version 1 header (a ring of one
    /// fixed segment, which builds before growable rings read as the whole ring) becomes
    /// version 2 on the way, so such a build refuses the grown file instead of misreading it.
    fn prepare_append(&mut self, segments: usize) -> Result<()> {
        let len = self.layout.file_offset(segments, 0);
        if self.file.len()? < len {
            self.file.set_len(len)?;
            // The length is durable before the header says so: a header that reached the
            // device never claims segments the file lacks.
            self.file.sync_data()?;
        }
        if self.version != RING_FORMAT_VERSION || self.header_segments < segments as u64 {
            let header = FileHeader {
                kind: FileKind::Ring,
                version: RING_FORMAT_VERSION,
                log_id: self.log_id,
                file_index: segments as u64,
                base_pos: 0,
                capacity_bytes: self.layout.segment_bytes(),
                seq_floor: self.seq_floor,
            };
            // The encoded header alone, within the first sector: it lands whole or not at
            // all, and leaves the synced marks (sectors 1 and 2 of the block) as they are.
            self.file.write_all_at(0, &header.encode())?;
            self.file.sync_data()?;
            self.version = RING_FORMAT_VERSION;
            self.header_segments = segments as u64;
        }
        Ok(())
    }

    /// Where zero-filling ahead of a chunk of `len` bytes at `placement` ends: the chunk's
    /// end if its segment is allocated that far, else [`ZERO_AHEAD_BYTES`] past it (within
    /// the segment).
    fn zero_to(&self, placement: &Placement, len: u64) -> u64 {
        let end = placement.offset + len;
        // A chunk as large as the zeroed step pays for its own blocks' allocation at its
        // sync as zeros would, once per as many bytes: zeroing ahead of it would only write
        // the ring twice (bulk loads). Small chunks after it zero-fill when they get there.
        if len >= ZERO_AHEAD_BYTES {
            return end;
        }
        let written_to = match placement.next {
            Some(NextSegment::Append | NextSegment::Revive(_)) => 0,
            _ if placement.segment < self.layout.count() => {
                self.layout.slot(placement.segment).written_to
            }
            _ => 0,
        };
        if end <= written_to {
            end
        } else {
            (end + ZERO_AHEAD_BYTES).min(self.layout.segment_bytes())
        }
    }

    /// Writes zeros over `[from, to)` of `segment` (a part never written, or punched).
    fn zero_ahead(&self, segment: usize, from: u64, to: u64) -> Result<()> {
        if to <= from {
            return Ok(());
        }
        let zeros = vec![0u8; usize::try_from(to - from).expect("at most 256 KiB")];
        self.file.write_all_at(self.layout.file_offset(segment, from), &zeros)
    }

    /// Writes the new records `user` (one write buffer) as one chunk together with the
    /// carried live records, collecting more of the ring first if the space ahead is short,
    /// and growing it (into a free or new segment, as the disk budget allows) if collection
    /// cannot make room. `before_collect` must return once every operation logged so far is
    /// applied by the engine (so its liveness answers are exact); it returns false if that
    /// did not happen. `flags`: chunk flags ([`crate::log::chunk::CHUNK_FLAG_CLEAN_CLOSE`]).
    pub(crate) fn flush(
        &mut self,
        user: &[u8],
        user_records: u32,
        seq_hi: SeqNo,
        flags: u8,
        oracle: &dyn crate::log::LiveRecords,
        before_collect: &mut dyn FnMut() -> bool,
    ) -> Result<u64> {
        let mut written = 0;
        let mut collected_here = 0u64;
        // Set when collection cannot make room where the writer is: the visit ends early.
        let mut elsewhere: Option<Placement> = None;
        loop {
            let combined = self.carry.len() + user.len();
            let len = chunk_len(combined);
            if combined <= self.payload_max {
                let placement = elsewhere.unwrap_or_else(|| self.place(len));
                if self.fits_keeping_reserve(&placement, len) {
                    let mut payload = std::mem::take(&mut self.carry);
                    payload.extend_from_slice(user);
                    let records = self.carry_records + user_records;
                    let result = self.write_chunk(&placement, &payload, records, seq_hi, flags);
                    payload.truncate(payload.len() - user.len());
                    self.carry = payload;
                    result?;
                    self.carry.clear();
                    self.carry_records = 0;
                    self.retire_free_segments()?;
                    return Ok(written + len);
                }
            }
            if self.collect_in_flush && !self.carry.is_empty() {
                let carry_len = chunk_len(self.carry.len());
                let placement = elsewhere.unwrap_or_else(|| self.place(carry_len));
                if self.layout.writable(&placement, carry_len, self.durable_clean) {
                    let carry = std::mem::take(&mut self.carry);
                    let result =
                        self.write_chunk(&placement, &carry, self.carry_records, seq_hi, 0);
                    self.carry = carry;
                    result?;
                    written += carry_len;
                    self.carry.clear();
                    self.carry_records = 0;
                    elsewhere = None;
                    continue;
                }
            }
            // Not enough collected space ahead: collect more, at most the ring's worth.
            let window = self.layout.active() * self.layout.segment_bytes();
            let progress = if elsewhere.is_none()
                && self.collect_in_flush
                && collected_here < window
                && before_collect()
            {
                self.collect_one(oracle, &std::collections::HashSet::new())?
            } else {
                None
            };
            match progress {
                Some(bytes) => collected_here += bytes,
                None if elsewhere.is_none() => {
                    // Live records too dense where the writer is: end the visit early, in a
                    // free segment or a new one.
                    match self.layout.place_elsewhere(self.durable_clean, self.policy()) {
                        Some(placement) => elsewhere = Some(placement),
                        None => return Err(self.no_space(user.len())),
                    }
                }
                None => return Err(self.no_space(user.len())),
            }
        }
    }

    /// The error of a flush that does not fit: the ring is at its budget (or at the most
    /// segments a ring may have) and full of live records.
    fn no_space(&self, new_bytes: usize) -> Error {
        let active = self.layout.active();
        let size = active * self.layout.segment_bytes() + FILE_HEADER_BYTES;
        let context = match self.disk_budget_bytes {
            Some(budget) => format!(
                "the log ring {} is at its disk budget of {budget} bytes ({active} segments, \
                 {size} bytes) and full of live records: {new_bytes} new bytes do not fit; \
                 delete data or raise {DISK_BUDGET_OPTION}",
                self.path.display(),
            ),
            None => format!(
                "the log ring {} has {active} segments ({size} bytes), the most it may have, \
                 and they are full of live records: {new_bytes} new bytes do not fit",
                self.path.display(),
            ),
        };
        Error::NoSpace { context }
    }

    /// Shrinks: retires (punches out) segments the writer no longer needs while the live
    /// records are well below the growth threshold or the ring is over its budget. Only free
    /// segments retire (every record in them collected and durable in newer chunks), so a
    /// punch loses nothing whenever it reaches the device, and only while the writer keeps
    /// room for a carried chunk without them.
    fn retire_free_segments(&mut self) -> Result<()> {
        while self.layout.shrink_wanted(self.policy()) {
            let Some(segment) = self.layout.retirable(self.durable_clean) else { break };
            // Never the room the writer needs to write a carried chunk: that is what keeps
            // collection going (see `fits_keeping_reserve`).
            let (dc, policy) = (self.durable_clean, self.policy());
            let left = self.layout.ahead_without(segment, self.head, dc, dc, policy);
            if left < 2 * self.chunk_max {
                break;
            }
            let offset = self.layout.file_offset(segment, 0);
            self.file.punch_hole(offset, self.layout.segment_bytes())?;
            self.layout.retire(segment, self.durable_clean);
            self.gc.segments_retired += 1;
        }
        Ok(())
    }

    /// Log position where the next chunk goes (chunks below it are written).
    pub(crate) fn head(&self) -> u64 {
        self.head
    }

    /// Bytes of the ring currently holding uncollected chunks.
    pub(crate) fn window_bytes(&self) -> u64 {
        self.head - self.cleaned
    }

    /// Active segments and their total bytes.
    pub(crate) fn size(&self) -> (u64, u64) {
        let active = self.layout.active();
        (active, active * self.layout.segment_bytes())
    }

    /// Bytes of the largest chunk.
    pub(crate) fn chunk_bytes_max(&self) -> u64 {
        self.chunk_max
    }

    /// Bytes of one segment.
    pub(crate) fn segment_bytes(&self) -> u64 {
        self.layout.segment_bytes()
    }

    /// The ring file.
    pub(crate) fn file(&self) -> &Arc<dyn StorageFile> {
        &self.file
    }
}

/// Whether a new visit goes to a segment with nothing to overwrite.
fn fresh(next: NextSegment) -> bool {
    matches!(next, NextSegment::Append | NextSegment::Revive(_))
}
