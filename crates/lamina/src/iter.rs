//! A scan as an iterator: pages of [`OrderedIndex::scan`] resumed after the last key.

use lamina_core::{Entry, KeyRange, OrderedIndex, Result};

/// Entries per page. Bounds the memory one iterator holds.
const PAGE_ENTRIES: usize = 256;

/// Iterator over a key range in ascending order. It satisfies the scan guarantee of the API
/// (every pair was current at some instant of the scan; a key present and unmodified
/// throughout is returned) because each page satisfies it and resumes after the last key.
#[derive(Debug)]
pub struct ScanIter<'a, I: OrderedIndex + ?Sized> {
    index: &'a I,
    range: Option<KeyRange>,
    page: std::vec::IntoIter<Entry>,
}

impl<'a, I: OrderedIndex + ?Sized> ScanIter<'a, I> {
    pub(crate) fn new(index: &'a I, range: KeyRange) -> Self {
        ScanIter { index, range: Some(range), page: Vec::new().into_iter() }
    }
}

impl<I: OrderedIndex + ?Sized> Iterator for ScanIter<'_, I> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(entry) = self.page.next() {
            return Some(Ok(entry));
        }
        let range = self.range.take()?;
        match self.index.scan(&range, PAGE_ENTRIES) {
            Err(e) => Some(Err(e)),
            Ok(page) => {
                if page.len() == PAGE_ENTRIES {
                    self.range = Some(range.resume_after(&page[PAGE_ENTRIES - 1].0));
                }
                self.page = page.into_iter();
                self.page.next().map(Ok)
            }
        }
    }
}
