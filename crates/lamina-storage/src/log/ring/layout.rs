//! Where the ring writes: its segments, and the writer's visits to them.
//!
//! The ring file is a 4 KiB header and `N` segments of `S` bytes each. The writer fills
//! one segment at a time from its start (a *visit*); visit `v` owns the log positions
//! `[v * S, (v + 1) * S)`, so position `p` lies at offset `p % S` of its visit's segment and
//! chunks never cross a segment's end. When a chunk does not fit in the rest of the visit,
//! the next visit begins in the next segment, chosen in this order:
//!
//! 1. a free segment (never written, or everything in it collected and durable elsewhere),
//!    the lowest-numbered first;
//! 2. a new segment, when the live records pass [`LIVE_FRACTION_GROW_PERCENT`] of the
//!    active segments and the disk budget allows one more (growth);
//! 3. the least recently visited segment: it holds the oldest records, which read-ahead
//!    collection is clearing just ahead of the writer, as in the contest paper's ring.
//!
//! With one segment this is exactly the fixed ring of the contest paper (each visit is a
//! lap). A visit overwrites the segment's previous visit `w`: writing up to offset `o` is
//! allowed once every chunk of the log below position `w * S + o` is collected and its live
//! records are durable in newer chunks; chunks of visits older than `w` lie below `w * S`
//! and are covered too. Nothing else is needed to recover: the positions of the chunks found
//! tell which visit each segment holds (`ring_recovery.rs`).
//!
//! Shrinking: a segment whose records are all collected and durable elsewhere may be
//! *retired* (its blocks punched out); the writer never enters a retired segment except to
//! grow again.

use crate::log::chunk::{FILE_HEADER_BYTES, RING_SEGMENTS_MAX};
use crate::log::options::{LIVE_FRACTION_GROW_PERCENT, live_bytes_max};

/// One segment of the ring file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentSlot {
    /// The last visit that wrote into it; `None`: never written (or nothing of it in the
    /// log any more).
    pub latest: Option<u64>,
    /// Punched out and left alone until the ring grows again.
    pub retired: bool,
    /// Bytes from the segment's start known to be allocated on the device (written at least
    /// once since it was created or punched): zero-filling ahead of the writer stops there.
    pub written_to: u64,
}

impl SegmentSlot {
    pub(crate) const FRESH: SegmentSlot =
        SegmentSlot { latest: None, retired: false, written_to: 0 };
}

/// What the ring's size is allowed to do, from the engine's live data and the disk budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Bytes of live records ([`crate::log::LiveRecords::live_bytes`]).
    pub live_bytes: u64,
    /// Most active segments the disk budget allows (at least 1).
    pub active_max: u64,
    /// Bytes of the largest chunk (collection's room to work in, at a budget).
    pub chunk_bytes_max: u64,
}

/// How the next visit gets its segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NextSegment {
    /// An existing active segment (free, or the least recently visited).
    Reuse(usize),
    /// A retired segment, active again (growth).
    Revive(usize),
    /// A new segment at the file's end (growth).
    Append,
}

/// Where a chunk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Log position of the chunk.
    pub pos: u64,
    /// Segment it lands in.
    pub segment: usize,
    /// Offset in the segment (`pos % segment_bytes`).
    pub offset: u64,
    /// The visit whose chunks it may overwrite (`None`: a fresh or punched region).
    pub overwrites: Option<u64>,
    /// `Some` if the chunk begins a new visit.
    pub next: Option<NextSegment>,
}

/// The segments and the current visit.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    segment_bytes: u64,
    segments: Vec<SegmentSlot>,
    visit: u64,
    current: usize,
    overwrites: Option<u64>,
}

impl Layout {
    /// A new ring of `count` fresh segments; the first visit is visit 0 in segment 0.
    pub(crate) fn new(segment_bytes: u64, count: usize) -> Layout {
        assert!(count >= 1 && count as u64 <= u64::from(RING_SEGMENTS_MAX), "segment count");
        let mut segments = vec![SegmentSlot::FRESH; count];
        segments[0].latest = Some(0);
        Layout { segment_bytes, segments, visit: 0, current: 0, overwrites: None }
    }

