//! A scan as an iterator: pages of [`OrderedIndex::scan`] resumed after the last key, and
//! from the other end pages of [`OrderedIndex::scan_rev`] resumed before the last key.

use std::ops::Bound;

use lamina_core::{Entry, KeyRange, OrderedIndex, Result};

/// Entries per page. Bounds the memory one iterator holds (two pages when iterated from
/// both ends).
const PAGE_ENTRIES: usize = 256;

/// Iterator over a key range: ascending with [`Iterator::next`], descending with
/// [`DoubleEndedIterator::next_back`] (so `.rev()` walks the range from its greatest key),
/// both ends meeting without repeating a key.
///
/// It satisfies the scan guarantee of the API (every pair was current at some instant of
/// the scan; a key present and unmodified throughout is returned) because each page
/// satisfies it and the next page resumes past the last key returned. It is not a snapshot.
/// The reverse direction is native on engines that override
/// [`OrderedIndex::scan_rev`] (`mem`); on the others each backward page is built from
/// forward scans (see `lamina_core::reverse`) and costs more.
///
/// After an error the iterator ends (in the direction that failed).
#[derive(Debug)]
pub struct ScanIter<'a, I: OrderedIndex + ?Sized> {
    index: &'a I,
    /// What remains to fetch in ascending order (`None`: the front is exhausted).
    front_range: Option<KeyRange>,
    front_page: std::vec::IntoIter<Entry>,
    /// What remains to fetch in descending order (`None`: the back is exhausted).
    back_range: Option<KeyRange>,
    back_page: std::vec::IntoIter<Entry>,
    /// The greatest key returned by `next` and the least returned by `next_back`: the two
    /// ends stop where they meet.
    front_last: Option<Vec<u8>>,
    back_last: Option<Vec<u8>>,
}

impl<'a, I: OrderedIndex + ?Sized> ScanIter<'a, I> {
    pub(crate) fn new(index: &'a I, range: KeyRange) -> Self {
        ScanIter {
            index,
            front_range: Some(range.clone()),
            front_page: Vec::new().into_iter(),
            back_range: Some(range),
            back_page: Vec::new().into_iter(),
            front_last: None,
            back_last: None,
        }
    }

    /// Whether the iterator has met itself: `key` was already returned by the other end or
    /// lies beyond it.
    fn crossed(key: &[u8], other_last: Option<&Vec<u8>>, ascending: bool) -> bool {
        match other_last {
            None => false,
            Some(other) if ascending => key >= other.as_slice(),
            Some(other) => key <= other.as_slice(),
        }
    }
}

impl<I: OrderedIndex + ?Sized> Iterator for ScanIter<'_, I> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.front_page.next() {
                if Self::crossed(&entry.0, self.back_last.as_ref(), true) {
                    self.front_range = None;
                    self.front_page = Vec::new().into_iter();
                    return None;
                }
                self.front_last = Some(entry.0.clone());
                return Some(Ok(entry));
            }
            let mut range = self.front_range.take()?;
            if let Some(back) = &self.back_last {
                // Never fetch what the back end has returned already.
                range.end = Bound::Excluded(back.clone());
            }
            match self.index.scan(&range, PAGE_ENTRIES) {
                Err(e) => return Some(Err(e)),
                Ok(page) => {
                    if page.len() == PAGE_ENTRIES {
                        self.front_range = Some(range.resume_after(&page[PAGE_ENTRIES - 1].0));
                    }
                    if page.is_empty() {
                        return None;
                    }
                    self.front_page = page.into_iter();
                }
            }
        }
    }
}

impl<I: OrderedIndex + ?Sized> DoubleEndedIterator for ScanIter<'_, I> {
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(entry) = self.back_page.next() {
                if Self::crossed(&entry.0, self.front_last.as_ref(), false) {
                    self.back_range = None;
                    self.back_page = Vec::new().into_iter();
                    return None;
                }
                self.back_last = Some(entry.0.clone());
                return Some(Ok(entry));
            }
            let mut range = self.back_range.take()?;
            if let Some(front) = &self.front_last {
                range.start = Bound::Excluded(front.clone());
            }
            match self.index.scan_rev(&range, PAGE_ENTRIES) {
                Err(e) => return Some(Err(e)),
                Ok(page) => {
                    if page.len() == PAGE_ENTRIES {
                        self.back_range = Some(range.resume_before(&page[PAGE_ENTRIES - 1].0));
                    }
                    if page.is_empty() {
                        return None;
                    }
                    self.back_page = page.into_iter();
                }
            }
        }
    }
}

impl<I: OrderedIndex + ?Sized> std::iter::FusedIterator for ScanIter<'_, I> {}
