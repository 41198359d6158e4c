//! The inputs of a flush or split: a slice of the frozen memtable, or the live parts of
//! d-trees within a key range, one d-tree after the other. Each is read in key order, a few
//! entries at a time (the deamortized job reads only as far as its page budget lets it
//! write).

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use lamina_core::Result;
use lamina_storage::arena::ENTRY_PREFETCH_DISTANCE;

use crate::dtree::{DTree, DTreeCursor};
use crate::entry::{Slot, entry_bytes};
use crate::memtable::{Entry, Memtable};
use crate::stree::SNode;

/// Entries the memtable source copies per visit of the map.
const MEMTABLE_BATCH: usize = 256;

/// One entry.
pub type Item = (Vec<u8>, Slot);

/// A d-tree's live part.
#[derive(Debug, Clone)]
pub struct DTreePart {
    /// The d-tree.
    pub dtree: Arc<DTree>,
    /// Its lazily removed prefix ends here (excluded from the part).
    pub flushed_through: Option<Vec<u8>>,
}

impl DTreePart {
    /// The live part of `node`'s d-tree (`None`: it has no d-tree).
    pub fn of(node: &SNode) -> Option<DTreePart> {
        let dtree = node.dtree.clone()?;
        Some(DTreePart { dtree, flushed_through: node.flushed_through.clone() })
    }
}

#[derive(Debug)]
enum Kind {
    Memtable {
        table: Arc<Memtable>,
        next: Bound<Vec<u8>>,
        buffer: VecDeque<Entry>,
        done: bool,
    },
    DTrees {
        parts: VecDeque<DTreePart>,
        low: Option<Vec<u8>>,
        /// The current part's cursor, and the key it must skip if it yields it first.
        cursor: Option<(DTreeCursor, Option<Vec<u8>>)>,
    },
}

/// A stream of entries in key order, below an optional bound and within an optional byte
/// budget (a flush moves only the first sigma bytes of a node's live part, section 4.1).
#[derive(Debug)]
pub struct Source {
    kind: Kind,
    /// Entries at or above this key are not part of the stream.
    high: Option<Vec<u8>>,
    /// Bytes the stream may still yield (`None`: no limit).
    bytes_left: Option<u64>,
    /// The next entry (valid when `head_valid`); its buffers are reused from entry to
    /// entry, so a merge copies each entry once, into the new d-tree's pages.
    head: Item,
    head_valid: bool,
    /// A value buffer kept while the head is a delete.
    spare_value: Vec<u8>,
    ended: bool,
    /// Bytes yielded (`entry_bytes` summed).
    pub yielded_bytes: u64,
    /// Entries yielded.
    pub yielded_entries: u64,
    /// The last key yielded (kept only by a stream with a byte budget: a flush of a
    /// non-root s-node remembers it for lazy removal).
    pub last_key: Option<Vec<u8>>,
}

impl Source {
    fn with(kind: Kind, high: Option<&[u8]>, bytes_left: Option<u64>) -> Source {
        Source {
            kind,
            high: high.map(<[u8]>::to_vec),
            bytes_left,
            head: (Vec::new(), None),
            head_valid: false,
            spare_value: Vec::new(),
            ended: false,
            yielded_bytes: 0,
            yielded_entries: 0,
            last_key: None,
        }
    }

    /// The entries of `table` in `[low, high)`.
    pub fn memtable(table: Arc<Memtable>, low: Option<&[u8]>, high: Option<&[u8]>) -> Source {
        let next = low.map_or(Bound::Unbounded, |l| Bound::Included(l.to_vec()));
        Source::with(
            Kind::Memtable { table, next, buffer: VecDeque::new(), done: false },
            high,
            None,
        )
    }

    /// The live parts of `parts`, one after the other (their ranges are disjoint and in
    /// order), from `low` (included) to `high` (excluded), yielding at most `bytes_max`
    /// (the entry that reaches the limit is the last one yielded).
    pub fn dtrees(
        parts: Vec<DTreePart>,
        low: Option<&[u8]>,
        high: Option<&[u8]>,
        bytes_max: Option<u64>,
    ) -> Source {
        let kind = Kind::DTrees { parts: parts.into(), low: low.map(<[u8]>::to_vec), cursor: None };
        Source::with(kind, high, bytes_max)
    }

    /// The next entry, without taking it.
    pub fn peek(&mut self) -> Result<Option<&Item>> {
        if !self.head_valid && !self.ended {
            self.head_valid = self.fill()?;
            self.ended = !self.head_valid;
        }
        Ok(self.head_valid.then_some(&self.head))
    }

    /// The entry [`Source::peek`] returned last (it must have returned one).
    pub fn head(&self) -> &Item {
        assert!(self.head_valid, "no entry peeked");
        &self.head
    }

    /// Passes the entry [`Source::peek`] returned (it must have returned one).
    pub fn advance(&mut self) {
        assert!(self.head_valid, "no entry peeked");
        self.head_valid = false;
        let (key, slot) = &self.head;
        let bytes = entry_bytes(key.len(), slot.as_ref().map(Vec::len));
        self.yielded_bytes += bytes;
        self.yielded_entries += 1;
        if let Some(left) = &mut self.bytes_left {
            *left = left.saturating_sub(bytes);
            self.last_key.get_or_insert_with(Vec::new).clone_from(key);
        }
    }