    /// A recovered ring: `segments` as found, the writer in `visit` of segment `current`,
    /// over the chunks of visit `overwrites` (if any remain ahead of it).
    pub(crate) fn recovered(
        segment_bytes: u64,
        segments: Vec<SegmentSlot>,
        visit: u64,
        current: usize,
        overwrites: Option<u64>,
    ) -> Layout {
        assert!(current < segments.len(), "the current segment exists");
        assert_eq!(segments[current].latest, Some(visit), "the current segment holds the visit");
        assert!(overwrites.is_none_or(|w| w < visit), "a visit overwrites an older one");
        Layout { segment_bytes, segments, visit, current, overwrites }
    }

    pub(crate) fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    /// Segments in the file (active and retired).
    pub(crate) fn count(&self) -> usize {
        self.segments.len()
    }

    /// Segments the writer may use (not retired).
    pub(crate) fn active(&self) -> u64 {
        self.segments.iter().filter(|s| !s.retired).count() as u64
    }

    pub(crate) fn slot(&self, segment: usize) -> &SegmentSlot {
        &self.segments[segment]
    }

    /// File offset of `offset` in `segment`.
    pub(crate) fn file_offset(&self, segment: usize, offset: u64) -> u64 {
        FILE_HEADER_BYTES + segment as u64 * self.segment_bytes + offset
    }

    /// Whether the live records call for one more segment.
    fn grow_wanted(&self, policy: Policy) -> bool {
        let active = self.active();
        active < policy.active_max
            && policy.live_bytes.saturating_mul(100)
                > active * self.segment_bytes * LIVE_FRACTION_GROW_PERCENT
    }

    /// Whether the ring should give up a segment: the live records would stay under the
    /// growth threshold with two segments fewer (one segment of hysteresis, so it does not
    /// grow right back), or the ring is over its budget and one segment fewer still holds
    /// them as the budget's cap allows (never below what the live records need: a lowered
    /// budget waits for deletes).
    pub(crate) fn shrink_wanted(&self, policy: Policy) -> bool {
        let active = self.active();
        if active <= 1 {
            return false;
        }
        let smaller = (active - 1) * self.segment_bytes;
        let over_budget = active > policy.active_max
            && policy.live_bytes <= live_bytes_max(smaller, policy.chunk_bytes_max);
        over_budget
            || (active > 2
                && policy.live_bytes.saturating_mul(100)
                    < (active - 2) * self.segment_bytes * LIVE_FRACTION_GROW_PERCENT)
    }

    /// Whether `segment` holds nothing the log still needs: not the current one, active,
    /// and every chunk of its latest visit collected with its live records durable below
    /// `durable_clean`.
    pub(crate) fn is_free(&self, segment: usize, durable_clean: u64) -> bool {
        let slot = &self.segments[segment];
        segment != self.current
            && !slot.retired
            && slot.latest.is_none_or(|v| (v + 1) * self.segment_bytes <= durable_clean)
    }

    /// The segment the next visit goes to (rules 1 to 3 of the module documentation).
    pub(crate) fn choose_next(&self, durable_clean: u64, policy: Policy) -> NextSegment {
        if let Some(free) = (0..self.segments.len()).find(|&s| self.is_free(s, durable_clean)) {
            return NextSegment::Reuse(free);
        }
        if self.grow_wanted(policy)
            && let Some(next) = self.grown()
        {
            return next;
        }
        NextSegment::Reuse(self.least_recent())
    }

    /// A segment for growth: a retired one, else a new one if the file may have one more.
    pub(crate) fn grown(&self) -> Option<NextSegment> {
        if let Some(retired) = self.segments.iter().position(|s| s.retired) {
            return Some(NextSegment::Revive(retired));
        }
        (self.segments.len() < RING_SEGMENTS_MAX as usize).then_some(NextSegment::Append)
    }

    /// The active segment visited least recently (the current one if it is the only one).
    fn least_recent(&self) -> usize {
        let others = (0..self.segments.len())
            .filter(|&s| s != self.current && !self.segments[s].retired)
            .min_by_key(|&s| self.segments[s].latest);
        others.unwrap_or(self.current)
    }

    /// What a next visit into `next` overwrites.
    fn overwrites_of(&self, next: NextSegment) -> Option<u64> {
        match next {
            NextSegment::Reuse(segment) => self.segments[segment].latest,
            NextSegment::Revive(_) | NextSegment::Append => None,
        }
    }

