//! The packing policy of the write-coalescing pool (section 4.2): what goes into the next page
//! unit when the pool must free memory.
//!
//! 1. The victim is the "highest-packed buffer fragment": the buffer with the most entries in
//!    memory (ties: the smallest id, so runs are deterministic). Its oldest tail entries go
//!    first, as many as fit one page. If not even its oldest entry fits one page, that entry
//!    alone becomes a unit of several pages (the only case of a multi-page unit).
//! 2. The rest of the page is filled with the whole tails of the next buffers in the same
//!    order that fit (a buffer's tail moved whole adds one fragment, never splits it).
//! 3. Then with the longest prefix that fits of the tails that did not fit whole, in order,
//!    until no fragment of one smallest entry fits.
//!
//! So every page but a multi-page unit's last is full up to less than one entry and a fragment
//! header (the paper's "each buffer page being completely packed", which makes the write cost
//! b_w a constant), and a buffer's entries reach flash in as few fragments as the memory
//! budget allows. Step 3 splits a tail across two pages at most once per unit.

use lamina_core::codec::Encode;

use super::entry::{BufferEntry, ENTRY_BYTES_MIN};
use super::fragment::{BufferId, FRAGMENT_ENTRIES_MAX, FRAGMENT_HEADER_BYTES};
use super::page::PAGE_FRAGMENTS_MAX;

/// A buffer whose tail may go into the unit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate<'a> {
    /// The buffer.
    pub buffer: BufferId,
    /// Its in-memory tail, oldest first (non-empty).
    pub tail: &'a [BufferEntry],
    /// Encoded bytes of the tail.
    pub tail_bytes: u64,
}

/// The entries of the longest prefix of `tail` whose fragment fits `room_bytes`, and the
/// fragment's bytes.
fn prefix_fitting(tail: &[BufferEntry], room_bytes: usize) -> (usize, usize) {
    let mut bytes = FRAGMENT_HEADER_BYTES;
    let mut count = 0;
    for entry in tail.iter().take(FRAGMENT_ENTRIES_MAX) {
        let next = bytes + entry.encoded_len();
        if next > room_bytes {
            break;
        }
        bytes = next;
        count += 1;
    }
    (count, bytes)
}

/// Plans the next unit from `ranked` (highest-packed first, non-empty): the buffers and how
/// many of their oldest tail entries go into it, in slot order. `room_bytes` is a page's room
/// for fragments. Never empty; at most one fragment per buffer.
pub(crate) fn plan_unit(ranked: &[Candidate<'_>], room_bytes: usize) -> Vec<(BufferId, usize)> {
    let victim = ranked.first().expect("a plan needs a candidate");
    assert!(!victim.tail.is_empty());
    let (count, bytes) = prefix_fitting(victim.tail, room_bytes);
    if count == 0 {
        return vec![(victim.buffer, 1)];
    }
    let mut plan = vec![(victim.buffer, count)];
    let mut room = room_bytes - bytes;
    let full = |room: usize, plan: &Vec<(BufferId, usize)>| {
        room < FRAGMENT_HEADER_BYTES + ENTRY_BYTES_MIN || plan.len() == PAGE_FRAGMENTS_MAX
    };
    let mut taken = vec![false; ranked.len()];
    taken[0] = true;
    for (i, candidate) in ranked.iter().enumerate().skip(1) {
        if full(room, &plan) {
            return plan;
        }
        let whole = FRAGMENT_HEADER_BYTES as u64 + candidate.tail_bytes;
        if whole <= room as u64 && candidate.tail.len() <= FRAGMENT_ENTRIES_MAX {
            plan.push((candidate.buffer, candidate.tail.len()));
            room -= whole as usize;
            taken[i] = true;
        }
    }
    for (i, candidate) in ranked.iter().enumerate().skip(1) {
        if full(room, &plan) {
            break;
        }
        if taken[i] {
            continue;
        }
        let (count, bytes) = prefix_fitting(candidate.tail, room);
        if count > 0 {
            plan.push((candidate.buffer, count));
            room -= bytes;
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: usize, value_bytes: usize) -> Vec<BufferEntry> {
        (0..n)
            .map(|i| BufferEntry::put(&[i as u8 + 1], &vec![0; value_bytes], 1).unwrap())
            .collect()
    }

    fn candidate(buffer: u64, tail: &[BufferEntry]) -> Candidate<'_> {
        let tail_bytes = tail.iter().map(|e| e.encoded_len() as u64).sum();
        Candidate { buffer: BufferId(buffer), tail, tail_bytes }
    }

    #[test]
    fn whole_tails_first_then_a_prefix_fills_the_page() {
        // Entries of 100 bytes: 1 key len + 1 key + 1 tag + 96 value + 1 seq.
        let a = entries(5, 96);
        let b = entries(4, 96);
        let c = entries(3, 96);
        let d = entries(1, 96);
        assert_eq!(a[0].encoded_len(), 100);
        // Room 1000: a (524) leaves 476; b (424) fits whole, leaves 52; c does not, d does not
        // (124), nothing else fits whole; prefix: c's first entry needs 124: no.
        let ranked = [candidate(1, &a), candidate(2, &b), candidate(3, &c), candidate(4, &d)];
        assert_eq!(plan_unit(&ranked, 1000), vec![(BufferId(1), 5), (BufferId(2), 4)]);
        // Room 1200: after a and b, 252 left: c (324) does not fit whole, d (124) does, leaving
        // 128: then one entry of c (124).
        assert_eq!(
            plan_unit(&ranked, 1200),
            vec![(BufferId(1), 5), (BufferId(2), 4), (BufferId(4), 1), (BufferId(3), 1)]
        );
        // Room 300: two of a's entries.
        assert_eq!(plan_unit(&ranked, 300), vec![(BufferId(1), 2)]);
    }

    #[test]
    fn an_entry_larger_than_a_page_gets_a_unit_of_its_own() {
        let big = entries(2, 600);
        let small = entries(3, 1);
        let ranked = [candidate(9, &big), candidate(2, &small)];
        assert_eq!(plan_unit(&ranked, 512 - 24), vec![(BufferId(9), 1)]);
    }
}
