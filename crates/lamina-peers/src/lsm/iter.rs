//! A LevelDB or RocksDB iterator positioned for a scan, destroyed on drop.

use std::ops::Bound;
use std::ptr;

use lamina_core::{Entry, KeyRange, Result};

use super::{LsmLibrary, LsmStore};

/// An iterator over `store`'s database; the borrow keeps the database open while it lives.
pub(super) struct Iter<'db, L: LsmLibrary> {
    store: &'db LsmStore<L>,
    raw: *mut L::Iterator,
}

impl<'db, L: LsmLibrary> Iter<'db, L> {
    /// An iterator positioned at the first key of `range` (or at the first key).
    pub(super) fn seek(store: &'db LsmStore<L>, range: &KeyRange) -> Self {
        // SAFETY: the database and its read options are live while `store` is borrowed; the
        // iterator is destroyed by `Drop`.
        let raw = unsafe { L::create_iterator(store.db(), store.read_options()) };
        let iter = Iter { store, raw };
        match &range.start {
            // SAFETY: the iterator is live; the key is valid for its length.
            Bound::Included(k) | Bound::Excluded(k) => unsafe {
                L::iter_seek(iter.raw, k.as_ptr().cast(), k.len());
            },
            // SAFETY: the iterator is live.
            Bound::Unbounded => unsafe { L::iter_seek_to_first(iter.raw) },
        }
        iter
    }

    pub(super) fn valid(&self) -> bool {
        // SAFETY: `raw` is a live iterator.
        unsafe { L::iter_valid(self.raw) != 0 }
    }

    /// The current pair, copied. The iterator must be [`valid`](Self::valid).
    pub(super) fn entry(&self) -> Entry {
        let (mut klen, mut vlen) = (0usize, 0usize);
        // SAFETY: the iterator is valid (checked by the caller); the library returns pointers
        // to `klen`/`vlen` bytes that stay valid until the iterator moves, and we copy them now.
        unsafe {
            let k = L::iter_key(self.raw, &raw mut klen);
            let v = L::iter_value(self.raw, &raw mut vlen);
            (
                std::slice::from_raw_parts(k.cast::<u8>(), klen).to_vec(),
                std::slice::from_raw_parts(v.cast::<u8>(), vlen).to_vec(),
            )
        }
    }

    /// Moves to the next pair. The iterator must be [`valid`](Self::valid).
    pub(super) fn next(&mut self) {
        debug_assert!(self.valid());
        // SAFETY: the iterator is live and valid.
        unsafe { L::iter_next(self.raw) };
    }

    /// `Err` when the iteration stopped on an error rather than at the end.
    pub(super) fn status(&self) -> Result<()> {
        let mut err = ptr::null_mut();
        // SAFETY: `raw` is a live iterator.
        unsafe { L::iter_get_error(self.raw, &raw mut err) };
        self.store.check("scan", err)
    }
}

impl<L: LsmLibrary> Drop for Iter<'_, L> {
    fn drop(&mut self) {
        // SAFETY: destroyed once; the database outlives the iterator (the `'db` borrow).
        unsafe { L::iter_destroy(self.raw) };
    }
}