    fn next_placement(&self, next: NextSegment) -> Placement {
        let segment = match next {
            NextSegment::Reuse(s) | NextSegment::Revive(s) => s,
            NextSegment::Append => self.segments.len(),
        };
        Placement {
            pos: (self.visit + 1) * self.segment_bytes,
            segment,
            offset: 0,
            overwrites: self.overwrites_of(next),
            next: Some(next),
        }
    }

    /// Where a chunk of `len` bytes goes when the log ends at `head`: in the current visit
    /// if it fits before the segment's end, else at the start of the next visit.
    pub(crate) fn place(
        &self,
        head: u64,
        len: u64,
        durable_clean: u64,
        policy: Policy,
    ) -> Placement {
        let offset = self.offset_of(head);
        if offset + len <= self.segment_bytes {
            return Placement {
                pos: head,
                segment: self.current,
                offset,
                overwrites: self.overwrites,
                next: None,
            };
        }
        self.next_placement(self.choose_next(durable_clean, policy))
    }

    /// A placement that ends the current visit early, in a free segment or by growing (if
    /// the policy's budget allows); `None` if neither is possible. Used when collection
    /// cannot free space ahead of the writer (live records too dense where it writes).
    pub(crate) fn place_elsewhere(&self, durable_clean: u64, policy: Policy) -> Option<Placement> {
        let free = (0..self.segments.len()).find(|&s| self.is_free(s, durable_clean));
        let next = match free {
            Some(segment) => NextSegment::Reuse(segment),
            None if self.active() < policy.active_max => self.grown()?,
            None => return None,
        };
        Some(self.next_placement(next))
    }

    /// Offset of `head` (a position of the current visit) in the current segment.
    fn offset_of(&self, head: u64) -> u64 {
        let start = self.visit * self.segment_bytes;
        assert!(
            (start..=start + self.segment_bytes).contains(&head),
            "the log's end {head} lies in the current visit {}",
            self.visit
        );
        head - start
    }

    /// Whether a chunk of `len` bytes may go to `placement` without overwriting a chunk
    /// whose live records are not durable elsewhere (below `durable_clean`).
    pub(crate) fn writable(&self, placement: &Placement, len: u64, durable_clean: u64) -> bool {
        placement.offset + len <= self.segment_bytes
            && placement
                .overwrites
                .is_none_or(|w| w * self.segment_bytes + placement.offset + len <= durable_clean)
    }

    /// Bytes of a visit over `overwrites` that lie below `bound` (all of it if fresh).
    fn limit(&self, overwrites: Option<u64>, bound: u64) -> u64 {
        overwrites.map_or(self.segment_bytes, |w| {
            bound.saturating_sub(w * self.segment_bytes).min(self.segment_bytes)
        })
    }

    /// Bytes the writer could write from `head` before reaching a chunk not collected below
    /// `bound`: the rest of the current visit, and the next visit's share if the current
    /// one is clear to its end (the unused end of a visit counts, as the end of a lap did
    /// in the fixed ring: callers keep a reserve of two chunks for it).
    pub(crate) fn ahead(&self, head: u64, bound: u64, durable_clean: u64, policy: Policy) -> u64 {
        let offset = self.offset_of(head);
        let current = self.limit(self.overwrites, bound);
        if current < self.segment_bytes {
            return current.saturating_sub(offset);
        }
        let next = self.overwrites_of(self.choose_next(durable_clean, policy));
        (self.segment_bytes - offset) + self.limit(next, bound)
    }

    /// [`Layout::ahead`] as it would be with the free segment `segment` retired (what
    /// shrinking must keep: room for the writer without the segment it gives up).
    pub(crate) fn ahead_without(
        &self,
        segment: usize,
        head: u64,
        bound: u64,
        durable_clean: u64,
        policy: Policy,
    ) -> u64 {
        let mut without = self.clone();
        if without.is_free(segment, durable_clean) {
            without.retire(segment, durable_clean);
        }
        without.ahead(head, bound, durable_clean, policy)
    }

    /// Bytes writable below `bound` after a chunk of `len` bytes at `placement`: what
    /// [`Layout::ahead`] would say once it is written (within its own visit if it begins a
    /// new one).
    pub(crate) fn ahead_after(
        &self,
        placement: &Placement,
        len: u64,
        bound: u64,
        durable_clean: u64,
        policy: Policy,
    ) -> u64 {
        match placement.next {
            None => self.ahead(placement.pos + len, bound, durable_clean, policy),
            Some(_) => self.limit(placement.overwrites, bound).saturating_sub(len),
        }
    }

