//! Sorting a buffer for an emptying in a single pass (section 2.3): the buffer is X (entries
//! appended before the parent's last emptying, and any appended after it) and Y (the batch
//! that emptying distributed, already sorted). X is read and sorted in memory; Y is streamed
//! from flash oldest fragment first and merged with X, so the output is in (key, seq) order
//! and every fragment is read exactly once.
//!
//! Memory: X, plus the Y entries of the fragments that also hold X entries (at most the two
//! at the edges of Y) and of the tail. The rest of Y is read one fragment at a time while the
//! merge runs, found by the chain the pool remembers (the back pointers on flash lead newest
//! first, the wrong direction for an ascending stream; each fragment read is checked against
//! the back pointer the chain implies).
//!
//! Invariants: `x` is sorted; the Y entries yielded so far ascend (checked: a Y that does not
//! is reported as corruption); `y_sources` are in position order.

use std::collections::VecDeque;
use std::iter::Peekable;
use std::vec;

use lamina_core::{Error, Result};

use super::entry::BufferEntry;
use super::fragment::{BufferId, Fragment, FragmentAddr};
use super::state::{BufferState, ChainLink};
use super::store::BufferStore;

/// Where the next Y entries come from.
#[derive(Debug)]
enum YSource {
    /// Already in memory (the Y part of a fragment read for its X part, or of the tail).
    Loaded { entries: Vec<BufferEntry>, addr: Option<FragmentAddr> },
    /// A fragment wholly in Y, not read yet; `prev` is the back pointer it must carry.
    OnFlash { link: ChainLink, prev: Option<FragmentAddr> },
}

/// A buffer's entries in (key, seq) order ([`super::BufferPool::sorted_entries`]).
#[derive(Debug)]
pub struct SortedEntries<'a> {
    store: &'a BufferStore,
    buffer: BufferId,
    x: Peekable<vec::IntoIter<BufferEntry>>,
    y_sources: VecDeque<YSource>,
    y_current: vec::IntoIter<BufferEntry>,
    y_next: Option<BufferEntry>,
    y_last: Option<BufferEntry>,
    fragments_read: u64,
    failed: bool,
}

/// Reads the fragment of `link`, checking its back pointer and entry count.
fn read_link(
    store: &BufferStore,
    buffer: BufferId,
    link: &ChainLink,
    prev: Option<FragmentAddr>,
) -> Result<Fragment> {
    let (fragment, _pages) = store.read_fragment(link.addr, buffer)?;
    if fragment.prev != prev || fragment.entries.len() as u64 != link.entries {
        let offset = link.addr.page * u64::from(store.page_bytes());
        let reason = format!("fragment {:?} is not the one the buffer's chain names", link.addr);
        return Err(Error::corruption(store.path(), offset, reason));
    }
    Ok(fragment)
}

impl<'a> SortedEntries<'a> {
    /// Reads X (phase 1) and plans the Y stream.
    pub(crate) fn new(
        store: &'a BufferStore,
        buffer: BufferId,
        state: &BufferState,
    ) -> Result<Self> {
        let y = state.y.clone();
        let mut x = Vec::new();
        let mut y_sources = VecDeque::new();
        let mut fragments_read = 0;
        let mut position = 0u64;
        let mut prev = None;
        let mut split = |entries: Vec<BufferEntry>, first: u64, addr, sources: &mut VecDeque<_>| {
            let mut y_part = Vec::new();
            for (i, entry) in entries.into_iter().enumerate() {
                if y.contains(&(first + i as u64)) { y_part.push(entry) } else { x.push(entry) }
            }
            if !y_part.is_empty() {
                sources.push_back(YSource::Loaded { entries: y_part, addr });
            }
        };
        for link in &state.chain {
            let end = position + link.entries;
            if y.start <= position && end <= y.end {
                y_sources.push_back(YSource::OnFlash { link: *link, prev });
            } else {
                let fragment = read_link(store, buffer, link, prev)?;
                fragments_read += 1;
                split(fragment.entries, position, Some(link.addr), &mut y_sources);
            }
            prev = Some(link.addr);
            position = end;
        }
        split(state.tail.clone(), position, None, &mut y_sources);
        x.sort_by(BufferEntry::cmp_key_seq);
        Ok(SortedEntries {
            store,
            buffer,
            x: x.into_iter().peekable(),
            y_sources,
            y_current: Vec::new().into_iter(),
            y_next: None,
            y_last: None,
            fragments_read,
            failed: false,
        })
    }

    /// Fragments read so far (each at most once).
    pub fn fragments_read(&self) -> u64 {
        self.fragments_read
    }

    /// The next entry in (key, seq) order.
    pub fn next_entry(&mut self) -> Result<Option<BufferEntry>> {
        if self.y_next.is_none() {
            self.y_next = self.next_y()?;
        }
        let take_x = match (self.x.peek(), &self.y_next) {
            (None, None) => return Ok(None),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(x), Some(y)) => x.cmp_key_seq(y).is_le(),
        };
        Ok(if take_x { self.x.next() } else { self.y_next.take() })
    }

    fn next_y(&mut self) -> Result<Option<BufferEntry>> {
        loop {
            if let Some(entry) = self.y_current.next() {
                return Ok(Some(entry));
            }
            let Some(source) = self.y_sources.pop_front() else {
                return Ok(None);
            };
            let (entries, addr) = match source {
                YSource::Loaded { entries, addr } => (entries, addr),
                YSource::OnFlash { link, prev } => {
                    let fragment = read_link(self.store, self.buffer, &link, prev)?;
                    self.fragments_read += 1;
                    (fragment.entries, Some(link.addr))
                }
            };
            let sorted = entries.is_sorted_by(|a, b| a.cmp_key_seq(b).is_le());
            let follows = match (&self.y_last, entries.first()) {
                (Some(last), Some(first)) => last.cmp_key_seq(first).is_le(),
                _ => true,
            };
            if !sorted || !follows {
                let offset = addr.map_or(0, |a| a.page * u64::from(self.store.page_bytes()));
                let reason = format!("the Y batch of {:?} is not sorted", self.buffer);
                return Err(Error::corruption(self.store.path(), offset, reason));
            }
            self.y_last = entries.last().cloned();
            self.y_current = entries.into_iter();
        }
    }
}

impl Iterator for SortedEntries<'_> {
    type Item = Result<BufferEntry>;

    /// The next entry; after an error, `None`.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.next_entry().transpose();
        self.failed = matches!(item, Some(Err(_)));
        item
    }
}
