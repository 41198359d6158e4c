//! The default reverse scan of [`OrderedIndex::scan_rev`], for engines without a native one:
//! built from forward scans only.
//!
//! A forward scan can only start at a lower bound, so the greatest `limit` keys of a range
//! are found by guessing a lower bound close below the range's end, scanning forward from it
//! to the end, and lowering the guess until the sub-range holds `limit` keys (or is the whole
//! range). The guesses are prefixes of the end key, shortened by 1, 2, 4, 8... bytes: with
//! keys spread over their bytes, each guess holds a few hundred times more keys than the
//! previous one, so a call reads a bounded multiple of `limit` keys. With an unbounded end,
//! the greatest key's first bytes are found first by binary search on each byte (at most
//! 8 one-entry scans per byte, [`PROBE_DEPTH_BYTES`] bytes).
//!
//! Cost: at worst (keys clustered just below a short prefix) a call reads the whole range,
//! so paging a long range backwards through the default costs up to O(n^2 / page) entries.
//! Engines where a reverse walk is cheap implement `scan_rev` natively.

use std::collections::VecDeque;
use std::ops::Bound;

use crate::limits::check_scan_limit;
use crate::{Entry, KeyRange, OrderedIndex, Result};

/// Bytes of the greatest key located by binary search when the range has no upper end.
pub const PROBE_DEPTH_BYTES: usize = 4;

/// Entries per forward page while reading a sub-range.
const FORWARD_PAGE_ENTRIES: usize = 4096;

/// Up to `limit` pairs of `range`, greatest key first, using only `index.scan`.
pub fn scan_rev_by_forward_scans<I: OrderedIndex + ?Sized>(
    index: &I,
    range: &KeyRange,
    limit: usize,
) -> Result<Vec<Entry>> {
    check_scan_limit(limit)?;
    if limit == 0 || range.is_empty() {
        // Still asks the engine, so a closed handle answers `Closed`.
        return index.scan(range, 0);
    }
    let end_key: Vec<u8> = match &range.end {
        Bound::Included(k) | Bound::Excluded(k) => k.clone(),
        Bound::Unbounded => greatest_prefix(index, range)?,
    };
    let mut prefix_len = end_key.len();
    let mut step = usize::from(matches!(range.end, Bound::Included(_) | Bound::Excluded(_)));
    loop {
        prefix_len = prefix_len.saturating_sub(step);
        step = (step * 2).max(1);
        let guess = &end_key[..prefix_len];
        let above_start = match &range.start {
            Bound::Included(s) | Bound::Excluded(s) => guess > s.as_slice(),
            Bound::Unbounded => !guess.is_empty(),
        };
        let sub = if above_start {
            KeyRange { start: Bound::Included(guess.to_vec()), end: range.end.clone() }
        } else {
            range.clone()
        };
        let tail = last_entries(index, &sub, limit)?;
        if tail.len() == limit || !above_start {
            return Ok(tail.into_iter().rev().collect());
        }
    }
}

/// The last `limit` pairs of `range` in ascending order, read with forward pages.
fn last_entries<I: OrderedIndex + ?Sized>(
    index: &I,
    range: &KeyRange,
    limit: usize,
) -> Result<VecDeque<Entry>> {
    let mut tail = VecDeque::with_capacity(limit.min(FORWARD_PAGE_ENTRIES));
    let mut page_range = range.clone();
    loop {
        let page = index.scan(&page_range, FORWARD_PAGE_ENTRIES)?;
        let full = page.len() == FORWARD_PAGE_ENTRIES;
        if let Some((last, _)) = page.last() {
            page_range = page_range.resume_after(last);
        }
        for entry in page {
            if tail.len() == limit {
                tail.pop_front();
            }
            tail.push_back(entry);
        }
        if !full {
            return Ok(tail);
        }
    }
}

/// The first [`PROBE_DEPTH_BYTES`] bytes (fewer if it is shorter) of the greatest key in
/// `range`, or empty if the range holds nothing: by binary search on each byte, asking
/// whether some key of the range is at or above the candidate.
fn greatest_prefix<I: OrderedIndex + ?Sized>(index: &I, range: &KeyRange) -> Result<Vec<u8>> {
    let exists_at_or_above = |candidate: &[u8]| -> Result<bool> {
        let start = match &range.start {
            Bound::Included(s) | Bound::Excluded(s) if s.as_slice() >= candidate => {
                range.start.clone()
            }
            _ => Bound::Included(candidate.to_vec()),
        };
        Ok(!index.scan(&KeyRange { start, end: range.end.clone() }, 1)?.is_empty())
    };
    let mut prefix = Vec::with_capacity(PROBE_DEPTH_BYTES);
    // Invariant: every key of the range at or above `prefix` starts with `prefix`.
    for _ in 0..PROBE_DEPTH_BYTES {
        prefix.push(0);
        if !exists_at_or_above(&prefix)? {
            prefix.pop();
            break;
        }
        let (mut lo, mut hi) = (0u8, 0xffu8); // a key at or above prefix+lo exists
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            *prefix.last_mut().unwrap() = mid;
            if exists_at_or_above(&prefix)? {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        *prefix.last_mut().unwrap() = lo;
    }
    Ok(prefix)
}