    /// Records that a chunk of `len` bytes was written at `placement`.
    pub(crate) fn commit(&mut self, placement: &Placement, len: u64) {
        if let Some(next) = placement.next {
            match next {
                NextSegment::Append => {
                    assert_eq!(placement.segment, self.segments.len(), "appended at the end");
                    self.segments.push(SegmentSlot::FRESH);
                }
                NextSegment::Revive(segment) => {
                    assert!(self.segments[segment].retired, "only a retired segment revives");
                    self.segments[segment] = SegmentSlot::FRESH;
                }
                NextSegment::Reuse(segment) => {
                    assert!(!self.segments[segment].retired, "a retired segment is not reused");
                }
            }
            self.visit += 1;
            self.current = placement.segment;
            self.overwrites = placement.overwrites;
            self.segments[placement.segment].latest = Some(self.visit);
        }
        assert_eq!(placement.segment, self.current, "chunks go to the current visit");
        let slot = &mut self.segments[placement.segment];
        slot.written_to = slot.written_to.max(placement.offset + len);
    }

    /// Records that the bytes of `segment` up to `to` are allocated (zero-filled ahead).
    pub(crate) fn mark_written(&mut self, segment: usize, to: u64) {
        let slot = &mut self.segments[segment];
        slot.written_to = slot.written_to.max(to.min(self.segment_bytes));
    }

    /// Retires `segment` (the caller punched it out). Must be free.
    pub(crate) fn retire(&mut self, segment: usize, durable_clean: u64) {
        assert!(self.is_free(segment, durable_clean), "only a free segment retires");
        self.segments[segment] = SegmentSlot { latest: None, retired: true, written_to: 0 };
    }

    /// A free active segment other than the current one, the highest-numbered first (the
    /// writer prefers low numbers, so retiring high ones keeps the used part compact).
    pub(crate) fn retirable(&self, durable_clean: u64) -> Option<usize> {
        (0..self.segments.len()).rev().find(|&s| self.is_free(s, durable_clean))
    }

