//! `Db.range(...)`: a lazy iterator of `(key, value)` pairs, ascending or descending.
//!
//! Ascending: pages of `Db::scan`, each resumed just after the last key returned, the page
//! growing from [`PAGE_ENTRIES_FIRST`] to [`PAGE_ENTRIES_MAX`] (a loop that stops after a few
//! rows reads little; a long one makes few calls).
//!
//! Descending: the `lamina` crate has no reverse scan yet, so the binding reads the range
//! forward twice. A first pass records the first key of every [`SEGMENT_ENTRIES`]-entry page;
//! those keys cut `[start, end)` into segments, which are then read forward one at a time, last
//! segment first, and returned back to front. Cost: twice the reads of an ascending scan, and
//! memory for one key per segment plus one segment's entries. The segments partition the range,
//! so each key is read in exactly one of them and the scan guarantee of the API holds as for an
//! ascending scan: a key present and unmodified throughout the iteration is returned once, in
//! order; every pair returned was current at some instant of the iteration.

use std::collections::VecDeque;
use std::ops::Bound as Edge;

use lamina::{Entry, KeyRange};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::db::PyDb;

/// Entries of the first page of an ascending scan.
const PAGE_ENTRIES_FIRST: usize = 64;
/// Entries of a page of an ascending scan at most (the page doubles up to it).
const PAGE_ENTRIES_MAX: usize = 1024;
/// Entries per segment of a descending scan (when first counted).
const SEGMENT_ENTRIES: usize = 512;

/// The state of a scan.
#[derive(Debug)]
enum Scan {
    Forward {
        /// What is left to read; `None` once the last page is read.
        rest: Option<KeyRange>,
        page: VecDeque<Entry>,
        page_entries: usize,
    },
    Reverse {
        range: KeyRange,
        /// Lower ends of the segments not read yet, ascending; `None` until the first pass.
        segment_starts: Option<Vec<Edge<Vec<u8>>>>,
        /// The upper end of the next segment to read (the last unread one).
        segment_end: Edge<Vec<u8>>,
        /// The segment being returned, consumed from the back.
        page: Vec<Entry>,
    },
}

/// A lazy iterator over a key range: `(key, value)` tuples of bytes.
#[derive(Debug)]
#[pyclass(module = "lamina", name = "RangeIterator")]
pub struct RangeIter {
    db: Py<PyDb>,
    scan: Scan,
}

impl RangeIter {
    pub fn new(db: Py<PyDb>, start: Option<Vec<u8>>, end: Option<Vec<u8>>, reverse: bool) -> Self {
        let range = KeyRange {
            start: start.map_or(Edge::Unbounded, Edge::Included),
            end: end.map_or(Edge::Unbounded, Edge::Excluded),
        };
        let scan = if reverse {
            Scan::Reverse {
                segment_end: range.end.clone(),
                range,
                segment_starts: None,
                page: Vec::new(),
            }
        } else {
            let rest = (!range.is_empty()).then_some(range);
            Scan::Forward { rest, page: VecDeque::new(), page_entries: PAGE_ENTRIES_FIRST }
        };
        RangeIter { db, scan }
    }

    /// The next entry, reading from the engine (GIL released) when the page is used up.
    fn next_entry(&mut self, py: Python<'_>) -> PyResult<Option<Entry>> {
        let db = self.db.get();
        match &mut self.scan {
            Scan::Forward { rest, page, page_entries } => loop {
                if let Some(entry) = page.pop_front() {
                    return Ok(Some(entry));
                }
                let Some(range) = rest.take() else {
                    return Ok(None);
                };
                let limit = *page_entries;
                let entries = db.with_db(py, |db| db.scan(&range, limit))?;
                assert!(entries.len() <= limit, "scan returned more than its limit");
                if entries.len() == limit {
                    *rest = Some(range.resume_after(&entries[limit - 1].0));
                    *page_entries = (limit * 2).min(PAGE_ENTRIES_MAX);
                }
                *page = entries.into();
            },
            Scan::Reverse { range, segment_starts, segment_end, page } => loop {
                if let Some(entry) = page.pop() {
                    return Ok(Some(entry));
                }
                if segment_starts.is_none() {
                    let range = &*range;
                    *segment_starts = Some(db.with_db(py, |db| segment_starts_of(db, range))?);
                }
                let starts = segment_starts.as_mut().expect("set above");
                let Some(start) = starts.pop() else {
                    return Ok(None);
                };
                let segment = KeyRange { start, end: segment_end.clone() };
                *segment_end = match &segment.start {
                    Edge::Included(key) => Edge::Excluded(key.clone()),
                    // Only the first segment starts at the range's own start.
                    Edge::Excluded(_) | Edge::Unbounded => Edge::Unbounded,
                };
                let entries = if segment.is_empty() {
                    Vec::new()
                } else {
                    db.with_db(py, |db| db.iter(segment).collect::<lamina::Result<Vec<_>>>())?
                };
                debug_assert!(entries.windows(2).all(|pair| pair[0].0 < pair[1].0));
                *page = entries;
            },
        }
    }
}

/// The lower ends of the segments of a descending scan of `range`, ascending: the range's
/// own start, then the first key of every later [`SEGMENT_ENTRIES`]-entry page.
fn segment_starts_of(db: &lamina::Db, range: &KeyRange) -> lamina::Result<Vec<Edge<Vec<u8>>>> {
    let mut starts = vec![range.start.clone()];
    if range.is_empty() {
        return Ok(starts);
    }
    let mut rest = range.clone();
    loop {
        let page = db.scan(&rest, SEGMENT_ENTRIES)?;
        let Some((first, _)) = page.first() else {
            return Ok(starts);
        };
        if rest != *range {
            starts.push(Edge::Included(first.clone()));
        }
        if page.len() < SEGMENT_ENTRIES {
            return Ok(starts);
        }
        rest = rest.resume_after(&page[SEGMENT_ENTRIES - 1].0);
    }
}

#[pymethods]
impl RangeIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        Ok(self
            .next_entry(py)?
            .map(|(key, value)| (PyBytes::new(py, &key), PyBytes::new(py, &value))))
    }
}