    /// Takes the next entry (a copy).
    pub fn next_item(&mut self) -> Result<Option<Item>> {
        let Some(item) = self.peek()?.cloned() else { return Ok(None) };
        self.advance();
        Ok(Some(item))
    }

    /// Makes the next entry the head; false at the end.
    fn fill(&mut self) -> Result<bool> {
        if self.bytes_left == Some(0) {
            return Ok(false);
        }
        match &mut self.kind {
            Kind::Memtable { table, next, buffer, done } => {
                if buffer.is_empty() && !*done {
                    let high = self.high.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                    let start = match next {
                        Bound::Included(k) => Bound::Included(k.as_slice()),
                        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
                        Bound::Unbounded => Bound::Unbounded,
                    };
                    let before = buffer.len();
                    table.range_into((start, high), MEMTABLE_BATCH, buffer);
                    *done = buffer.len() - before < MEMTABLE_BATCH;
                    if let Some(last) = buffer.back() {
                        *next = Bound::Excluded(last.key().to_vec());
                    }
                    buffer.iter().take(ENTRY_PREFETCH_DISTANCE).for_each(Entry::prefetch);
                }
                let Some(entry) = buffer.pop_front() else { return Ok(false) };
                // Each entry is a cache miss in key order (they lie in the arena in arrival
                // order): the one ENTRY_PREFETCH_DISTANCE places ahead is requested now.
                if let Some(ahead) = buffer.get(ENTRY_PREFETCH_DISTANCE - 1) {
                    ahead.prefetch();
                }
                // Into the head's buffers: no allocation per entry once they are grown.
                self.head.0.clear();
                self.head.0.extend_from_slice(entry.key());
                let mut value = take_value_buffer(&mut self.head, &mut self.spare_value);
                value.clear();
                value.extend_from_slice(entry.value().unwrap_or_default());
                let is_put = entry.value().is_some();
                keep_value_buffer(&mut self.head, &mut self.spare_value, value, is_put);
            }
            Kind::DTrees { parts, low, cursor } => loop {
                if cursor.is_none() {
                    let Some(part) = parts.pop_front() else { return Ok(false) };
                    *cursor = Some(part_cursor(&part, low.as_deref())?);
                }
                let (c, skip) = cursor.as_mut().expect("set above");
                let mut value = take_value_buffer(&mut self.head, &mut self.spare_value);
                match c.next_into(&mut self.head.0, &mut value)? {
                    Some(is_put) => {
                        keep_value_buffer(&mut self.head, &mut self.spare_value, value, is_put);
                        if skip.take().is_some_and(|s| s == self.head.0) {
                            continue;
                        }
                        break;
                    }
                    None => {
                        self.spare_value = value;
                        *cursor = None;
                    }
                }
            },
        }
        Ok(self.high.as_deref().is_none_or(|h| self.head.0.as_slice() < h))
    }
}

/// The head's value buffer, or the spare one, to be refilled: the buffers move between the
/// head and the spare, so a stream allocates only while they grow.
fn take_value_buffer(head: &mut Item, spare: &mut Vec<u8>) -> Vec<u8> {
    head.1.take().unwrap_or_else(|| std::mem::take(spare))
}

/// Gives a refilled buffer back: the head's value for a put, the spare for a delete.
fn keep_value_buffer(head: &mut Item, spare: &mut Vec<u8>, value: Vec<u8>, is_put: bool) {
    if is_put {
        head.1 = Some(value);
    } else {
        *spare = value;
    }
}

/// A cursor over `part`'s live part at or after `low`, and the key it must skip (the end
/// of the lazily removed prefix, which the cursor starts at).
fn part_cursor(part: &DTreePart, low: Option<&[u8]>) -> Result<(DTreeCursor, Option<Vec<u8>>)> {
    match (part.flushed_through.as_deref(), low) {
        (Some(f), Some(l)) if l > f => Ok((part.dtree.cursor(Some(l))?, None)),
        (Some(f), _) => Ok((part.dtree.cursor(Some(f))?, Some(f.to_vec()))),
        (None, low) => Ok((part.dtree.cursor(low)?, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A memtable source yields every entry of its range once, in key order, across its
    /// batches of `MEMTABLE_BATCH` and with its prefetch running ahead inside each batch.
    #[test]
    fn a_memtable_source_yields_its_range_in_order_across_batches() {
        let n = 2 * MEMTABLE_BATCH as u32 + ENTRY_PREFETCH_DISTANCE as u32 + 3;
        let table = Arc::new(Memtable::new(1 << 30));
        for i in (0..n).rev() {
            let value = (i % 5 != 0).then(|| vec![i as u8; (i as usize * 37) % 300]);
            table.apply(&i.to_be_bytes(), value.as_deref());
        }
        let (low, high) = (3u32, n - 2);
        let mut source =
            Source::memtable(table, Some(&low.to_be_bytes()), Some(&high.to_be_bytes()));
        let mut got = Vec::new();
        while let Some(item) = source.next_item().unwrap() {
            got.push(item);
        }
        let want: Vec<Item> = (low..high)
            .map(|i| {
                let value = (i % 5 != 0).then(|| vec![i as u8; (i as usize * 37) % 300]);
                (i.to_be_bytes().to_vec(), value)
            })
            .collect();
        assert_eq!(got.len(), want.len());
        assert_eq!(got, want);
    }
}