    /// The active segment visited least recently other than the current one, with the end
    /// position of its latest visit: what read-ahead collection clears so it can retire.
    pub(crate) fn oldest_other(&self) -> Option<(usize, u64)> {
        let s = (0..self.segments.len())
            .filter(|&s| s != self.current && !self.segments[s].retired)
            .min_by_key(|&s| self.segments[s].latest)?;
        let end = self.segments[s].latest.map_or(0, |v| (v + 1) * self.segment_bytes);
        Some((s, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1 << 20;

    fn roomy() -> Policy {
        Policy { live_bytes: 0, active_max: 100, chunk_bytes_max: 0 }
    }

    /// Writes chunks of `len` bytes until the layout starts a new visit; returns the new
    /// position (everything collected: `durable_clean` = the log's end).
    fn fill_visit(layout: &mut Layout, head: &mut u64, len: u64, policy: Policy) -> Placement {
        loop {
            let p = layout.place(*head, len, *head, policy);
            assert!(layout.writable(&p, len, *head));
            layout.commit(&p, len);
            *head = p.pos + len;
            if p.next.is_some() {
                return p;
            }
        }
    }

    #[test]
    fn one_segment_is_the_fixed_ring() {
        let mut layout = Layout::new(S, 1);
        let policy = Policy { live_bytes: 0, active_max: 1, chunk_bytes_max: 0 };
        let mut head = 0;
        let p = fill_visit(&mut layout, &mut head, 300 << 10, policy);
        // Three chunks fit a 1 MiB segment; the fourth starts lap 1 at its start.
        assert_eq!((p.pos, p.segment, p.offset, p.overwrites), (S, 0, 0, Some(0)));
        // Writing the first 300 KiB of lap 1 needs lap 0 collected up to there.
        assert!(!layout.writable(&p, 300 << 10, (300 << 10) - 4096));
        assert!(layout.writable(&p, 300 << 10, 300 << 10));
        // The room ahead is what the fixed ring's `cleaned + capacity - head` said.
        for cleaned in [S + (300 << 10), S + (500 << 10)] {
            assert_eq!(layout.ahead(head, cleaned, cleaned, policy), cleaned + S - head);
        }
    }

    #[test]
    fn free_segments_first_then_growth_then_least_recent() {
        let mut layout = Layout::new(S, 2);
        let mut head = 0;
        let p = fill_visit(&mut layout, &mut head, 400 << 10, roomy());
        assert_eq!((p.segment, p.next), (1, Some(NextSegment::Reuse(1))), "segment 1 is free");
        // Both used; live data over half of them: a new segment.
        let dense = Policy { live_bytes: S + 1, active_max: 100, chunk_bytes_max: 0 };
        assert_eq!(layout.choose_next(0, dense), NextSegment::Append);
        // Not dense: the least recently visited one, over its previous visit.
        let p = layout.place(2 * S, 400 << 10, 0, roomy());
        assert_eq!((p.segment, p.overwrites, p.pos), (0, Some(0), 2 * S));
        // The budget caps growth.
        let capped = Policy { live_bytes: 10 * S, active_max: 2, chunk_bytes_max: 0 };
        assert_eq!(layout.choose_next(0, capped), NextSegment::Reuse(0));
        assert_eq!(layout.place_elsewhere(0, capped), None);
        assert_eq!(layout.place_elsewhere(0, dense).unwrap().next, Some(NextSegment::Append));
        // Collected and durable up to the end of visit 0: segment 0 is free.
        assert!(layout.is_free(0, S));
        assert_eq!(layout.place_elsewhere(S, capped).unwrap().segment, 0);
    }

    #[test]
    fn growth_appends_and_retired_segments_revive_first() {
        let mut layout = Layout::new(S, 1);
        let dense = Policy { live_bytes: S, active_max: 3, chunk_bytes_max: 0 };
        let mut head = 0;
        let p = fill_visit(&mut layout, &mut head, 512 << 10, dense);
        assert_eq!((p.segment, p.overwrites, p.next), (1, None, Some(NextSegment::Append)));
        assert_eq!(layout.count(), 2);
        // Segment 0 holds visit 0; once it is durable elsewhere it can retire.
        assert_eq!(layout.retirable(0), None);
        assert_eq!(layout.retirable(S), Some(0));
        layout.retire(0, S);
        assert_eq!(layout.active(), 1);
        assert_eq!(layout.grown(), Some(NextSegment::Revive(0)));
        let p = fill_visit(&mut layout, &mut head, 512 << 10, dense);
        assert_eq!((p.segment, p.overwrites), (0, None), "a revived segment is fresh");
        assert_eq!(layout.slot(0).written_to, 512 << 10);
    }

    #[test]
    fn shrink_has_hysteresis() {
        let layout = Layout::new(S, 4);
        let policy = |live_bytes| Policy { live_bytes, active_max: 100, chunk_bytes_max: 0 };
        // Four segments: grows past 2 MiB live, shrinks below 1 MiB.
        assert!(!layout.shrink_wanted(policy(S)));
        assert!(layout.shrink_wanted(policy(S - 1)));
        assert!(!layout.grow_wanted(policy(2 * S)));
        assert!(layout.grow_wanted(policy(2 * S + 1)));
        let over = |live_bytes| Policy { live_bytes, active_max: 3, chunk_bytes_max: 0 };
        assert!(layout.shrink_wanted(over(2 * S)), "over the budget, and three segments hold it");
        assert!(!layout.shrink_wanted(over(3 * S)), "never below what the live records need");
        assert!(!Layout::new(S, 1).shrink_wanted(Policy {
            live_bytes: 0,
            active_max: 1,
            chunk_bytes_max: 0
        }));
    }

    #[test]
    fn ahead_counts_the_next_visit_only_past_a_clear_current_one() {
        let mut layout = Layout::new(S, 2);
        let mut head = 0;
        fill_visit(&mut layout, &mut head, 400 << 10, roomy());
        fill_visit(&mut layout, &mut head, 400 << 10, roomy());
        // Visit 2 in segment 0 over visit 0; next comes segment 1 over visit 1.
        assert_eq!(head, 2 * S + (400 << 10));
        // Collected into visit 0 below the writer's offset: blocked within the current visit.
        assert_eq!(layout.ahead(head, 300 << 10, 300 << 10, roomy()), 0);
        assert_eq!(layout.ahead(head, 600 << 10, 600 << 10, roomy()), 200 << 10);
        // Collected into visit 1: the rest of this visit and a part of the next.
        let bound = S + (100 << 10);
        assert_eq!(layout.ahead(head, bound, bound, roomy()), S - (400 << 10) + (100 << 10));
    }
}
